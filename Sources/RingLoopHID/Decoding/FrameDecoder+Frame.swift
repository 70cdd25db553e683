import RingLoop
import RingLoopEvdev

// The end of a frame: each family's events, in the order a handler expects.
extension FrameDecoder {
    /// `SYN_REPORT`: applies the frame to the read ledger and emits its events — keys and
    /// buttons, relative motion and scrolling, absolute axes, a motion sample, the pen,
    /// the touch surface's frame, the absolute pointer, switches.
    mutating func finishFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        if !keys.pending.isEmpty { keys.finish(keys: &read.keys, pen: &pen, touch: &touch, at: time, into: &out) }
        relative.finish(at: time, into: &out)
        let changed = axes.finish(axes: &read.axes, at: time, into: &out)
        if motion != nil, changed.contains(.motion) || motion?.pendingTimestamp != nil {
            out.append(HIDEvent(device: deviceID, timestamp: time, payload: .motion(motion!.sample(read.axes, at: time))))
        }
        if pen.isPresent, pen.hasChanged || changed.contains(.pen) {
            pen.finish(axes: read.axes, at: time, device: deviceID, into: &out)
        }
        if touch.isPresent {
            touch.finish(
                slots: read.contacts.slots, axes: read.axes, axisChanged: changed.contains(.touch), at: time, device: deviceID, into: &out)
        }
        if changed.contains(.pointer) { axes.pointer(read.axes, at: time, into: &out) }
        switches.finish(switches: &read.switches, at: time, into: &out)
        clearPending()
    }

    /// Mouse buttons count from `BTN_LEFT`, every other button from `BTN_0`
    /// (``KeyDecoding/buttonNumber(_:)``).
    static func buttonNumber(_ code: UInt16) -> Int { KeyDecoding.buttonNumber(code) }
}
