import RingLoop
import RingLoopEvdev

/// A frame's relative axes (`EV_REL`): motion summed into one pointer event, wheels into
/// one scroll (the high-resolution stream where the device has one, 120 per detent), the
/// dial, and every other relative axis as an ``AxisEvent``.
struct RelativeDecoding {
    let device: HIDDeviceID
    let hasHighResolutionWheel: Bool
    let hasHighResolutionHorizontalWheel: Bool

    // The frame being read.
    private var x: Int32 = 0
    private var y: Int32 = 0
    private var wheel: Int32 = 0
    private var horizontalWheel: Int32 = 0
    private var wheelHiRes: Int32 = 0
    private var horizontalWheelHiRes: Int32 = 0
    private var dial: Int32 = 0
    private var others: [(UInt16, Int32)] = []

    init(info: HIDDeviceInfo) {
        device = info.id
        hasHighResolutionWheel = info.hasHighResolutionWheel
        hasHighResolutionHorizontalWheel = info.hasHighResolutionHorizontalWheel
        others.reserveCapacity(8)
    }

    mutating func feed(_ code: UInt16, _ value: Int32) {
        switch code {
        case Evdev.REL_X: x &+= value
        case Evdev.REL_Y: y &+= value
        case Evdev.REL_HWHEEL: horizontalWheel &+= value
        case Evdev.REL_WHEEL: wheel &+= value
        case Evdev.REL_DIAL: dial &+= value
        case Evdev.REL_WHEEL_HI_RES: wheelHiRes &+= value
        case Evdev.REL_HWHEEL_HI_RES: horizontalWheelHiRes &+= value
        default: others.append((code, value))
        }
    }

    /// At the end of a frame: pointer motion, scroll, the dial, the other axes.
    func finish(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        func event(_ payload: HIDEvent.Payload) { out.append(HIDEvent(device: device, timestamp: time, payload: payload)) }
        if x != 0 || y != 0 { event(.pointerMotion(PointerMotionEvent(dx: x, dy: y))) }
        // Hi-res streams count; the low-res events of the same notches are not added again.
        let vertical = hasHighResolutionWheel ? Double(wheelHiRes) / 120 : Double(wheel)
        let horizontal = hasHighResolutionHorizontalWheel ? Double(horizontalWheelHiRes) / 120 : Double(horizontalWheel)
        if vertical != 0 || horizontal != 0 {
            event(
                .scroll(
                    ScrollEvent(
                        vertical: vertical, horizontal: horizontal,
                        isHighResolution: hasHighResolutionWheel || hasHighResolutionHorizontalWheel)))
        }
        if dial != 0 { event(.dial(dial)) }
        for (code, value) in others where value != 0 {
            event(.axis(AxisEvent(source: .relative, code: code, value: value, normalized: nil)))
        }
    }

    /// Forgets the frame being read.
    mutating func clearFrame() {
        if !others.isEmpty { others.removeAll(keepingCapacity: true) }
        x = 0
        y = 0
        wheel = 0
        horizontalWheel = 0
        wheelHiRes = 0
        horizontalWheelHiRes = 0
        dial = 0
    }
}
