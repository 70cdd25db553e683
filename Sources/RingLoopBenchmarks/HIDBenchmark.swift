import RingLoop
import RingLoopEvdev
import RingLoopHID

/// Decode-and-dispatch throughput without a device: raw events from memory through the
/// frame decoder, the event queue and one handler call each, on the calling thread.
public enum HIDDecodeBenchmark {
    /// Feeds `events` (a device's raw stream) `rounds` times; returns HID events
    /// dispatched, and calls `beforeMeasuredRound` before the last round (after warming).
    public static func run(
        info: HIDDeviceInfo, events: [InputEvent], rounds: Int, beforeMeasuredRound: () -> Void = {},
        handler: (HIDEvent) -> Void
    ) -> Int {
        var decoder = FrameDecoder(info: info)
        var queue = HIDEventQueue(capacity: 4096)
        var output: [HIDEvent] = []
        output.reserveCapacity(256)
        var dispatched = 0
        for round in 0..<rounds {
            if round == rounds - 1 { beforeMeasuredRound() }
            for event in events {
                decoder.feed(event, into: &output)
                if !output.isEmpty {
                    for decoded in output { queue.push(decoded) }
                    output.removeAll(keepingCapacity: true)
                    while let next = queue.pop() {
                        callHandler(handler, next)
                        dispatched += 1
                    }
                }
            }
        }
        return dispatched
    }

    @inline(never)
    static func callHandler(_ handler: (HIDEvent) -> Void, _ event: HIDEvent) { handler(event) }

    /// A device description for the benchmark, classified from its capabilities.
    public static func info(
        name: String, codes: [UInt16: Set<UInt16>], properties: Set<UInt16>, axes: [UInt16: AbsoluteAxis]
    ) -> HIDDeviceInfo {
        HIDDeviceInfo.describing(name: name, codes: codes, axes: axes, properties: properties)
    }
}
