import CMallocCounter
import RingLoop
import RingLoopBenchmarks
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

/// The standard gamepad, from memory: the cost of one raw key or axis through
/// ``GamepadLayout`` (SDL's scaling, the mapping's bindings, dead zones, the handler of
/// what it makes), with allocations counted. The DualShock 4's hardware recording (sticks
/// held in the hand: every report moves them) and the Xbox 360 pad's, each with the
/// mapping its SDL GUID selects in the bundled database.
enum GamepadBench {
    static let recordings = ["kernel/dualshock4-usb-gamepad.evemu", "gamepad.evemu"]

    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        let database = SDLMappingDatabase.bundled(hints: [:])
        var inputs: [(GamepadLayout, [InputEvent])] = []
        for name in recordings {
            let recording = try Recording.load(contentsOf: folder + "/" + name)
            let info = HIDDeviceInfo(description: recording.description!)
            guard let match = database.match(for: info) else { continue }
            inputs.append((GamepadLayout(device: info, mapping: match.mapping), recording.events))
        }
        let target = BenchSize.of(quick ? 200_000 : 2_000_000)
        var cost: [Double] = []
        var allocations: [Double] = []
        for _ in 0..<rounds {
            var fed = 0
            var elapsed = 0.0
            var allocated: UInt = 0
            for (layout, events) in inputs {
                var start = MonotonicInstant.now
                var before: UInt = 0
                var sink = 0.0
                let (count, _) = GamepadBenchmark.run(
                    layout: layout, events: events, warmRounds: 2, measuredRounds: max(2, target / inputs.count / max(1, events.count)),
                    beforeMeasured: {
                        before = ringloop_malloc_count()
                        start = .now
                    }
                ) { event in sink += event.value }
                elapsed += (MonotonicInstant.now - start).secondsValue
                allocated += ringloop_malloc_count() - before
                fed += count
                if sink.isNaN { print(sink) }
            }
            cost.append(elapsed * 1e9 / Double(fed))
            allocations.append(Double(allocated) / Double(fed))
        }
        var results = [BenchResult("gamepad.layout.ns_per_event", "ns", ours: median(cost))]
        if ringloop_malloc_counting() != 0 {
            results.append(BenchResult("gamepad.layout.allocs_per_event", "allocs", ours: median(allocations)))
        }
        return results
    }
}
