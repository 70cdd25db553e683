import ArgumentParser
import CoreFoundation
import Foundation
import RingLoop
import Synchronization

/// Timer benchmarks: lateness at 1 kHz, scheduling and cancelling at scale, idle wake-ups.
enum TimerBench {
    // MARK: Lateness

    /// Lateness (µs) of each fire of a 1 kHz repeating timer on our loop.
    static func oursLateness(fires: Int, precise: Bool) -> [Double] {
        onFreshThread {
            let loop = RingRunLoop.current
            var reserved: [Double] = []
            reserved.reserveCapacity(fires)
            let samples = LoopBound(reserved, loop: loop)
            let timer = LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1), precise: precise) { timer in
                let now = MonotonicInstant.now
                samples.value.append(Double((now - timer.nextFireDate).nanosecondsValue) / 1000)
                if samples.value.count == fires { timer.invalidate() }
            }
            loop.add(timer, to: .default)
            loop.run(mode: .default, for: .milliseconds(fires * 2 + 1000))
            if precise {
                // What precise mode cost: the early wake it settled on, the spin per fire.
                let spin = loop.preciseSpin
                preciseCosts.append(
                    (
                        window: Double(loop.preciseSpinWindow.nanosecondsValue) / 1000,
                        spinPerFire: Double(spin.nanoseconds) / Double(max(1, spin.fires)) / 1000,
                        observed99: Double(loop.observedWakeLateness99.nanosecondsValue) / 1000
                    ))
            }
            return samples.value
        }
    }

    /// Precise mode's cost per run: its early wake, spin per fire and the wake-up
    /// lateness the loop observed (µs). Filled by `oursLateness` on the bench's threads,
    /// one at a time.
    nonisolated(unsafe) static var preciseCosts: [(window: Double, spinPerFire: Double, observed99: Double)] = []

    /// Lateness (µs) of each fire of a 1 kHz repeating Foundation `Timer`.
    static func foundationLateness(fires: Int) -> [Double] {
        onFreshThread {
            let samples = SampleBox(capacity: fires)
            let timer = Timer(fire: Date(timeIntervalSinceNow: 0.001), interval: 0.001, repeats: true) { timer in
                samples.values.append(Date().timeIntervalSince(timer.fireDate) * 1_000_000)
                if samples.values.count == fires { timer.invalidate() }
            }
            RunLoop.current.add(timer, forMode: .default)
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: Double(fires) * 0.002 + 1))
            while timer.isValid {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 1))
            }
            return samples.values
        }
    }

    /// Fires dropped from the start of every run: the first ones pay for the new
    /// thread's first page faults and cache misses, not for the timer path.
    static let warmUpFires = 5

    /// 1 kHz lateness, ours (default and precise) and Foundation's; then the default-mode
    /// pair again with the other core kept busy by a spinning thread.
    ///
    /// The sides alternate in runs of half a second (A B A B…, `rounds` × 8 runs each):
    /// this machine drifts between a fast and a slow wake-up state that lasts seconds
    /// (about +30 µs per wake-up, whichever loop is running), and short alternating runs
    /// share it out evenly. Percentiles are over every fire of every run pooled; the
    /// maximum is the median of the runs' maxima.
    static func lateness(quick: Bool, rounds: Int) -> [BenchResult] {
        let fires = BenchSize.of(500)
        let runs = rounds * (quick ? 2 : 8)
        var ours: [[Double]] = []
        var precise: [[Double]] = []
        var foundation: [[Double]] = []
        var oursLoaded: [[Double]] = []
        var foundationLoaded: [[Double]] = []
        for _ in 0..<runs {
            ours.append(oursLateness(fires: fires, precise: false))
            foundation.append(foundationLateness(fires: fires))
            precise.append(oursLateness(fires: fires, precise: true))
        }
        withOtherCoreBusy {
            for _ in 0..<max(1, runs / 2) {
                oursLoaded.append(oursLateness(fires: fires, precise: false))
                foundationLoaded.append(foundationLateness(fires: fires))
            }
        }
        func figures(_ name: String, _ mine: [[Double]], _ theirs: [[Double]]) -> [BenchResult] {
            let pooledMine = mine.flatMap { $0.dropFirst(warmUpFires) }
            let pooledTheirs = theirs.flatMap { $0.dropFirst(warmUpFires) }
            let maximum: ([Double]) -> Double = { $0.dropFirst(warmUpFires).max() ?? .nan }
            return [
                BenchResult(
                    "\(name).p50_us", "µs", ours: percentile(pooledMine, 0.5), foundation: percentile(pooledTheirs, 0.5)),
                BenchResult(
                    "\(name).p99_us", "µs", ours: percentile(pooledMine, 0.99), foundation: percentile(pooledTheirs, 0.99)),
                BenchResult(
                    "\(name).max_us", "µs", ours: median(mine.map(maximum)), foundation: median(theirs.map(maximum))),
            ]
        }
        let costs = preciseCosts
        preciseCosts = []
        let cost =
            costs.isEmpty
            ? []
            : [
                BenchResult("timer.precise.window_us", "µs", ours: median(costs.map(\.window))),
                BenchResult("timer.precise.spin_us_per_fire", "µs", ours: median(costs.map(\.spinPerFire))),
                BenchResult("timer.precise.observed_wake_p99_us", "µs", ours: median(costs.map(\.observed99))),
            ]
        return figures("timer.lateness", ours, foundation)
            + figures("timer.lateness.precise", precise, foundation)
            + figures("timer.lateness.loaded", oursLoaded, foundationLoaded) + cost
    }

    /// Runs `body` while another thread spins, keeping the machine's other core busy.
    static func withOtherCoreBusy(_ body: () -> Void) {
        let spinner = Spinner()
        let thread = Thread { spinner.spin() }
        thread.start()
        body()
        spinner.stop()
    }

    // MARK: Scheduling and cancelling

    struct ScheduleFigures: Codable {
        var seconds: Double
        var bytesEach: Double
        var cancelMicroseconds: Double
    }

    /// Schedules `count` one-shot timers far in the future with `schedule` (index → the
    /// timer), on a fresh thread, then cancels `cancels` of them spread over the set, one
    /// at a time, with `cancel`. `settle` runs after (a loop pass, for ours).
    static func measureSchedule(
        count: Int, cancels: Int, schedule: @escaping (Int) -> AnyObject, cancel: @escaping (AnyObject) -> Void,
        settle: @escaping () -> Void = {}
    ) -> ScheduleFigures {
        onFreshThread {
            var kept: [AnyObject] = []
            let stride = max(1, count / cancels)
            kept.reserveCapacity(cancels + 1)
            let rssBefore = residentBytes()
            let start = MonotonicInstant.now
            for index in 0..<count {
                let timer = schedule(index)
                if index % stride == stride / 2 { kept.append(timer) }
            }
            let elapsed = MonotonicInstant.now - start
            let bytes = Double(residentBytes() - rssBefore)
            var cancelTimes: [Double] = []
            for timer in kept {
                let begin = MonotonicInstant.now
                cancel(timer)
                cancelTimes.append(Double((MonotonicInstant.now - begin).nanosecondsValue) / 1000)
            }
            settle()
            return ScheduleFigures(
                seconds: elapsed.secondsValue, bytesEach: bytes / Double(count),
                cancelMicroseconds: median(cancelTimes))
        }
    }

    static func oursSchedule(count: Int, cancels: Int) -> ScheduleFigures {
        let base = MonotonicInstant.now + .seconds(3600)
        return measureSchedule(
            count: count, cancels: cancels,
            schedule: { index in
                let timer = LoopTimer(fireDate: base + .microseconds(index)) { _ in }
                RingRunLoop.current.add(timer, to: .default)
                return timer
            }, cancel: { ($0 as! LoopTimer).invalidate() },
            settle: {
                // Let the loop drop what it no longer needs, as it would while running.
                RingRunLoop.current.run(mode: .default, for: .zero)
            })
    }

    static func foundationSchedule(count: Int, cancels: Int) -> ScheduleFigures {
        let base = Date(timeIntervalSinceNow: 3600)
        return measureSchedule(
            count: count, cancels: cancels,
            schedule: { index in
                let timer = Timer(fire: base.addingTimeInterval(Double(index) / 1_000_000), interval: 0, repeats: false) { _ in }
                RunLoop.current.add(timer, forMode: .default)
                return timer
            }, cancel: { ($0 as! Timer).invalidate() })
    }

    /// Runs one scheduling measurement in a child process (`ringloop-bench bench-child`), so
    /// that each side's resident-memory growth is its own.
    static func scheduleInChild(_ side: String, count: Int, cancels: Int) throws -> ScheduleFigures {
        try BenchChild.measure("timers.schedule", side: side, count: count, cancels: min(cancels, count))
    }

    static func schedule(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let count = BenchSize.of(quick ? 100_000 : 1_000_000)
        var ours: [ScheduleFigures] = []
        var foundation: [ScheduleFigures] = []
        for _ in 0..<rounds {
            ours.append(try scheduleInChild("ours", count: count, cancels: min(count, 100)))
            foundation.append(try scheduleInChild("foundation", count: count, cancels: min(count, 100)))
        }
        return [
            BenchResult(
                "timers.schedule.s", "s", ours: median(ours.map(\.seconds)), foundation: median(foundation.map(\.seconds))),
            BenchResult(
                "timers.bytes_each", "bytes", ours: median(ours.map(\.bytesEach)),
                foundation: median(foundation.map(\.bytesEach))),
        ]
    }

    static func cancel(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let count = BenchSize.of(100_000)
        let cancels = min(count, BenchSize.of(quick ? 50 : 200))
        var ours: [Double] = []
        var foundation: [Double] = []
        for _ in 0..<rounds {
            ours.append(try scheduleInChild("ours", count: count, cancels: cancels).cancelMicroseconds)
            foundation.append(try scheduleInChild("foundation", count: count, cancels: cancels).cancelMicroseconds)
        }
        return [
            BenchResult("timers.cancel_one_of_100k_us", "µs", ours: median(ours), foundation: median(foundation))
        ]
    }

    // MARK: Idle

    /// Wake-ups per second of a loop whose only timer is far away.
    static func idle(quick: Bool) -> [BenchResult] {
        let seconds = BenchSize.scale < 1 ? 0.2 : quick ? 1.0 : 2.0
        let ours: Double = onFreshThread {
            let loop = RingRunLoop.current
            let wakes = LoopBound(0, loop: loop)
            loop.add(LoopObserver(activities: .afterWaiting) { _, _ in wakes.value += 1 }, to: .default)
            loop.add(LoopTimer(after: .seconds(3600)) { _ in }, to: .default)
            loop.run(mode: .default, for: .seconds(seconds))
            // The wake at the run's own deadline is not an idle wake-up.
            return Double(max(0, wakes.value - 1)) / seconds
        }
        let foundation: Double = onFreshThread {
            let counter = SampleBox(capacity: 0)
            let observer = CFRunLoopObserverCreateWithHandler(nil, CFOptionFlags(CFRunLoopActivity.afterWaiting.rawValue), true, 0) {
                _, _ in
                counter.count += 1
            }
            CFRunLoopAddObserver(CFRunLoopGetCurrent(), observer, kCFRunLoopDefaultMode)
            RunLoop.current.add(Timer(fire: Date(timeIntervalSinceNow: 3600), interval: 0, repeats: false) { _ in }, forMode: .default)
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, seconds, false)
            return Double(max(0, counter.count - 1)) / seconds
        }
        return [BenchResult("idle.wakeups_per_s", "1/s", ours: ours, foundation: foundation)]
    }
}

/// The process's resident memory in bytes (`/proc/self/statm`).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// Measurements that need a process of their own; run by `ringloop-bench`, not by hand.
struct BenchChild: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-child", abstract: "Run one benchmark measurement in this process (used by bench).",
        shouldDisplay: false)

    enum Failure: Error, CustomStringConvertible {
        case child(String)
        var description: String {
            switch self {
            case .child(let side): "the \(side) measurement process failed"
            }
        }
    }

    @Argument(help: "The measurement: timers.schedule or clock.sleepers.")
    var measurement: String
    @Argument(help: "ours or foundation.")
    var side: String
    @Argument(help: "How many timers.")
    var count: Int
    @Argument(help: "How many of them to cancel, one at a time.")
    var cancels: Int

    func validate() throws {
        guard measurement == "timers.schedule" || measurement == "clock.sleepers" else {
            throw ValidationError("unknown measurement '\(measurement)'; valid: timers.schedule, clock.sleepers")
        }
        guard side == "ours" || side == "foundation" else { throw ValidationError("side must be ours or foundation, got '\(side)'") }
        guard count > 0, cancels > 0, cancels <= count else { throw ValidationError("need 0 < cancels <= count") }
    }

    /// Runs `measurement` for `side` in a child process of this executable and decodes the
    /// figures it prints, so that each side's resident-memory growth is its own.
    static func measure<Figures: Decodable>(
        _ measurement: String, side: String, count: Int, cancels: Int
    ) throws -> Figures {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["bench-child", measurement, side, "\(count)", "\(cancels)"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure.child(side) }
        return try JSONDecoder().decode(Figures.self, from: data)
    }

    func run() throws {
        if measurement == "clock.sleepers" {
            let figures = ExecutorBench.sleepers(side: side, count: count)
            print(String(decoding: try JSONEncoder().encode(figures), as: UTF8.self))
            return
        }
        let figures =
            side == "ours"
            ? TimerBench.oursSchedule(count: count, cancels: cancels)
            : TimerBench.foundationSchedule(count: count, cancels: cancels)
        print(String(decoding: try JSONEncoder().encode(figures), as: UTF8.self))
    }
}

/// Samples collected on one thread by callbacks the compiler must treat as `@Sendable`.
final class SampleBox: @unchecked Sendable {
    // @unchecked: filled and read on the one thread that runs the loop.
    var values: [Double] = []
    var count = 0
    init(capacity: Int) { values.reserveCapacity(capacity) }
}

extension Duration {
    var nanosecondsValue: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    var secondsValue: Double { Double(nanosecondsValue) / 1e9 }
}

/// A thread that spins until told to stop: the "loaded machine" of the loaded benchmarks.
final class Spinner: Sendable {
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)

    func spin() {
        while running.load(ordering: .relaxed) {}
        finished.signal()
    }

    /// Stops the spinning thread and waits until it has left its loop.
    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }
}
