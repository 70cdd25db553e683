import ArgumentParser
import Foundation
import RingLoop
import RingLoopBenchmarks
import RingLoopToolSupport

/// One figure of a benchmark: ours, Foundation's where it has the same thing, and the
/// ratio ours / Foundation's.
struct BenchResult: Codable {
    var name: String
    var unit: String
    var ours: Double
    var foundation: Double?
    var ratio: Double?
    /// Other implementations measured in the same run, by name (`null` for one that
    /// could not run here, such as a peer that is not built).
    var peers: [String: Double?]?

    init(_ name: String, _ unit: String, ours: Double, foundation: Double? = nil, peers: [String: Double?]? = nil) {
        self.name = name
        self.unit = unit
        self.ours = ours
        self.foundation = foundation
        self.ratio = foundation.flatMap { $0 == 0 ? nil : ours / $0 }
        self.peers = peers
    }

    /// Writes `foundation` and `ratio` as `null` when absent, so every result has the same keys.
    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(unit, forKey: .unit)
        try container.encode(ours, forKey: .ours)
        try container.encode(foundation, forKey: .foundation)
        try container.encode(ratio, forKey: .ratio)
        try container.encode(peers, forKey: .peers)
    }
}

@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ringloop-bench",
        abstract: "Measure RingLoop side by side with Foundation's RunLoop, in one run.",
        // The subcommands are the benchmark's own children, hidden: the usage names none.
        usage: "ringloop-bench [--only <name>] [--quick] [--json] [--rounds <rounds>]",
        discussion: """
            Each benchmark runs ours and Foundation's (CFRunLoop on Linux) interleaved
            in the same process, A B A B for several rounds, and prints medians and the
            ratio ours / Foundation. Build in release mode for meaningful figures.

            Benchmarks: \(Bench.all.joined(separator: ", "))

            Examples:
              swift run -c release ringloop-bench
              swift run -c release ringloop-bench --only timer --json
              swift run -c release ringloop-bench --quick
            """,
        version: PackageVersion.current,
        subcommands: [BenchChild.self, BenchServer.self, BenchEchoClient.self]
    )

    static let all = [
        "wake", "source0", "timer.lateness", "timers.schedule", "timers.cancel", "idle", "hid.decode", "keys.text", "gestures", "motion",
        "gamepad",
        "screen", "pointer", "touchpad", "hid.e2e.pipe",
        "hid.e2e.fuse", "hid.scale",
        "wakecore", "executor.hop", "executor.jobs", "clock.sleep", "clock.sleepers", "io.echo", "io.close", "ports.named",
        "ports.named.send", "server",
        "server.fanout", "server.fanout.own_loops",
    ]

    @Option(help: "Run only the benchmarks whose name starts with this (\(Bench.all.joined(separator: ", "))).")
    var only: String?

    @Flag(help: "Smaller sizes and fewer rounds (under a minute).")
    var quick = false

    @Flag(help: "Print one JSON object: {\"results\": [...], \"machine\": {...}}.")
    var json = false

    @Option(help: "Rounds per benchmark (A B A B …); medians over rounds are reported.")
    var rounds: Int?

    @Option(help: .hidden)
    var scale: Double = 1

    func validate() throws {
        if let only, !Bench.all.contains(where: { $0.hasPrefix(only) }) {
            throw ValidationError("no benchmark starts with '\(only)'; valid: \(Bench.all.joined(separator: ", "))")
        }
        if !(scale > 0 && scale <= 1) { throw ValidationError("--scale must be in (0, 1], got \(scale)") }
        if let rounds, rounds < 1 || rounds > 100 {
            throw ValidationError("--rounds must be between 1 and 100, got \(rounds)")
        }
    }

    func selected(_ name: String) -> Bool { only.map { name.hasPrefix($0) } ?? true }

    func run() throws {
        BenchSize.scale = scale
        let rounds = self.rounds ?? (quick ? 2 : 3)
        var results: [BenchResult] = []
        func emit(_ new: [BenchResult]) {
            results += new
            if !json { for result in new { print(Self.row(result)) } }
        }
        if !json {
            print("benchmark                                     unit          ours   Foundation    ratio")
        }
        if selected("wake") && !(only ?? "").hasPrefix("wakecore") { emit(try LoopBench.wake(quick: quick, rounds: rounds)) }
        if selected("source0") { emit(LoopBench.throughput(quick: quick, rounds: rounds)) }
        if selected("timer.lateness") { emit(TimerBench.lateness(quick: quick, rounds: rounds)) }
        if selected("timers.schedule") { emit(try TimerBench.schedule(quick: quick, rounds: quick ? 1 : rounds)) }
        if selected("timers.cancel") { emit(try TimerBench.cancel(quick: quick, rounds: quick ? 1 : rounds)) }
        if selected("idle") { emit(TimerBench.idle(quick: quick)) }
        if selected("hid.decode") { emit(try HIDBench.decode(quick: quick, rounds: rounds)) }
        if selected("keys.text") { emit(try HIDBench.keyText(quick: quick, rounds: rounds)) }
        if selected("gestures") { emit(try HIDBench.gestures(quick: quick, rounds: rounds)) }
        if selected("motion") { emit(try MotionBench.results(quick: quick, rounds: rounds)) }
        if selected("gamepad") { emit(try GamepadBench.results(quick: quick, rounds: rounds)) }
        if selected("screen") { emit(try ScreenBench.results(quick: quick, rounds: rounds)) }
        if selected("pointer") { emit(try PointerBench.results(quick: quick, rounds: rounds)) }
        if selected("touchpad") { emit(try TouchpadBench.results(quick: quick, rounds: rounds)) }
        if selected("hid.e2e.pipe") { emit(HIDBench.pipeResults(quick: quick, rounds: rounds)) }
        if selected("hid.e2e.fuse") { emit(try HIDBench.endToEndResults(quick: quick, rounds: rounds)) }
        if selected("hid.scale") { emit(ScaleBench.results(quick: quick, rounds: rounds)) }
        if selected("wakecore") { emit(try WakeCoreBench.run(quick: quick, rounds: rounds)) }
        if selected("executor.hop") { emit(ExecutorBench.hops(quick: quick, rounds: rounds)) }
        if selected("executor.jobs") { emit(ExecutorBench.jobs(quick: quick, rounds: rounds)) }
        if selected("clock.sleep") && !(only ?? "").hasPrefix("clock.sleepers") {
            emit(ExecutorBench.sleepLateness(quick: quick, rounds: rounds))
        }
        if selected("clock.sleepers") { emit(try ExecutorBench.sleepers(quick: quick, rounds: quick ? 1 : rounds)) }
        if selected("io.echo") { emit(try IOBench.echo(quick: quick, rounds: rounds)) }
        if selected("io.close") { emit(try IOCloseBench.results(quick: quick, rounds: rounds)) }
        if selected("ports.named") { emit(try IOBench.ports(quick: quick, rounds: rounds)) }
        if selected("ports.named.send") { emit(try PortSendBench.results(quick: quick, rounds: rounds)) }
        if selected("ports.flood") { emit(try PortFloodBench.run(quick: quick)) }
        if (only ?? "").hasPrefix("server.fanout") {
            emit(
                try ServerBench.fanoutResults(
                    quick: quick, rounds: rounds, ownLoopsOnly: (only ?? "").hasPrefix("server.fanout.own_loops")))
        } else if selected("server") {
            emit(try ServerBench.results(quick: quick, rounds: rounds))
        }
        let machine = Self.machine()
        if !json {
            var footer = "machine: \(machine["cores"] ?? "?") cores, kernel \(machine["kernel"] ?? "?")"
            if let driver = machine["cpuidle"] { footer += ", cpuidle \(driver)" }
            if let poll = machine["guest_halt_poll_ns"] { footer += " (guest_halt_poll_ns \(poll))" }
            print(footer)
        } else {
            struct Output: Codable {
                var results: [BenchResult]
                var machine: [String: String]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(Output(results: results, machine: machine)), as: UTF8.self))
        }
    }

    static func row(_ result: BenchResult) -> String {
        let foundation = result.foundation.map { format($0) } ?? "—"
        let ratio = result.ratio.map { format($0, digits: 2) } ?? ""
        // A name past the column keeps one space before its unit.
        let nameColumn = result.name.padding(46) + (result.name.count >= 46 ? " " : "")
        var row =
            nameColumn + result.unit.padding(8) + format(result.ours).padding(12, left: true)
            + foundation.padding(13, left: true) + ratio.padding(9, left: true)
        for (name, figure) in (result.peers ?? [:]).sorted(by: { $0.key < $1.key }) {
            row += "   \(name) " + (figure.map { format($0) } ?? "not built")
        }
        return row
    }

    static func machine() -> [String: String] {
        var machine = [
            "cores": "\(ProcessInfo.processInfo.activeProcessorCount)",
            "kernel": kernelRelease(),
            "date": ISO8601DateFormatter().string(from: Date()),
        ]
        // How idle CPUs wait decides every wake-up figure (see IdleCPUSetting).
        let idle = IdleCPUSetting.current()
        machine["cpuidle"] = idle.driver
        machine["guest_halt_poll_ns"] = idle.guestHaltPollNanoseconds
        return machine
    }
}

/// Benchmark sizes, scaled down by the hidden `--scale` option (tests check the output's
/// shape on tiny sizes, never the figures).
enum BenchSize {
    nonisolated(unsafe) static var scale = 1.0
    static func of(_ size: Int) -> Int { max(20, Int(Double(size) * scale)) }
}

func format(_ value: Double, digits: Int = 1) -> String {
    if value.isNaN { return "nan" }
    if value == 0 { return "0" }
    if abs(value) >= 100_000 || abs(value) < 0.1 { return String(format: "%.3g", value) }
    return String(format: "%.\(digits)f", value)
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

/// Hands a closure and its result between two threads that run one after the other.
final class ThreadHandoff<T>: @unchecked Sendable {
    // @unchecked: written by one thread, read by the other after a semaphore.
    var body: (() -> T)?
    var value: T?
}

/// Runs `body` on this (the main) thread when `main`, else on a fresh thread.
func onThread<T>(main: Bool, _ body: @escaping () -> T) -> T {
    precondition(!main || Thread.isMainThread, "onThread(main: true) off the main thread")
    return main ? body() : onFreshThread(body)
}

/// Runs `body` on a new thread (so it gets a fresh loop of each kind) and returns its value.
func onFreshThread<T>(_ body: @escaping () -> T) -> T {
    let handoff = ThreadHandoff<T>()
    handoff.body = body
    let done = DispatchSemaphore(value: 0)
    let runner = Thread {
        handoff.value = handoff.body!()
        done.signal()
    }
    runner.stackSize = 8 << 20
    runner.start()
    done.wait()
    return handoff.value!
}

extension String {
    func padding(_ width: Int, left: Bool = false) -> String {
        count >= width
            ? self
            : (left ? String(repeating: " ", count: width - count) + self : self + String(repeating: " ", count: width - count))
    }
}

/// The wait core's wake-up mechanisms against the futex floor (no Foundation equivalent).
enum WakeCoreBench {
    static func run(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let samples = BenchSize.of(quick ? 500 : 5000)
        var results: [BenchResult] = []
        for (regime, gap) in [("busy", Duration.microseconds(50)), ("idle", Duration.microseconds(300))] {
            var table: [WakeUpBenchmark.Variant: [WakeUpBenchmark.Result]] = [:]
            for _ in 0..<rounds {
                for variant in WakeUpBenchmark.Variant.allCases {
                    table[variant, default: []].append(try WakeUpBenchmark.run(variant, samples: samples, gap: gap))
                }
            }
            for variant in WakeUpBenchmark.Variant.allCases {
                let runs = table[variant] ?? []
                let prefix = "wakecore.\(variant.rawValue).\(regime)"
                results.append(BenchResult("\(prefix).p50_us", "µs", ours: median(runs.map { percentile($0.latencies, 0.5) })))
                results.append(BenchResult("\(prefix).p99_us", "µs", ours: median(runs.map { percentile($0.latencies, 0.99) })))
                results.append(
                    BenchResult("\(prefix).sender_us", "µs", ours: median(runs.map { percentile($0.senderCosts, 0.5) })))
            }
        }
        return results
    }
}
