import CMallocCounter
import RingLoop
import RingLoopBenchmarks
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

/// Motion sensors, from memory: the cost of decoding a sample (a DualSense's frame of six
/// axes and MSC_TIMESTAMP through the decoder, queue and a handler) and of recognizing
/// shake and orientation on it, with allocations counted.
enum MotionBench {
    static let recordings = ["dualsense-rotation", "dualsense-shake", "dualsense-bump"]

    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        var inputs: [(HIDDeviceInfo, [InputEvent])] = []
        for name in recordings {
            let recording = try Recording.load(contentsOf: folder + "/motion/" + name + ".evemu")
            let description = recording.description!
            let info = HIDDeviceInfo(description: description)
            inputs.append((info, recording.events))
        }
        let target = BenchSize.of(quick ? 100_000 : 1_000_000)
        var decodeCost: [Double] = []
        var decodeAllocations: [Double] = []
        var recognizeCost: [Double] = []
        var recognizeAllocations: [Double] = []
        for _ in 0..<rounds {
            // Decoding: samples are frames (each ends with SYN_REPORT).
            var samples = 0
            var elapsed = 0.0
            var allocated: UInt = 0
            for (info, raw) in inputs {
                let frames = raw.filter(\.isSynReport).count
                let repeats = max(2, target / inputs.count / max(1, frames))
                var start = MonotonicInstant.now
                var before: UInt = 0
                var sink = 0.0
                _ = HIDDecodeBenchmark.run(
                    info: info, events: raw, rounds: repeats,
                    beforeMeasuredRound: {
                        start = .now
                        before = ringloop_malloc_count()
                    }
                ) { event in
                    if case .motion(let sample) = event.payload { sink += sample.acceleration.x }
                }
                elapsed += (MonotonicInstant.now - start).secondsValue
                allocated += ringloop_malloc_count() - before
                samples += frames * (repeats - 1)
                if sink.isNaN { print(sink) }
            }
            decodeCost.append(elapsed * 1e9 / Double(samples))
            decodeAllocations.append(Double(allocated) / Double(samples))
            // Recognizing: the decoded samples, one recording after another, round after round.
            var all: [(MonotonicInstant, MotionEvent)] = []
            for (info, raw) in inputs {
                let offset = (all.last?.0).map { $0 + .seconds(2) } ?? MonotonicInstant(nanoseconds: 1_000_000_000)
                let decoded = MotionBenchmark.samples(info: info, events: raw)
                guard let first = decoded.first?.0 else { continue }
                for (time, sample) in decoded { all.append((offset + (time - first), sample)) }
            }
            var start = MonotonicInstant.now
            var before: UInt = 0
            var sink: UInt64 = 0
            let (fed, _) = MotionBenchmark.run(
                samples: all, warmRounds: 2, measuredRounds: max(2, target / all.count),
                beforeMeasured: {
                    before = ringloop_malloc_count()
                    start = .now
                }
            ) { time in sink &+= time.nanoseconds }
            let spent = (MonotonicInstant.now - start).secondsValue
            let allocations = ringloop_malloc_count() - before  // before the appends below allocate
            recognizeCost.append(spent * 1e9 / Double(fed))
            recognizeAllocations.append(Double(allocations) / Double(fed))
            if sink == 1 { print(sink) }
        }
        var results = [
            BenchResult("motion.decode.ns_per_sample", "ns", ours: median(decodeCost)),
            BenchResult("motion.recognizers.ns_per_sample", "ns", ours: median(recognizeCost)),
        ]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult("motion.decode.allocs_per_sample", "allocs", ours: median(decodeAllocations)))
            results.append(BenchResult("motion.recognizers.allocs_per_sample", "allocs", ours: median(recognizeAllocations)))
        }
        return results
    }
}
