import RingLoop
import RingLoopEvdev
import RingLoopHID

/// Motion without a device: a recording's samples decoded once, then fed to a shake and
/// an orientation recognizer on the calling thread.
public enum MotionBenchmark {
    /// Decodes `events` of the device `info` into motion samples.
    public static func samples(info: HIDDeviceInfo, events: [InputEvent]) -> [(MonotonicInstant, MotionEvent)] {
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        for event in events { decoder.feed(event, into: &out) }
        return out.compactMap { event in
            guard case .motion(let sample) = event.payload else { return nil }
            return (event.timestamp, sample)
        }
    }

    /// Feeds the samples `warmRounds` then `measuredRounds` times to the recognizers;
    /// returns the samples fed and reports made in the measured rounds, which start right
    /// after `beforeMeasured`.
    public static func run(
        samples: [(MonotonicInstant, MotionEvent)], warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void = {}, action: @escaping (MonotonicInstant) -> Void
    ) -> (samples: Int, reports: Int) {
        MotionThroughput.run(
            samples: samples, warmRounds: warmRounds, measuredRounds: measuredRounds, beforeMeasured: beforeMeasured,
            action: action)
    }
}
