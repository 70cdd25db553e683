import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// Item callbacks are `@Sendable`; state they keep lives in a ``LoopBound``, which checks
/// its thread, and the loop's own loop-thread members check theirs.
@Suite("Thread rules")
struct LoopThreadRuleTests {
    @Test("State made on one thread and kept in a LoopBound counts a timer's fires on another loop's thread")
    func loopBoundAcrossThreads() {
        let worker = LoopThread(name: "ticker")
        let ticks = LoopBound(0, loop: worker.loop)
        let done = Atomic<Int>(0)
        let timer = LoopTimer(after: .milliseconds(2), repeating: .milliseconds(2)) { timer in
            ticks.value += 1
            if ticks.value == 3 {
                timer.invalidate()
                done.store(ticks.value, ordering: .releasing)
            }
        }
        worker.loop.add(timer, to: .common)
        #expect(waitUntil { done.load(ordering: .acquiring) == 3 })
        // The box is read on its loop's thread; the count stays at 3 once invalidated.
        let seen = Atomic<Int>(-1)
        worker.perform { seen.store(ticks.value, ordering: .releasing) }
        #expect(waitUntil { seen.load(ordering: .acquiring) >= 0 })
        #expect(seen.load(ordering: .acquiring) == 3)
        worker.stopAndJoin()
    }

    @Test("A LoopBound made on its loop's thread from a value that lives there holds it")
    func loopBoundOnLoopThread() {
        onFreshLoopThread {
            final class Counter { var count = 0 }  // not Sendable: it stays on this thread
            let loop = RingRunLoop.current
            let counter = LoopBound(onLoopThread: Counter(), loop: loop)
            let source = LoopSource { counter.value.count += 1 }
            loop.add(source, to: .default)
            source.signal()
            #expect(loop.run(mode: .default, for: .seconds(10), returnAfterSourceHandled: true) == .handledSource)
            #expect(counter.value.count == 1)
        }
    }

    /// A LoopBound's value read on another thread would race the loop's callbacks, so it
    /// stops the process with a message instead.
    @Test("Reading a LoopBound's value off its loop's thread stops the process")
    func loopBoundOffThread() async {
        await #expect(processExitsWith: .failure) {
            let worker = LoopThread(name: "owner")
            let value = LoopBound(0, loop: worker.loop)
            _ = value.value  // on the test's thread, not the worker's: traps
            exit(0)
        }
    }

    @Test("A LoopBound read after its thread ended stops the process with a message that names the fix")
    func loopBoundAfterItsThread() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "owner")
            let value = LoopBound(0, loop: worker.loop)
            worker.stopAndJoin()
            _ = value.value
            exit(0)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("LoopBound.value was used off its loop's thread (or after that thread ended)"), "\(message)")
        #expect(message.contains("Task(executorPreference: loop)") && message.contains("Mutex or an Atomic"), "\(message)")
    }

    @Test("Reading a loop-thread member of a loop from another thread stops the process")
    func loopMemberOffThread() async {
        await #expect(processExitsWith: .failure) {
            let worker = LoopThread(name: "owner")
            _ = worker.loop.passCount
            exit(0)
        }
    }

    @Test("Setting a loop's spin window from another thread stops the process")
    func loopSetterOffThread() async {
        await #expect(processExitsWith: .failure) {
            let worker = LoopThread(name: "owner")
            worker.loop.spinBeforeSleeping = .microseconds(50)
            exit(0)
        }
    }
}
