/// Motion coalescing: the pointer motion, touch moves and motion-sensor samples of one
/// loop pass become one event per device, passed on when the loop is about to wait (as
/// UIKit coalesces touches for its gesture observer at BeforeWaiting). Any other event of
/// a device first passes on what is held for it, so order holds.
final class CoalescingStage: HIDEventStage {
    private var pending: [HIDDeviceID: HIDEvent] = [:]
    /// Devices in the order their held event was first held.
    private var order: [HIDDeviceID] = []

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        if hold(event, emit: emit) { return }
        flush(device: event.device, emit: emit)
        emit(event)
    }

    func beforeWaiting(emit: (HIDEvent) -> Void) { flush(device: nil, emit: emit) }

    func remove(emit: (HIDEvent) -> Void) { flush(device: nil, emit: emit) }

    /// Holds a motion event to merge with the next of its device; returns whether it was
    /// held. Pointer motion adds up; a touch frame whose contacts only moved replaces the
    /// held one (its positions are the newest), and so does a motion sensor's sample
    /// (counting the samples it stands for).
    private func hold(_ event: HIDEvent, emit: (HIDEvent) -> Void) -> Bool {
        switch event.payload {
        case .pointerMotion(var motion):
            // The deltas add up; the cursor is where the newest motion left it.
            if case .pointerMotion(let held)? = pending[event.device]?.payload {
                motion.dx = held.dx &+ motion.dx
                motion.dy = held.dy &+ motion.dy
                motion.acceleratedDX += held.acceleratedDX
                motion.acceleratedDY += held.acceleratedDY
                motion.unacceleratedDX += held.unacceleratedDX
                motion.unacceleratedDY += held.unacceleratedDY
                pending[event.device] = HIDEvent(device: event.device, timestamp: event.timestamp, payload: .pointerMotion(motion))
                return true
            }
        case .digitizer(let frame):
            let onlyMoves = (0..<frame.count).allSatisfy { frame[$0].phase == .moved || frame[$0].phase == .stationary }
            guard onlyMoves else { return false }
            if case .digitizer? = pending[event.device]?.payload {
                pending[event.device] = event
                return true
            }
        case .motion(var sample):
            // The newest sample stands for those of the pass; its count says how many.
            if case .motion(let held)? = pending[event.device]?.payload {
                sample.sampleCount &+= held.sampleCount
                pending[event.device] = HIDEvent(device: event.device, timestamp: event.timestamp, payload: .motion(sample))
                return true
            }
        default:
            return false
        }
        // Nothing of the same kind held for this device: pass on what is (a different
        // kind), then hold this one.
        flush(device: event.device, emit: emit)
        pending[event.device] = event
        order.append(event.device)
        return true
    }

    /// Passes on held motion (of one device, or all) in the order it was first held.
    private func flush(device: HIDDeviceID?, emit: (HIDEvent) -> Void) {
        guard !pending.isEmpty else { return }
        var remaining: [HIDDeviceID] = []
        for id in order {
            if let device, device != id {
                remaining.append(id)
                continue
            }
            if let event = pending.removeValue(forKey: id) { emit(event) }
        }
        order = remaining
    }
}
