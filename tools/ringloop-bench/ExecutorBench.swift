import CoreFoundation
import Dispatch
import Foundation
import RingLoop
import Synchronization

/// Swift concurrency on the loop: actor hops, job throughput, sleeps on the loop clock,
/// and many sleeping tasks — each beside the runtime's own executors or Dispatch.
enum ExecutorBench {
    // MARK: Actor hops

    actor LoopPonger {
        nonisolated let unownedExecutor: UnownedSerialExecutor
        var pings = 0
        init(loop: RingRunLoop) { unownedExecutor = loop.asUnownedSerialExecutor() }
        @inline(never) func ping() -> Int {
            pings &+= 1
            return pings & 1
        }
    }

    actor LoopPinger {
        let other: LoopPonger
        nonisolated let unownedExecutor: UnownedSerialExecutor
        init(loop: RingRunLoop, other: LoopPonger) { (unownedExecutor, self.other) = (loop.asUnownedSerialExecutor(), other) }
        func run(_ count: Int) async -> Int {
            var sum = 0
            for _ in 0..<count { sum += await other.ping() }
            return sum
        }
    }

    actor DefaultPonger {
        var pings = 0
        @inline(never) func ping() -> Int {
            pings &+= 1
            return pings & 1
        }
    }

    actor DefaultPinger {
        let other = DefaultPonger()
        func run(_ count: Int) async -> Int {
            var sum = 0
            for _ in 0..<count { sum += await other.ping() }
            return sum
        }
    }

    /// Calls from one actor to another and back per second: both on one loop (ours), both
    /// default actors on the global executor (the peer).
    static func hops(quick: Bool, rounds: Int) -> [BenchResult] {
        let count = BenchSize.of(quick ? 200_000 : 1_000_000)
        let worker = LoopThread(name: "bench-actors")
        defer { worker.stopAndJoin() }
        var ours: [Double] = []
        var peer: [Double] = []
        for _ in 0..<rounds {
            let pinger = LoopPinger(loop: worker.loop, other: LoopPonger(loop: worker.loop))
            ours.append(
                blockingAwait {
                    let start = MonotonicInstant.now
                    let sum = await pinger.run(count)
                    precondition(sum == count / 2, "the hops did not all happen")
                    return Double(count) / (MonotonicInstant.now - start).secondsValue
                })
            let defaultPinger = DefaultPinger()
            peer.append(
                blockingAwait {
                    let start = MonotonicInstant.now
                    let sum = await defaultPinger.run(count)
                    precondition(sum == count / 2, "the hops did not all happen")
                    return Double(count) / (MonotonicInstant.now - start).secondsValue
                })
        }
        return [BenchResult("executor.hop.per_s", "1/s", ours: median(ours), foundation: median(peer))]
    }

    // MARK: Jobs

    /// Jobs per second on one thread's loop: a task that prefers the loop yields `count`
    /// times (each yield is one job through the loop's queue). The peer: as many blocks on
    /// `DispatchQueue.main`, each queueing the next, serviced by Foundation's `RunLoop.main`.
    static func jobs(quick: Bool, rounds: Int) -> [BenchResult] {
        let count = BenchSize.of(quick ? 200_000 : 1_000_000)
        var ours: [Double] = []
        var peer: [Double] = []
        for _ in 0..<rounds {
            ours.append(
                onFreshThread {
                    let loop = RingRunLoop.current
                    let start = MonotonicInstant.now
                    Task(executorPreference: loop) {
                        for _ in 0..<count { await Task.yield() }
                        loop.stop()
                    }
                    loop.run(mode: .default, until: .distantFuture)
                    return Double(count) / (MonotonicInstant.now - start).secondsValue
                })
            peer.append(mainQueueJobs(count))
        }
        return [BenchResult("executor.jobs.per_s", "1/s", ours: median(ours), foundation: median(peer))]
    }

    final class MainQueueChain: @unchecked Sendable {
        // @unchecked: used on the main thread only (the blocks run there).
        var done = 0
        let count: Int
        init(count: Int) { self.count = count }
        func step() {
            done += 1
            if done < count { DispatchQueue.main.async { self.step() } }
        }
    }

    /// Blocks per second through `DispatchQueue.main` while `RunLoop.main` runs (main thread).
    static func mainQueueJobs(_ count: Int) -> Double {
        let chain = MainQueueChain(count: count)
        let start = MonotonicInstant.now
        DispatchQueue.main.async { chain.step() }
        while chain.done < count { _ = RunLoop.main.run(mode: .default, before: .distantFuture) }
        return Double(count) / (MonotonicInstant.now - start).secondsValue
    }

    // MARK: Sleep lateness

    /// How late (µs) `sleeps` sleeps of 1 ms end: on the loop clock (a task on a
    /// LoopThread's loop), on ContinuousClock (a task on the global executor), and through
    /// `DispatchQueue.asyncAfter`.
    static func sleepLateness(quick: Bool, rounds: Int) -> [BenchResult] {
        let sleeps = BenchSize.of(quick ? 300 : 1000)
        let worker = LoopThread(name: "bench-clock")
        defer { worker.stopAndJoin() }
        let loop = worker.loop
        var ours: [Double] = []
        var precise: [Double] = []
        var continuous: [Double] = []
        var dispatch: [Double] = []
        for _ in 0..<rounds {
            for clock in [LoopClock(loop: loop), LoopClock(loop: loop, precise: true)] {
                let samples = blockingAwait {
                    await Task(executorPreference: loop) {
                        var samples: [Double] = []
                        for _ in 0..<sleeps {
                            let deadline = MonotonicInstant.now + .milliseconds(1)
                            try? await clock.sleep(until: deadline)
                            samples.append(Double((MonotonicInstant.now - deadline).nanosecondsValue) / 1000)
                        }
                        return samples
                    }.value
                }
                if clock.isPrecise { precise += samples } else { ours += samples }
            }
            continuous += blockingAwait {
                var samples: [Double] = []
                for _ in 0..<sleeps {
                    let deadline = ContinuousClock.now + .milliseconds(1)
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    samples.append(Double((ContinuousClock.now - deadline).nanosecondsValue) / 1000)
                }
                return samples
            }
            dispatch += blockingAwait {
                var samples: [Double] = []
                for _ in 0..<sleeps {
                    let start = MonotonicInstant.now
                    await withCheckedContinuation { continuation in
                        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { continuation.resume() }
                    }
                    samples.append(Double((MonotonicInstant.now - start - .milliseconds(1)).nanosecondsValue) / 1000)
                }
                return samples
            }
        }
        return [
            BenchResult(
                "clock.sleep.lateness.p50_us", "µs", ours: percentile(ours, 0.5), foundation: percentile(continuous, 0.5)),
            BenchResult(
                "clock.sleep.lateness.p99_us", "µs", ours: percentile(ours, 0.99), foundation: percentile(continuous, 0.99)),
            BenchResult(
                "clock.sleep.lateness.precise.p99_us", "µs", ours: percentile(precise, 0.99),
                foundation: percentile(continuous, 0.99)),
            BenchResult(
                "clock.sleep.lateness.vs_dispatch.p50_us", "µs", ours: percentile(ours, 0.5),
                foundation: percentile(dispatch, 0.5)),
        ]
    }

    // MARK: Many sleepers

    struct SleeperFigures: Codable {
        var bytesEach: Double
        var wakeMicrosecondsEach: Double
    }

    /// `count` tasks asleep until one deadline: resident memory per sleeping task, and the
    /// time from the deadline until the last woke, per task. Ours sleep on a LoopThread's
    /// loop clock, the peer's on ContinuousClock; both are tasks of the global executor.
    static func sleepers(side: String, count: Int) -> SleeperFigures {
        let worker = side == "ours" ? LoopThread(name: "bench-sleepers") : nil
        defer { worker?.stopAndJoin() }
        final class Counts: Sendable {
            let asleep = Atomic<Int>(0)
            let lastWake = Atomic<UInt64>(0)
        }
        let counts = Counts()
        let lead = Duration.seconds(count >= 50_000 ? 4 : 2)
        let deadline = MonotonicInstant.now + lead
        let continuousDeadline = ContinuousClock.now + lead
        let rssBefore = residentBytes()
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            // Both sides' tasks run on the global executor, so only the clock differs (a
            // task that prefers a loop costs the runtime about 1 KB more, whichever clock).
            Task {
                counts.asleep.add(1, ordering: .relaxed)
                if let worker {
                    try? await worker.loop.clock.sleep(until: deadline)
                } else {
                    try? await Task.sleep(until: continuousDeadline, clock: .continuous)
                }
                counts.lastWake.max(MonotonicInstant.now.nanoseconds, ordering: .relaxed)
                group.leave()
            }
        }
        while counts.asleep.load(ordering: .relaxed) < count { usleep(1000) }
        usleep(50_000)  // the last ones reach their sleep
        let bytes = Double(residentBytes() - rssBefore) / Double(count)
        group.wait()
        let lastNanoseconds = counts.lastWake.load(ordering: .relaxed)
        let wakeSpan = Double(lastNanoseconds > deadline.nanoseconds ? lastNanoseconds - deadline.nanoseconds : 0) / 1000
        return SleeperFigures(bytesEach: bytes, wakeMicrosecondsEach: wakeSpan / Double(count))
    }

    static func sleepersInChild(_ side: String, count: Int) throws -> SleeperFigures {
        try BenchChild.measure("clock.sleepers", side: side, count: count, cancels: 1)
    }

    static func sleepers(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let count = BenchSize.of(quick ? 20_000 : 100_000)
        var ours: [SleeperFigures] = []
        var peer: [SleeperFigures] = []
        for _ in 0..<rounds {
            ours.append(try sleepersInChild("ours", count: count))
            peer.append(try sleepersInChild("foundation", count: count))
        }
        return [
            BenchResult(
                "clock.sleepers.bytes_each", "bytes", ours: median(ours.map(\.bytesEach)),
                foundation: median(peer.map(\.bytesEach))),
            BenchResult(
                "clock.sleepers.wake_us_each", "µs", ours: median(ours.map(\.wakeMicrosecondsEach)),
                foundation: median(peer.map(\.wakeMicrosecondsEach))),
        ]
    }
}

/// Runs `body` as a task and blocks the calling thread until it returns (the benchmark
/// driver is synchronous; the tasks run on other threads).
func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let result = ThreadLockBox<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        result.set(await body())
        done.signal()
    }
    done.wait()
    return result.get()!
}
