import RingLoop
import RingLoopEvdev

/// The decode-and-dispatch path of the chain (frame decoder → event queue → one handler
/// call per event) run over events from memory, for `ringloop-bench`'s `hid.decode`. It
/// lives here, with package access, so the measured path is compiled as the chain's own
/// is (one module, its calls inlined); from another module every decoder and queue call
/// would cross a module boundary the product never crosses.
package enum DecodeThroughput {
    /// Feeds `events` `rounds` times; returns HID events dispatched, and calls
    /// `beforeMeasuredRound` after the first round (the warm-up): the rest are measured.
    package static func run(
        info: HIDDeviceInfo, events: [InputEvent], rounds: Int, beforeMeasuredRound: () -> Void,
        handler: (HIDEvent) -> Void
    ) -> Int {
        var decoder = FrameDecoder(info: info)
        var queue = HIDEventQueue(capacity: 4096)
        var output: [HIDEvent] = []
        output.reserveCapacity(256)
        var dispatched = 0
        for round in 0..<rounds {
            if round == 1 { beforeMeasuredRound() }
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
}
