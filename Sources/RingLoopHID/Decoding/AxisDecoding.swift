import RingLoop
import RingLoopEvdev

/// A frame's absolute axes outside the multitouch slots (`EV_ABS`): each code goes where
/// one route, chosen once per device, says — a gamepad axis, an ``AxisEvent`` (pad rings
/// and strips, `ABS_MISC`…), the absolute pointer, or the pen, touch surface or motion
/// sensor, which report the values in their own events.
struct AxisDecoding {
    /// Where an absolute axis's values go.
    enum Route: UInt8 { case axisEvent, pen, touch, pointer, gamepad, motion }

    /// The families whose axes the frame changed.
    struct Changed: OptionSet {
        let rawValue: UInt8
        static let pen = Changed(rawValue: 1)
        static let touch = Changed(rawValue: 2)
        static let pointer = Changed(rawValue: 4)
        static let motion = Changed(rawValue: 8)
    }

    let device: HIDDeviceID
    /// Per `ABS_*` code (0…63).
    let routes: InlineArray<64, Route>
    /// Each absolute axis's range by code (`info.axes` without a hash per lookup).
    let ranges: [AbsoluteAxis?]
    /// The frame's values, in arrival order.
    var pending: [(UInt16, Int32)] = []

    init(info: HIDDeviceInfo, hasPen: Bool, hasTouch: Bool, isGamepad: Bool, isMotion: Bool) {
        device = info.id
        ranges = (0..<64).map { info.axes[UInt16($0)] }
        var routes = InlineArray<64, Route>(repeating: .axisEvent)
        let penAxes: Set<UInt16> = [
            Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_DISTANCE, Evdev.ABS_TILT_X, Evdev.ABS_TILT_Y,
        ]
        // Single-touch pointer emulation.
        let touchAxes: Set<UInt16> = [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_TOOL_WIDTH]
        for index in 0..<Int(Evdev.ABS_CNT) {
            let code = UInt16(index)
            if isGamepad {
                routes[index] = .gamepad
            } else if isMotion && MotionDecoding.axes.contains(code) {
                routes[index] = .motion
            } else if hasPen && penAxes.contains(code) {
                routes[index] = .pen
            } else if hasTouch && touchAxes.contains(code) {
                routes[index] = .touch
            } else if (code == Evdev.ABS_X || code == Evdev.ABS_Y) && info.deviceClass != .tabletPad {
                routes[index] = .pointer
            }
        }
        self.routes = routes
        pending.reserveCapacity(64)
    }

    /// Applies the frame's values to `axes` (the read ledger) in arrival order: gamepad
    /// axes and axis events go to `out`; returns the families whose axes changed.
    func finish(axes: inout AxisValues, at time: MonotonicInstant, into out: inout [HIDEvent]) -> Changed {
        var changed: Changed = []
        for (code, value) in pending where code < Evdev.ABS_CNT {
            axes[code] = value
            switch routes[Int(code)] {
            case .gamepad:
                let range = ranges[Int(code)] ?? AbsoluteAxis(minimum: 0, maximum: 1, resolution: 0)
                let normalized =
                    range.minimum < 0
                    ? Double(value) / Double(max(-Int64(range.minimum), Int64(range.maximum), 1))
                    : range.normalized(value)
                out.append(
                    HIDEvent(
                        device: device, timestamp: time,
                        payload: .gamepadAxis(GamepadAxisEvent(code: code, value: value, normalized: normalized))))
            case .pen: changed.insert(.pen)
            case .touch: changed.insert(.touch)
            case .pointer: changed.insert(.pointer)
            case .motion: changed.insert(.motion)
            case .axisEvent:
                let normalized = ranges[Int(code)].flatMap { $0.maximum > $0.minimum ? $0.normalized(value) : nil }
                out.append(
                    HIDEvent(
                        device: device, timestamp: time,
                        payload: .axis(AxisEvent(source: .absolute, code: code, value: value, normalized: normalized))))
            }
        }
        return changed
    }

    /// The absolute pointer's event, from `ABS_X` and `ABS_Y`.
    func pointer(_ axes: AxisValues, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        guard let rangeX = ranges[0], let rangeY = ranges[1] else { return }
        let x = axes[Evdev.ABS_X]
        let y = axes[Evdev.ABS_Y]
        out.append(
            HIDEvent(
                device: device, timestamp: time,
                payload: .absolutePointer(
                    AbsolutePointerEvent(x: x, y: y, normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y)))))
    }

    /// Forgets the frame being read.
    mutating func clearFrame() {
        if !pending.isEmpty { pending.removeAll(keepingCapacity: true) }
    }
}
