import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

@Suite("ThreadLock: several locks taken together")
struct ThreadLockTests {
    /// `withLocks` hands the body the states in the order of the list it was given, and
    /// what the body changes is what the locks hold after.
    @Test("withLocks gives the states in the order listed and stores what the body changed")
    func statesInTheOrderListed() {
        let locks = (0..<5).map { ThreadLock<Int>($0 * 10) }
        let seen = ThreadLock.withLocks(locks.reversed()) { states -> [Int] in
            defer { for index in states.indices { states[index] += index } }
            return states
        }
        #expect(seen == [40, 30, 20, 10, 0])
        #expect(locks.map { $0.withLock { $0 } } == [4, 13, 22, 31, 40])
    }

    /// Two threads that each take the same two locks, listed in opposite orders, over and
    /// over: taken in one order (the locks' addresses) whatever the list's, neither ever
    /// waits on the other for ever, and no update is lost.
    @Test("Two threads taking the same locks listed in opposite orders never wait on each other; no update is lost")
    func oppositeOrdersDoNotDeadlock() {
        let first = ThreadLock<Int>(0)
        let second = ThreadLock<Int>(0)
        let finished = Atomic<Int>(0)
        let rounds = 20_000
        let threads = [[first, second], [second, first]].map { locks in
            PosixThread.start(name: "locks") {
                for _ in 0..<rounds {
                    ThreadLock.withLocks(locks) { states in
                        for index in states.indices { states[index] += 1 }
                    }
                }
                finished.add(1, ordering: .releasing)
            }
        }
        #expect(waitUntil { finished.load(ordering: .acquiring) == 2 }, "the threads still wait on each other")
        guard finished.load(ordering: .acquiring) == 2 else { return }
        for thread in threads { thread.join() }
        #expect(first.withLock { $0 } == 2 * rounds)
        #expect(second.withLock { $0 } == 2 * rounds)
    }
}
