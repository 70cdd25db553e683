import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

@Suite("Timers")
struct TimerTests {
    @Test("perform(after:) runs once; invalidating its timer cancels it")
    func performAfter() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let ran = ThreadLock<[String]>([])
            loop.perform(after: .milliseconds(5)) { ran.withLock { $0.append("kept") } }
            let cancelled = loop.perform(after: .milliseconds(2)) { ran.withLock { $0.append("cancelled") } }
            cancelled.invalidate()
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(ran.withLock { $0 } == ["kept"])
        }
    }

    @Test("Timers whose tolerance windows overlap are served by one wake-up")
    func toleranceCoalesces() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            try? loop.prepare()
            let start = MonotonicInstant.now
            let passes = ThreadLock<[UInt64]>([])
            let firedAt = ThreadLock<[MonotonicInstant]>([])
            // a: window [20 ms, 60 ms]; b: exactly at 40 ms. One wake at 40 ms serves both.
            let a = LoopTimer(fireDate: start + .milliseconds(20), tolerance: .milliseconds(40)) { _ in
                passes.withLock { $0.append(loop.passCount) }
                firedAt.withLock { $0.append(.now) }
            }
            let b = LoopTimer(fireDate: start + .milliseconds(40)) { _ in
                passes.withLock { $0.append(loop.passCount) }
                firedAt.withLock { $0.append(.now) }
            }
            loop.add(a, to: .default)
            loop.add(b, to: .default)
            let sleepsBefore = loop.core!.sleepCount
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            let seen = passes.withLock { $0 }
            #expect(seen.count == 2 && seen[0] == seen[1], "both fired in one pass: \(seen)")
            #expect(loop.core!.sleepCount - sleepsBefore == 1, "one wake-up served both")
            let times = firedAt.withLock { $0 }
            #expect(times.allSatisfy { $0 >= start + .milliseconds(40) })
        }
    }

    @Test("Without tolerance each timer wakes the loop at its own date")
    func noToleranceNoCoalescing() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let start = MonotonicInstant.now
            let firedAt = ThreadLock<[Duration]>([])
            // The second date far after the first: a loaded machine delays the first
            // fire, but not by half a second; coalescing would hold it back to the second.
            for offset in [10, 500] {
                loop.add(
                    LoopTimer(fireDate: start + .milliseconds(offset)) { _ in
                        firedAt.withLock { $0.append(.now - start) }
                    }, to: .default)
            }
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            let times = firedAt.withLock { $0 }
            #expect(times.count == 2)
            #expect(times[0] >= .milliseconds(10) && times[0] < .milliseconds(500), "first fired at \(times[0])")
            #expect(times[1] >= .milliseconds(500))
        }
    }

    @Test("A precise timer never fires before its date", arguments: [false, true])
    func preciseNeverEarly(precise: Bool) {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let early = Atomic<Int>(0)
            let fires = Atomic<Int>(0)
            let timer = LoopTimer(after: .milliseconds(2), repeating: .milliseconds(1), precise: precise) { timer in
                // In the callout the fire date is still the one being served.
                if MonotonicInstant.now < timer.nextFireDate { early.add(1, ordering: .relaxed) }
                if fires.add(1, ordering: .relaxed).newValue >= 20 { timer.invalidate() }
            }
            loop.add(timer, to: .default)
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(fires.load(ordering: .relaxed) == 20)
            #expect(early.load(ordering: .relaxed) == 0)
        }
    }

    @Test("A target-action timer calls its target")
    func targetAction() {
        onFreshLoopThread {
            final class Counter: Sendable {
                let count = Atomic<Int>(0)
                func tick(_ timer: LoopTimer) {
                    if count.add(1, ordering: .relaxed).newValue == 3 { timer.invalidate() }
                }
            }
            let counter = Counter()
            let loop = RingRunLoop.current
            loop.add(
                LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1), target: counter, action: Counter.tick), to: .default)
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(counter.count.load(ordering: .relaxed) == 3)
        }
    }

    @Test("Moving a timer's fire date from another thread reschedules it")
    func rescheduleFromAnotherThread() {
        let worker = LoopThread(name: "timers")
        let fired = Atomic<Bool>(false)
        let timer = LoopTimer(after: .seconds(3600)) { _ in fired.store(true, ordering: .relaxed) }
        worker.loop.add(timer, to: .default)
        timer.nextFireDate = .now + .milliseconds(5)
        #expect(waitUntil { fired.load(ordering: .relaxed) })
        worker.stopAndJoin()
    }
}
