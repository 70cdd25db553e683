import Dispatch
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// Motion coalescing: one motion event per device and pass, flushed at BeforeWaiting.
extension HIDEventSystem {
    // MARK: Motion coalescing

    /// Holds a motion event to merge with the next of its device; returns whether it was
    /// held. Pointer motion adds up; a touch frame whose contacts only moved replaces
    /// the held one (its positions are the newest), and so does a motion sensor's sample
    /// (counting the samples it stands for).
    func coalesce(_ event: HIDEvent) -> Bool {
        switch event.payload {
        case .pointerMotion(let dx, let dy):
            if case .pointerMotion(let heldX, let heldY)? = pendingMotion[event.device]?.payload {
                pendingMotion[event.device] = HIDEvent(
                    device: event.device, timestamp: event.timestamp, payload: .pointerMotion(dx: heldX &+ dx, dy: heldY &+ dy))
                return true
            }
        case .digitizer(let frame):
            let onlyMoves = (0..<frame.count).allSatisfy { frame[$0].phase == .moved || frame[$0].phase == .stationary }
            guard onlyMoves else { return false }
            if case .digitizer? = pendingMotion[event.device]?.payload {
                pendingMotion[event.device] = event
                return true
            }
        case .motion(var sample):
            // The newest sample stands for those of the pass; its count says how many.
            if case .motion(let held)? = pendingMotion[event.device]?.payload {
                sample.sampleCount &+= held.sampleCount
                pendingMotion[event.device] = HIDEvent(device: event.device, timestamp: event.timestamp, payload: .motion(sample))
                return true
            }
        default:
            return false
        }
        // Nothing of the same kind held for this device: flush what is (a different
        // kind), then hold this one.
        flushCoalesced(device: event.device)
        pendingMotion[event.device] = event
        pendingOrder.append(event.device)
        return true
    }

    /// Delivers held motion (of one device, or all) in the order it was first held.
    func flushCoalesced(device: HIDDeviceID? = nil) {
        guard !pendingMotion.isEmpty else { return }
        var remaining: [HIDDeviceID] = []
        for id in pendingOrder {
            if let device, device != id {
                remaining.append(id)
                continue
            }
            if let event = pendingMotion.removeValue(forKey: id) { dispatch(event) }
        }
        pendingOrder = remaining
    }

    /// Key repeat by loop timers: the kernel's repeats are dropped, and a key held down
    /// repeats after the delay at the interval until it goes up or its device goes away.
    /// Returns whether `event` itself is delivered.
}
