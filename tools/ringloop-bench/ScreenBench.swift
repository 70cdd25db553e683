import CMallocCounter
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

/// The screen-mapping stage's core, from memory: a touchscreen recording's contacts
/// (devices/touchscreen-multitouch.evemu) and a pen's positions (devices/pen-tablet.evemu) through
/// `ScreenMapper.process` at 1080x1920@90 with a non-trivial calibration, with
/// allocations counted. Goal (issue 43): under 100 ns per contact, none in steady state.
enum ScreenBench {
    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        var events: [HIDEvent] = []
        for name in ["touchscreen-multitouch", "pen-tablet"] {
            let recording = try Recording.load(contentsOf: folder + "/" + name + ".evemu")
            var decoder = FrameDecoder(info: HIDDeviceInfo(description: recording.description!))
            for event in recording.events { decoder.feed(event, into: &events) }
        }
        let mapping = ScreenMapping(
            screen: try ScreenDescription(parsing: "1080x1920@90"),
            calibration: try CalibrationMatrix(parsing: "1.02 0.01 -0.01 -0.02 0.98 0.02"))
        let target = BenchSize.of(quick ? 200_000 : 2_000_000)
        var results: [BenchResult] = []
        for (name, throughStage) in [("screen.map", false), ("screen.stage", true)] {
            results += measure(name, events: events, mapping: mapping, throughStage: throughStage, target: target, rounds: rounds)
        }
        return results
    }

    static func measure(
        _ name: String, events: [HIDEvent], mapping: ScreenMapping, throughStage: Bool, target: Int, rounds: Int
    ) -> [BenchResult] {
        var costs: [Double] = []
        var allocations: [Double] = []
        for _ in 0..<rounds {
            var start = MonotonicInstant.now
            var before: UInt = 0
            let probe = ScreenMappingThroughput.run(
                events: events, mapping: mapping, throughStage: throughStage, warmRounds: 1, measuredRounds: 1
            ) {}
            let measuredRounds = max(2, target / max(1, probe.positions))
            let (positions, checksum) = ScreenMappingThroughput.run(
                events: events, mapping: mapping, throughStage: throughStage, warmRounds: 2, measuredRounds: measuredRounds,
                beforeMeasured: {
                    before = ringloop_malloc_count()
                    start = .now
                })
            let spent = (MonotonicInstant.now - start).secondsValue
            let allocated = ringloop_malloc_count() - before
            costs.append(spent * 1e9 / Double(positions))
            allocations.append(Double(allocated) / Double(positions))
            if checksum.isNaN { print(checksum) }
        }
        var results = [BenchResult(name + ".ns_per_contact", "ns", ours: median(costs))]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult(name + ".allocs_per_contact", "allocs", ours: median(allocations)))
        }
        return results
    }
}
