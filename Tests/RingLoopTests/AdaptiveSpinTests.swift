import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

@Suite("Adaptive spin before sleeping")
struct AdaptiveSpinTests {
    @Test("sparse work (a 1 kHz timer, no other work) never makes the loop poll")
    func sparseWorkDoesNotSpin() {
        let spent = Atomic<UInt64>(.max)
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.adaptiveSpinBeforeSleeping = (window: .microseconds(100), cpuBudget: 0.5)
            let fires = LoopBound(0, loop: loop)
            let timer = LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                fires.value += 1
                if fires.value == 100 { timer.invalidate() }
            }
            loop.add(timer, to: .default)
            loop.run(mode: .default, for: .seconds(5))
            spent.store(loop.spin.adaptive?.totalSpent ?? .max, ordering: .relaxed)
        }
        let total = spent.load(ordering: .relaxed)
        #expect(total == 0, "polled \(total) ns with nothing arriving faster than the window")
    }

    @Test("work arriving faster than the window is caught by polling, and polling stays within its budget")
    func streamWithinBudget() {
        // Polling catches work only while both threads get a core: on a machine busy with
        // other tests (the whole suite under ThreadSanitizer, where a pass can outlast the
        // 50 µs between works and the loop never waits) a trial can see none, so up to five
        // trials, one heavy test at a time; the budget must hold in every one.
        var caught = false
        for _ in 0..<5 where !caught {
            let (hits, spent, elapsed, performed) = HeavyTests.oneAtATime { Self.streamTrial() }
            caught = hits > 0
            // The loop keeps up (thousands of performs in 1.5 s) in a trial where both threads
            // had a core; in CI, under ThreadSanitizer beside a process spinning on another
            // core, a trial performed 947 times.
            if caught {
                #expect(spent > 0, "work caught while polling, yet no polling time counted")
                #expect(performed > 1000, "\(performed) performs in 1.5 s of work every 50 µs")
            }
            // At most the budget per second begun, plus one window at each second's edge.
            let seconds = elapsed / 1_000_000_000 + 1
            let allowed = seconds * (50_000_000 + 200_000)
            #expect(spent <= allowed, "polled \(spent) ns in \(elapsed) ns, budget \(allowed) ns")
        }
        #expect(caught, "no work was caught while polling in five trials")
    }

    /// Work every 50 µs for 1.5 s to a loop with a 200 µs window and a 5 % budget: the
    /// work caught while polling, the time spent polling, the time elapsed, the performs.
    static func streamTrial() -> (hits: UInt64, spent: UInt64, elapsed: UInt64, performed: Int) {
        let result = ThreadLock<(hits: UInt64, spent: UInt64, elapsed: UInt64, performed: Int)?>(nil)
        let stop = Atomic<Bool>(false)
        let handoff = ThreadLock<(RingRunLoop, LoopSource)?>(nil)
        let receiver = PosixThread.start(name: "adaptive") {
            let loop = RingRunLoop.current
            let budget = 0.05
            loop.adaptiveSpinBeforeSleeping = (window: .microseconds(200), cpuBudget: budget)
            let performed = LoopBound(0, loop: loop)
            let source = LoopSource { performed.value += 1 }
            loop.add(source, to: .default)
            try? loop.prepare()
            handoff.withLock { $0 = (loop, source) }
            let hitsBefore = loop.core?.spinHits ?? 0
            let started = MonotonicInstant.now
            while !stop.load(ordering: .acquiring) { loop.run(mode: .default, for: .milliseconds(100)) }
            let elapsed = UInt64((MonotonicInstant.now - started).nanosecondsClamped)
            result.withLock {
                $0 = ((loop.core?.spinHits ?? 0) - hitsBefore, loop.spin.adaptive?.totalSpent ?? 0, elapsed, performed.value)
            }
            source.invalidate()
        }
        var target: (RingRunLoop, LoopSource)?
        while target == nil {
            target = handoff.withLock { $0 }
            sched_yield()
        }
        let (loop, source) = target!
        // Work every 50 µs for 1.5 s, from this thread.
        let end = MonotonicInstant.now + .milliseconds(1500)
        while MonotonicInstant.now < end {
            source.signal()
            loop.wakeUp()
            let next = MonotonicInstant.now + .microseconds(50)
            while MonotonicInstant.now < next {}
        }
        stop.store(true, ordering: .releasing)
        loop.wakeUp()
        receiver.join()
        return result.withLock { $0! }
    }
}
