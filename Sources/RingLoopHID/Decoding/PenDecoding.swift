import RingLoop
import RingLoopEvdev

/// A device's pen: the tool in proximity, the tip, the barrel buttons (from the frame's
/// keys) and its axes (`ABS_X`, `ABS_Y`, pressure, distance, tilt), reported as one
/// ``PenEvent`` at the end of a frame that changed any of them.
struct PenDecoding {
    /// The device has a pen (`BTN_TOOL_PEN` or `BTN_STYLUS`, and is not a tablet pad).
    let isPresent: Bool
    let rangeX: AbsoluteAxis
    let rangeY: AbsoluteAxis
    let pressureRange: AbsoluteAxis
    let tiltRangeX: AbsoluteAxis?
    let tiltRangeY: AbsoluteAxis?

    /// The tool in proximity.
    private(set) var currentTool: PenEvent.Tool?
    private var buttons: UInt8 = 0
    private var touching = false
    /// The pen is in proximity only because it touched (the device names no tool).
    private var implicitTool = false
    /// The frame changed a tool, the tip or a button.
    private var changed = false
    /// The frame took a named tool out of proximity.
    private var toolLeft = false

    init(info: HIDDeviceInfo, isPresent: Bool) {
        self.isPresent = isPresent
        let none = AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        rangeX = info.axes[Evdev.ABS_X] ?? none
        rangeY = info.axes[Evdev.ABS_Y] ?? none
        pressureRange = info.axes[Evdev.ABS_PRESSURE] ?? none
        tiltRangeX = info.axes[Evdev.ABS_TILT_X]
        tiltRangeY = info.axes[Evdev.ABS_TILT_Y]
    }

    /// A tool came into proximity or left it.
    mutating func tool(_ tool: PenEvent.Tool, isNear: Bool) {
        if isNear {
            currentTool = tool
        } else if currentTool == tool {
            currentTool = nil
            toolLeft = true
        }
        implicitTool = false
        changed = true
    }

    /// The tip touched or lifted.
    mutating func tip(isDown: Bool) {
        touching = isDown
        changed = true
    }

    /// A barrel button (bit 1, 2 or 4) went down or up.
    mutating func button(_ bit: UInt8, isDown: Bool) {
        if isDown { buttons |= bit } else { buttons &= ~bit }
        changed = true
    }

    /// The frame changed a tool, the tip or a button.
    var hasChanged: Bool { changed }

    /// At the end of a frame that changed the pen or one of its axes: the pen's event.
    mutating func finish(axes: borrowing AxisValues, at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        if changed { reconcileProximity() }
        out.append(HIDEvent(device: device, timestamp: time, payload: .pen(event(axes))))
    }

    /// Keeps proximity and contact consistent at the end of a frame, as libinput does
    /// (`tablet_update_tool_state`): some screens (eGalax 0eef:0001 and others driven by
    /// usbtouchscreen or hid-generic) advertise `BTN_TOOL_PEN` but only ever send
    /// `BTN_TOUCH` and positions. A touch with no tool in proximity brings the default
    /// tool, the pen, into proximity; that implied tool leaves when the touch ends (or the
    /// device goes, see ``leave(axes:at:device:into:)``). A tool the device names takes
    /// over from an implied one, and a named tool that leaves ends the contact with it.
    private mutating func reconcileProximity() {
        if currentTool == nil, touching {
            if toolLeft {
                touching = false
            } else {
                currentTool = .pen
                implicitTool = true
            }
        } else if implicitTool, !touching {
            currentTool = nil
            implicitTool = false
        }
    }

    /// The device is gone: a pen in proximity leaves it.
    mutating func leave(axes: borrowing AxisValues, at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        guard currentTool != nil else { return }
        currentTool = nil
        implicitTool = false
        touching = false
        buttons = 0
        out.append(HIDEvent(device: device, timestamp: time, payload: .pen(event(axes))))
    }

    /// Forgets the frame being read.
    mutating func clearFrame() {
        changed = false
        toolLeft = false
    }

    func event(_ axes: borrowing AxisValues) -> PenEvent {
        let x = axes[Evdev.ABS_X]
        let y = axes[Evdev.ABS_Y]
        func tilt(_ code: UInt16, _ range: AbsoluteAxis?) -> Double {
            let value = Double(axes[code])
            guard let range, range.resolution > 0 else { return value }
            return value / Double(range.resolution) * 180 / Double.pi  // units per radian → degrees
        }
        return PenEvent(
            tool: currentTool ?? .pen, inProximity: currentTool != nil, touching: touching, x: x, y: y,
            normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y),
            pressure: pressureRange.normalized(axes[Evdev.ABS_PRESSURE]), distance: axes[Evdev.ABS_DISTANCE],
            tiltX: tilt(Evdev.ABS_TILT_X, tiltRangeX), tiltY: tilt(Evdev.ABS_TILT_Y, tiltRangeY), barrelButtons: buttons)
    }
}
