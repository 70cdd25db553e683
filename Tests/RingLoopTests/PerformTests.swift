import Synchronization
import Testing

@testable import RingLoop

@Suite("perform on a thread, after a delay, cancelled by target")
struct PerformTests {
    @Test("waitUntilDone from another thread returns once the block has run on the loop's thread")
    func waitUntilDoneFromAnotherThread() {
        let worker = LoopThread(name: "performer")
        let ranOnLoop = ThreadLock<Bool?>(nil)
        let loop = worker.loop
        worker.perform(waitUntilDone: true) { ranOnLoop.withLock { $0 = loop.isOnLoopThread } }
        #expect(ranOnLoop.withLock { $0 } == true)
        worker.stopAndJoin()
    }

    @Test("waitUntilDone on the loop's own thread runs the block at once, whatever the mode")
    func waitUntilDoneOnOwnThread() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let ran = ThreadLock(false)
            loop.perform(inModes: ["elsewhere"], waitUntilDone: true) { ran.withLock { $0 = true } }
            #expect(ran.withLock { $0 })
        }
    }

    @Test("Without waiting, a perform from another thread wakes the sleeping loop")
    func performWakes() {
        let worker = LoopThread(name: "performer")
        #expect(waitUntil { worker.loop.isWaiting })
        let ran = Atomic<Bool>(false)
        worker.loop.perform(waitUntilDone: false) { ran.store(true, ordering: .releasing) }
        #expect(waitUntil { ran.load(ordering: .acquiring) })
        worker.stopAndJoin()
    }

    @Test("cancelPerforms(target:) cancels that target's delayed performs, runs the others, and lets the target go")
    func cancelByTarget() {
        onFreshLoopThread {
            final class Target: Sendable {}
            let loop = RingRunLoop.current
            let trace = ThreadLock<[String]>([])
            weak var released: Target?
            do {
                let first = Target()
                released = first
                loop.perform(after: .milliseconds(10), target: first) { trace.withLock { $0.append("first a") } }
                loop.perform(after: .milliseconds(10), target: first) { trace.withLock { $0.append("first b") } }
                let second = Target()
                loop.perform(after: .milliseconds(10), target: second) { trace.withLock { $0.append("second") } }
                #expect(loop.cancelPerforms(target: first) == 2)
                #expect(loop.cancelPerforms(target: first) == 0)
            }
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(trace.withLock { $0 } == ["second"])
            #expect(released == nil, "the loop still holds the cancelled target")
            #expect(loop.targetedPerforms.withLock { $0.isEmpty })
        }
    }
}
