import RingLoopTestSupport
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

    // Apple, performSelector:onThread:withObject:waitUntilDone:modes:, on `array`: "If you
    // specify nil or an empty array for this parameter, this method returns without
    // performing the specified selector."
    @Test("No modes, waiting, another thread: returns without performing (it used to wait for ever)")
    func noModesWaitingFromAnotherThread() {
        let worker = LoopThread(name: "performer")
        defer { worker.stopAndJoin() }
        let ran = Atomic<Bool>(false)
        let returned = Atomic<Bool>(false)
        let caller = PosixThread.start(name: "caller") {
            worker.perform(inModes: [], waitUntilDone: true) { ran.store(true, ordering: .releasing) }
            returned.store(true, ordering: .releasing)
        }
        #expect(waitUntil { returned.load(ordering: .acquiring) }, "perform(inModes: [], waitUntilDone: true) did not return")
        if returned.load(ordering: .acquiring) { caller.join() }
        // A perform in the default mode afterwards runs; the one with no modes never did.
        worker.perform(waitUntilDone: true) {}
        #expect(ran.load(ordering: .acquiring) == false)
    }

    // The same sentence holds on the loop's own thread: the empty array wins over `wait`'s
    // "If the current thread and target thread are the same, and you specify YES for this
    // parameter, the selector is performed immediately on the current thread." (Issue 47:
    // this ran the block before.)
    @Test("No modes, waiting, on the loop's own thread: returns without performing")
    func noModesWaitingOnOwnThread() {
        onFreshLoopThread {
            let ran = ThreadLock(false)
            RingRunLoop.current.perform(inModes: [], waitUntilDone: true) { ran.withLock { $0 = true } }
            // A perform with a mode, on the same thread, still runs at once.
            let control = ThreadLock(false)
            RingRunLoop.current.perform(inModes: ["elsewhere"], waitUntilDone: true) { control.withLock { $0 = true } }
            #expect(ran.withLock { $0 } == false)
            #expect(control.withLock { $0 })
        }
    }

    // The same sentence for `waitUntilDone: false`, and performSelector:withObject:afterDelay:
    // inModes: "If this parameter is empty, the selector is not performed."
    @Test("No modes without waiting, and after a delay: never performed, the target not kept")
    func noModesNotWaiting() {
        onFreshLoopThread {
            final class Target: Sendable {}
            let loop = RingRunLoop.current
            let ran = ThreadLock<[String]>([])
            weak var released: Target?
            do {
                let target = Target()
                released = target
                loop.perform(inModes: [], waitUntilDone: false) { ran.withLock { $0.append("now") } }
                loop.perform(inModes: []) { ran.withLock { $0.append("block") } }
                let delayed = loop.perform(after: .milliseconds(1), inModes: [], target: target) {
                    ran.withLock { $0.append("target") }
                }
                #expect(!delayed.isValid)
                #expect(!loop.perform(after: .milliseconds(1), inModes: []) { ran.withLock { $0.append("later") } }.isValid)
            }
            // Something to run for: a timer in the default mode, past the delayed ones.
            let end = LoopTimer(after: .milliseconds(20)) { _ in }
            loop.add(end, to: .default)
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(ran.withLock { $0 }.isEmpty)
            #expect(released == nil, "the loop keeps the target of a perform that never runs")
        }
    }

    @Test("Waiting on a loop whose thread exits before the block runs returns, the block not run")
    func waitingOnAnExitingThread() {
        let worker = LoopThread(name: "exiting")
        let ran = Atomic<Bool>(false)
        let returned = Atomic<Bool>(false)
        // The thread's loop only runs the default mode: this perform waits in the loop's
        // queue until the thread exits and drops it.
        let caller = PosixThread.start(name: "caller") {
            worker.perform(inModes: ["never run"], waitUntilDone: true) { ran.store(true, ordering: .releasing) }
            returned.store(true, ordering: .releasing)
        }
        worker.perform(waitUntilDone: true) {}
        #expect(returned.load(ordering: .acquiring) == false)
        worker.stopAndJoin()
        #expect(waitUntil { returned.load(ordering: .acquiring) }, "the waiting caller did not return")
        if returned.load(ordering: .acquiring) { caller.join() }
        #expect(ran.load(ordering: .acquiring) == false)
        // A perform to a loop whose thread has exited returns at once too.
        worker.perform(waitUntilDone: true) { ran.store(true, ordering: .releasing) }
        #expect(ran.load(ordering: .acquiring) == false)
    }
}
