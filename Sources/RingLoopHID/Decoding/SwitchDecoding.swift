import RingLoop
import RingLoopEvdev

/// A frame's switches (`EV_SW`): each change of a switch's state, applied to the read
/// ledger, is a ``SwitchEvent``.
struct SwitchDecoding {
    let device: HIDDeviceID
    /// The frame's values, in arrival order.
    var pending: [(UInt16, Int32)] = []

    init(info: HIDDeviceInfo) {
        device = info.id
        pending.reserveCapacity(8)
    }

    /// Applies the frame's switches to `switches` (the read ledger).
    func finish(switches: inout SmallCodeSet, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        for (code, value) in pending where switches.contains(code) != (value != 0) {
            switches.set(code, value != 0)
            out.append(HIDEvent(device: device, timestamp: time, payload: .switchChanged(SwitchEvent(code: code, isOn: value != 0))))
        }
    }

    /// Forgets the frame being read.
    mutating func clearFrame() {
        if !pending.isEmpty { pending.removeAll(keepingCapacity: true) }
    }
}
