import ArgumentParser
@_spi(Benchmarks) import RingLoop

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure RingLoop's performance (release builds only give meaningful figures).",
        discussion: """
            Benchmarks available so far:
              wakecore   cross-thread wake-up of a sleeping wait core: eventfd + multishot
                         poll, ringless MSG_RING and MSG_RING from the sender's own ring,
                         against the raw futex floor, with the loop recently busy (50 µs
                         between wake-ups) and idle (300 µs).

            Example:
              swift run -c release ringloop bench --only wakecore
            """
    )

    @Option(help: "Run only this benchmark. Valid: wakecore.")
    var only: String?

    @Flag(help: "Fewer samples (finishes in a few seconds).")
    var quick = false

    @Option(help: "Rounds per mechanism; the medians of the rounds' percentiles are printed.")
    var rounds = 3

    func validate() throws {
        if let only, only != "wakecore" {
            throw ValidationError("unknown benchmark '\(only)'; valid: wakecore")
        }
        if rounds < 1 || rounds > 100 {
            throw ValidationError("--rounds must be between 1 and 100, got \(rounds)")
        }
    }

    func run() throws {
        let samples = quick ? 500 : 5000
        print("wakecore: \(samples) wake-ups per round, \(rounds) rounds interleaved; µs, median over rounds")
        print("regime  mechanism              p50      p99      max   sender p50")
        for (regime, gap) in [("busy", Duration.microseconds(50)), ("idle", Duration.microseconds(300))] {
            var table: [WakeUpBenchmark.Variant: [WakeUpBenchmark.Result]] = [:]
            for _ in 0..<rounds {
                for variant in WakeUpBenchmark.Variant.allCases {
                    do {
                        table[variant, default: []].append(try WakeUpBenchmark.run(variant, samples: samples, gap: gap))
                    } catch {
                        print("  \(variant.rawValue): \(error)")
                    }
                }
            }
            for variant in WakeUpBenchmark.Variant.allCases {
                guard let results = table[variant], !results.isEmpty else { continue }
                func median(_ f: (WakeUpBenchmark.Result) -> Double) -> Double {
                    let values = results.map(f).sorted()
                    return values[values.count / 2]
                }
                let p50 = median { percentile($0.latencies, 0.50) }
                let p99 = median { percentile($0.latencies, 0.99) }
                let max = median { $0.latencies.max() ?? 0 }
                let cost = median { percentile($0.senderCosts, 0.50) }
                print(
                    "\(regime.padding(7)) \(variant.rawValue.padding(20)) \(format(p50)) \(format(p99)) \(format(max))   \(format(cost))"
                )
            }
        }
    }
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.down)))
    return sorted[index]
}

func format(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return "\(rounded)".padding(8, left: true)
}

extension String {
    func padding(_ width: Int, left: Bool = false) -> String {
        count >= width ? self : (left ? String(repeating: " ", count: width - count) + self : self + String(repeating: " ", count: width - count))
    }
}
