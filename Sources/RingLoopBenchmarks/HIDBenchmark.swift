import RingLoop
import RingLoopEvdev
import RingLoopHID

/// Decode-and-dispatch throughput without a device: raw events from memory through the
/// frame decoder, the event queue and one handler call each, on the calling thread.
public enum HIDDecodeBenchmark {
    /// Feeds `events` (a device's raw stream) `rounds` times (at least 2); returns HID
    /// events dispatched, and calls `beforeMeasuredRound` after the first round (the
    /// warm-up): the other rounds are the measured ones.
    public static func run(
        info: HIDDeviceInfo, events: [InputEvent], rounds: Int, beforeMeasuredRound: () -> Void = {},
        handler: (HIDEvent) -> Void
    ) -> Int {
        DecodeThroughput.run(
            info: info, events: events, rounds: rounds, beforeMeasuredRound: beforeMeasuredRound, handler: handler)
    }
}
