import RingLoop

/// Decode-and-dispatch throughput without a device: raw events from memory through the
/// frame decoder, the event queue and one handler call each, on the calling thread.
@_spi(Benchmarks)
public enum HIDDecodeBenchmark {
    /// Feeds `events` (a device's raw stream) `rounds` times; returns HID events
    /// dispatched, and calls `beforeMeasuredRound` before the last round (after warming).
    public static func run(
        info: HIDDeviceInfo, events: [RawInputEvent], rounds: Int, beforeMeasuredRound: () -> Void = {},
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
        name: String, codes: [UInt16: Set<UInt16>], properties: Set<UInt16>, axes: [UInt16: AxisRange]
    ) -> HIDDeviceInfo {
        let slots = axes[0x2f].map { Int($0.maximum) + 1 } ?? 0
        return HIDDeviceInfo(
            id: HIDDeviceID(rawValue: 1), path: "(memory)", name: name, busType: 0, vendor: 0, product: 0, version: 0,
            deviceClass: HIDDeviceInfo.classify(codes: codes, properties: properties), axes: axes, slotCount: slots,
            isProtocolA: slots == 0 && codes[3]?.contains(0x35) == true, isSemiMultitouch: properties.contains(3),
            hasHighResolutionWheel: codes[2]?.contains(0x0b) == true,
            hasHighResolutionHorizontalWheel: codes[2]?.contains(0x0c) == true, leds: codes[0x11] ?? [], codes: codes,
            properties: properties)
    }
}
