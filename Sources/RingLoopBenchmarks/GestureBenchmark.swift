import RingLoop
import RingLoopEvdev
import RingLoopHID

/// Recognizer cost per touch frame without a device: a recording's frames decoded once,
/// then fed to ten recognizers on the calling thread.
public enum GestureBenchmark {
    /// Decodes `events` of the device `info` into digitizer frames.
    public static func frames(info: HIDDeviceInfo, events: [InputEvent]) -> [(MonotonicInstant, DigitizerFrame)] {
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        for event in events { decoder.feed(event, into: &out) }
        return out.compactMap { event in
            guard case .digitizer(let frame) = event.payload else { return nil }
            return (event.timestamp, frame)
        }
    }

    /// Feeds the frames `warmRounds` then `measuredRounds` times to ten recognizers;
    /// returns the frames fed and reports made in the measured rounds, which start right
    /// after `beforeMeasured`.
    public static func run(
        frames: [(MonotonicInstant, DigitizerFrame)], surface: GestureSurface, warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void = {}, action: @escaping (GestureEvent) -> Void
    ) -> (frames: Int, reports: Int) {
        GestureThroughput.run(
            frames: frames, surface: surface, warmRounds: warmRounds, measuredRounds: measuredRounds,
            beforeMeasured: beforeMeasured, action: action)
    }
}
