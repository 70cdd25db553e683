import CoreFoundation
import Foundation
import RingLoop
import RingLoopBenchmarks
import Synchronization

/// Loop benchmarks: cross-thread wake-up to callout, same-thread source0 and block
/// throughput, and system calls per pass.
enum LoopBench {
    // MARK: Cross-thread wake

    final class WakeState: Sendable {
        let sentAt = Atomic<UInt64>(0)
        let acknowledged = Atomic<Int>(0)
        let latencies = ThreadLockBox<[Double]>([])
    }

    /// Latencies (µs) from signal + wake-up on this thread to the source's callout on the
    /// receiver's loop, and the sender's cost per signal.
    /// With `pollBeforeSleeping`, the receiving loop polls that long before sleeping
    /// (``RingRunLoop/spinBeforeSleeping``); `busy` is the share of the run the receiving
    /// thread spent on a CPU.
    static func oursWake(
        samples: Int, gap: Duration, pollBeforeSleeping: Duration = .zero, adaptive: (Duration, Double)? = nil
    ) -> (
        latency: [Double], cost: [Double], busy: Double
    ) {
        let state = WakeState()
        let busy = ThreadLockBox<Double>(0)
        let ready = DispatchSemaphore(value: 0)
        let handoff = ThreadLockBox<(RingRunLoop, LoopSource)?>(nil)
        let receiver = Thread {
            let loop = RingRunLoop.current
            loop.spinBeforeSleeping = pollBeforeSleeping
            loop.adaptiveSpinBeforeSleeping = adaptive.map { (window: $0.0, cpuBudget: $0.1) }
            var reserved: [Double] = []
            reserved.reserveCapacity(samples)
            let local = LoopBound(reserved, loop: loop)
            // CPU share of the receiving thread from the first signal to the last.
            let atFirst = LoopBound((cpu: UInt64(0), wall: MonotonicInstant.now), loop: loop)
            let source = LoopSource {
                let sent = state.sentAt.exchange(0, ordering: .sequentiallyConsistent)
                if sent != 0 {
                    local.value.append(Double(MonotonicInstant.now.nanoseconds &- sent) / 1000)
                    if local.value.count == 1 { atFirst.value = (threadCPUNanoseconds(), .now) }
                    if local.value.count == samples {
                        busy.set(
                            Double(threadCPUNanoseconds() - atFirst.value.cpu)
                                / Double(max(1, (MonotonicInstant.now - atFirst.value.wall).nanosecondsValue)))
                    }
                    state.acknowledged.add(1, ordering: .sequentiallyConsistent)
                }
            }
            loop.add(source, to: .default)
            handoff.set((loop, source))
            ready.signal()
            while state.acknowledged.load(ordering: .acquiring) < samples {
                loop.run(mode: .default, until: .now + .seconds(1))
            }
            state.latencies.set(local.value)
            ready.signal()
        }
        receiver.start()
        ready.wait()
        let (loop, source) = handoff.get()!
        var costs: [Double] = []
        costs.reserveCapacity(samples)
        for sample in 0..<samples {
            spin(gap)
            let start = MonotonicInstant.now
            state.sentAt.store(start.nanoseconds, ordering: .sequentiallyConsistent)
            source.signal()
            loop.wakeUp()
            costs.append(Double((MonotonicInstant.now - start).nanosecondsValue) / 1000)
            let limit = MonotonicInstant.now + .seconds(2)
            while state.acknowledged.load(ordering: .acquiring) <= sample, MonotonicInstant.now < limit {}
        }
        ready.wait()
        return (state.latencies.get(), costs, busy.get())
    }

    /// CPU time the calling thread has used.
    static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    final class CFWakeBox: @unchecked Sendable {
        // @unchecked: `local` is filled on the receiving thread and read after joining it.
        var local: [Double] = []
        let state: WakeState
        init(state: WakeState) { self.state = state }
    }

    /// The same on Foundation's CFRunLoop: CFRunLoopSourceSignal + CFRunLoopWakeUp.
    static func foundationWake(samples: Int, gap: Duration) -> (latency: [Double], cost: [Double]) {
        let state = WakeState()
        let box = CFWakeBox(state: state)
        box.local.reserveCapacity(samples)
        let ready = DispatchSemaphore(value: 0)
        let handoff = ThreadLockBox<(CFRunLoop, CFRunLoopSource)?>(nil)
        let receiver = Thread {
            var context = CFRunLoopSourceContext(
                version: 0, info: Unmanaged.passUnretained(box).toOpaque(), retain: nil, release: nil,
                copyDescription: nil, equal: nil, hash: nil, schedule: nil, cancel: nil,
                perform: { info in
                    let box = Unmanaged<CFWakeBox>.fromOpaque(info!).takeUnretainedValue()
                    let sent = box.state.sentAt.exchange(0, ordering: .sequentiallyConsistent)
                    if sent != 0 {
                        box.local.append(Double(MonotonicInstant.now.nanoseconds &- sent) / 1000)
                        box.state.acknowledged.add(1, ordering: .sequentiallyConsistent)
                    }
                })
            let source = CFRunLoopSourceCreate(nil, 0, &context)!
            let loop = CFRunLoopGetCurrent()!
            CFRunLoopAddSource(loop, source, kCFRunLoopDefaultMode)
            handoff.set((loop, source))
            ready.signal()
            while state.acknowledged.load(ordering: .acquiring) < samples {
                _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1, false)
            }
            state.latencies.set(box.local)
            ready.signal()
        }
        receiver.start()
        ready.wait()
        let (loop, source) = handoff.get()!
        var costs: [Double] = []
        costs.reserveCapacity(samples)
        for sample in 0..<samples {
            spin(gap)
            let start = MonotonicInstant.now
            state.sentAt.store(start.nanoseconds, ordering: .sequentiallyConsistent)
            CFRunLoopSourceSignal(source)
            CFRunLoopWakeUp(loop)
            costs.append(Double((MonotonicInstant.now - start).nanosecondsValue) / 1000)
            let limit = MonotonicInstant.now + .seconds(2)
            while state.acknowledged.load(ordering: .acquiring) <= sample, MonotonicInstant.now < limit {}
        }
        ready.wait()
        return (state.latencies.get(), costs)
    }

    static func spin(_ duration: Duration) {
        let until = MonotonicInstant.now + duration
        while MonotonicInstant.now < until {}
    }

    static func wake(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let samples = BenchSize.of(quick ? 1000 : 5000)
        var results: [BenchResult] = []
        for (regime, gap) in [("busy", Duration.microseconds(50)), ("idle", Duration.microseconds(300))] {
            var ours: [(latency: [Double], cost: [Double], busy: Double)] = []
            var spinning: [(latency: [Double], cost: [Double], busy: Double)] = []
            // The adaptive policy at two budgets: 10 % and 50 % of a core.
            var adaptive: [Int: [(latency: [Double], cost: [Double], busy: Double)]] = [10: [], 50: []]
            var foundation: [(latency: [Double], cost: [Double])] = []
            var floor: [WakeUpBenchmark.Result] = []
            for _ in 0..<rounds {
                ours.append(oursWake(samples: samples, gap: gap))
                foundation.append(foundationWake(samples: samples, gap: gap))
                spinning.append(oursWake(samples: samples, gap: gap, pollBeforeSleeping: .microseconds(100)))
                for budget in [10, 50] {
                    adaptive[budget]!.append(
                        oursWake(samples: samples, gap: gap, adaptive: (.microseconds(100), Double(budget) / 100)))
                }
                floor.append(try WakeUpBenchmark.run(.futex, samples: samples, gap: gap))
            }
            for (label, fraction) in [("p50", 0.5), ("p99", 0.99)] {
                results.append(
                    BenchResult(
                        "wake.\(regime).\(label)_us", "µs", ours: median(ours.map { percentile($0.latency, fraction) }),
                        foundation: median(foundation.map { percentile($0.latency, fraction) })))
            }
            results.append(
                BenchResult(
                    "wake.\(regime).max_us", "µs", ours: median(ours.map { $0.latency.max() ?? .nan }),
                    foundation: median(foundation.map { $0.latency.max() ?? .nan })))
            results.append(
                BenchResult(
                    "wake.\(regime).sender_us", "µs", ours: median(ours.map { percentile($0.cost, 0.5) }),
                    foundation: median(foundation.map { percentile($0.cost, 0.5) })))
            results.append(
                BenchResult("wake.\(regime).futex_floor.p50_us", "µs", ours: median(floor.map { percentile($0.latencies, 0.5) })))
            results.append(
                BenchResult("wake.\(regime).futex_floor.p99_us", "µs", ours: median(floor.map { percentile($0.latencies, 0.99) })))
            if !spinning.isEmpty {
                // Opt-in: the loop polls 100 µs before sleeping. Foundation's column is its
                // ordinary figure in the same regime (it has no such mode).
                for (label, fraction) in [("p50", 0.5), ("p99", 0.99)] {
                    results.append(
                        BenchResult(
                            "wake.\(regime).spin100.\(label)_us", "µs",
                            ours: median(spinning.map { percentile($0.latency, fraction) }),
                            foundation: median(foundation.map { percentile($0.latency, fraction) })))
                }
                results.append(
                    BenchResult(
                        "wake.\(regime).spin100.sender_us", "µs", ours: median(spinning.map { percentile($0.cost, 0.5) }),
                        foundation: median(foundation.map { percentile($0.cost, 0.5) })))
                results.append(
                    BenchResult(
                        "wake.\(regime).spin100.receiver_cpu_percent", "%", ours: median(spinning.map { $0.busy * 100 }),
                        foundation: nil))
                results.append(
                    BenchResult("wake.\(regime).receiver_cpu_percent", "%", ours: median(ours.map { $0.busy * 100 })))
            }
            // Opt-in: polling 100 µs only while work arrives faster, within a CPU budget.
            for budget in [10, 50] {
                let runs = adaptive[budget]!
                let name = "wake.\(regime).adaptive\(budget)"
                for (label, fraction) in [("p50", 0.5), ("p99", 0.99)] {
                    results.append(
                        BenchResult(
                            "\(name).\(label)_us", "µs", ours: median(runs.map { percentile($0.latency, fraction) }),
                            foundation: median(foundation.map { percentile($0.latency, fraction) })))
                }
                results.append(BenchResult("\(name).receiver_cpu_percent", "%", ours: median(runs.map { $0.busy * 100 })))
            }
        }
        return results
    }

    // MARK: Same-thread throughput

    /// Signal → perform cycles per second of one source that re-signals itself, and the
    /// kernel entries per pass it took; on the main thread (`onMain`) the loop is the
    /// main loop, which also serves the main dispatch queue, as an app's does.
    static func oursSource0(count: Int, onMain: Bool = false) -> (perSecond: Double, entersPerPass: Double) {
        onThread(main: onMain) {
            let loop = RingRunLoop.current
            // The same unchecked box as Foundation's side below, so both callbacks cost
            // the same and the figure measures the loops (a LoopBound would add its
            // thread check to every access).
            let box = SourceBox()
            box.count = count
            let source = LoopSource {
                box.performed += 1
                if box.performed < box.count { box.source?.signal() } else { loop.stop() }
            }
            box.source = source
            loop.add(source, to: .default)
            try? loop.prepare()
            source.signal()
            let passes = loop.passCount
            let enters = loop.enterCount
            let start = MonotonicInstant.now
            loop.run(mode: .default, until: .distantFuture)
            let elapsed = (MonotonicInstant.now - start).secondsValue
            let passCount = Double(loop.passCount - passes)
            box.source = nil  // breaks the cycle source → callback → box → source
            // The main loop outlives the round (a fresh thread's loop ends with it).
            loop.remove(source, from: .default)
            return (Double(box.performed) / elapsed, Double(loop.enterCount - enters) / passCount)
        }
    }

    /// What a self-signalling source's callback counts, on the one thread that runs its
    /// loop.
    final class CountingBox<Source>: @unchecked Sendable {
        // @unchecked: made, used and dropped on the one thread that runs the loop.
        var performed = 0
        var count = 0
        var source: Source?
    }
    typealias SourceBox = CountingBox<LoopSource>
    typealias CFSourceBox = CountingBox<CFRunLoopSource>

    static func foundationSource0(count: Int) -> Double {
        onFreshThread {
            let box = CFSourceBox()
            box.count = count
            var context = CFRunLoopSourceContext(
                version: 0, info: Unmanaged.passUnretained(box).toOpaque(), retain: nil, release: nil,
                copyDescription: nil, equal: nil, hash: nil, schedule: nil, cancel: nil,
                perform: { info in
                    let box = Unmanaged<CFSourceBox>.fromOpaque(info!).takeUnretainedValue()
                    box.performed += 1
                    if box.performed < box.count { CFRunLoopSourceSignal(box.source) } else { CFRunLoopStop(CFRunLoopGetCurrent()) }
                })
            box.source = CFRunLoopSourceCreate(nil, 0, &context)
            CFRunLoopAddSource(CFRunLoopGetCurrent(), box.source, kCFRunLoopDefaultMode)
            CFRunLoopSourceSignal(box.source)
            let start = MonotonicInstant.now
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e9, false)
            return Double(box.performed) / (MonotonicInstant.now - start).secondsValue
        }
    }

    /// Blocks per second: `count` blocks enqueued on the loop's thread, then run.
    static func oursBlocks(count: Int) -> Double {
        onFreshThread {
            let loop = RingRunLoop.current
            let counter = SampleBox(capacity: 0)
            let start = MonotonicInstant.now
            for _ in 0..<count {
                loop.perform(inModes: [.default]) {
                    counter.count += 1
                    if counter.count == count { RingRunLoop.current.stop() }
                }
            }
            loop.add(LoopSource {}, to: .default)
            loop.run(mode: .default, until: .distantFuture)
            return Double(counter.count) / (MonotonicInstant.now - start).secondsValue
        }
    }

    static func foundationBlocks(count: Int) -> Double {
        onFreshThread {
            let loop = RunLoop.current
            let counter = SampleBox(capacity: 0)
            let start = MonotonicInstant.now
            for _ in 0..<count {
                loop.perform(inModes: [.default]) {
                    counter.count += 1
                    if counter.count == count { CFRunLoopStop(CFRunLoopGetCurrent()) }
                }
            }
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1e9, false)
            return Double(counter.count) / (MonotonicInstant.now - start).secondsValue
        }
    }

    static func throughput(quick: Bool, rounds: Int) -> [BenchResult] {
        let count = BenchSize.of(quick ? 200_000 : 1_000_000)
        var ours: [Double] = []
        var enters: [Double] = []
        var foundation: [Double] = []
        var oursBlocks: [Double] = []
        var foundationBlocks: [Double] = []
        var oursMain: [Double] = []
        for _ in 0..<rounds {
            let result = oursSource0(count: count)
            ours.append(result.perSecond)
            enters.append(result.entersPerPass)
            foundation.append(foundationSource0(count: count))
            oursMain.append(oursSource0(count: count, onMain: true).perSecond)
            oursBlocks.append(Self.oursBlocks(count: count))
            foundationBlocks.append(Self.foundationBlocks(count: count))
        }
        return [
            BenchResult("source0.per_s", "1/s", ours: median(ours), foundation: median(foundation)),
            // Ours only: Foundation's side, run the same way on the main thread
            // (CFRunLoopRunInMode, the source signalled before), waited in ppoll and
            // never performed the source.
            BenchResult("source0.main.per_s", "1/s", ours: median(oursMain)),
            BenchResult("blocks.per_s", "1/s", ours: median(oursBlocks), foundation: median(foundationBlocks)),
            BenchResult("enter.per_pass.source0", "calls", ours: median(enters)),
        ]
    }
}

/// A value shared between two threads under a lock.
final class ThreadLockBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
}
