import CMallocCounter
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

/// The pointer stage, from memory: a real mouse's recording (devices/real's PS/2 Generic
/// Mouse: 53 s of motion and clicks) through the chain's `PointerStage` with libinput's
/// default adaptive profile, the cursor on a 1920×1080 screen and debouncing, with
/// allocations counted; and a real touchpad's one-finger motion through the touchpad
/// curve (`pointer.stage.touchpad.adaptive`). Goal (issue 44): under 200 ns per event,
/// none in steady state.
enum PointerBench {
    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        guard let folder = bundledRecordingsFolder(nil) else { return [] }
        let mice = folder + "/real/evemu-devices/mice/"
        let recording = try Recording.load(description: mice + "PS2 Generic Mouse.desc", events: mice + "PS2 Generic Mouse.events")
        var decoder = FrameDecoder(info: HIDDeviceInfo(description: recording.description!))
        var events: [HIDEvent] = []
        for event in recording.events { decoder.feed(event, into: &events) }
        let screen = try ScreenDescription(width: 1920, height: 1080)
        let target = BenchSize.of(quick ? 200_000 : 2_000_000)
        // A touchpad's motion: devices/real's Synaptics finger moving for 4.6 s, made
        // pointer motion by the touchpad interpreter beforehand (only the pointer stage's
        // touchpad curve is measured).
        let touchpads = folder + "/real/evemu-devices/touchpads/"
        let pad = try Recording.load(
            description: touchpads + "SynPS2 Synaptics TouchPad.desc", events: touchpads + "SynPS2 Synaptics TouchPad.leftmove.events")
        let padInfo = HIDDeviceInfo(description: pad.description!)
        var padDecoder = FrameDecoder(info: padInfo)
        var padFrames: [HIDEvent] = []
        for event in pad.events { padDecoder.feed(event, into: &padFrames) }
        let padMotions = TouchpadMotionMaker.motions(of: padFrames, device: padInfo)
        var results: [BenchResult] = []
        for (name, profile, input, isTouchpad) in [
            ("pointer.stage.adaptive", AccelerationProfile.adaptive, events, false), ("pointer.stage.flat", .flat, events, false),
            ("pointer.stage.touchpad.adaptive", .adaptive, padMotions, true),
        ] {
            let events = input
            let settings = try PointerSettings(acceleration: PointerAcceleration(profile: profile, speed: 0.3))
            var costs: [Double] = []
            var allocations: [Double] = []
            for _ in 0..<rounds {
                var start = MonotonicInstant.now
                var before: UInt = 0
                let measuredRounds = max(2, target / max(1, events.count))
                let (count, checksum) = PointerThroughput.run(
                    events: events, settings: settings, screen: screen, touchpad: isTouchpad, warmRounds: 2, measuredRounds: measuredRounds,
                    beforeMeasured: {
                        before = ringloop_malloc_count()
                        start = .now
                    })
                let spent = (MonotonicInstant.now - start).secondsValue
                let allocated = ringloop_malloc_count() - before
                costs.append(spent * 1e9 / Double(count))
                allocations.append(Double(allocated) / Double(count))
                if checksum.isNaN { print(checksum) }
            }
            results.append(BenchResult(name + ".ns_per_event", "ns", ours: median(costs)))
            if ringloop_malloc_counting() != 0 {
                results.append(BenchResult(name + ".allocs_per_event", "allocs", ours: median(allocations)))
            }
        }
        return results
    }
}
