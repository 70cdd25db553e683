import CMallocCounter
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

/// The touchpad stage's interpreter, from memory: frames of ten contacts (and of one and
/// two, the pointer's and scrolling's paths) on the ELAN precision touchpad that the
/// kernel's hid-multitouch made (devices/kernel), with allocations counted. Goal (issue
/// 44): well under the gesture recognizers' microsecond per frame, none in steady state.
enum TouchpadBench {
    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        let recording = try Recording.load(contentsOf: folder + "/kernel/touchpad-elan-04f3-3045.evemu")
        let device = HIDDeviceInfo(description: recording.description!)
        let target = BenchSize.of(quick ? 50_000 : 500_000)
        var results: [BenchResult] = []
        for contacts in [10, 2, 1] {
            let frames = TouchpadThroughput.frames(contacts: contacts)
            var costs: [Double] = []
            var allocations: [Double] = []
            for _ in 0..<rounds {
                var start = MonotonicInstant.now
                var before: UInt = 0
                let measuredRounds = max(2, target / frames.count)
                let (fed, actions) = TouchpadThroughput.run(
                    frames: frames, device: device, warmRounds: 2, measuredRounds: measuredRounds,
                    beforeMeasured: {
                        before = ringloop_malloc_count()
                        start = .now
                    })
                let spent = (MonotonicInstant.now - start).secondsValue
                let allocated = ringloop_malloc_count() - before
                costs.append(spent * 1e9 / Double(fed))
                allocations.append(Double(allocated) / Double(fed))
                if actions < 0 { print(actions) }
            }
            let name = "touchpad.frame\(contacts)"
            results.append(BenchResult(name + ".ns_per_frame", "ns", ours: median(costs)))
            if ringloop_malloc_counting() != 0 {
                results.append(BenchResult(name + ".allocs_per_frame", "allocs", ours: median(allocations)))
            }
        }
        return results
    }
}
