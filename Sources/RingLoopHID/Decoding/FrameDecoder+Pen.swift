import RingLoop
import RingLoopEvdev

// Pens and buttons: the pen's state as one event, tools and button numbers.
extension FrameDecoder {
    /// Keeps proximity and contact consistent at the end of a frame, as libinput does
    /// (`tablet_update_tool_state`): some screens (eGalax 0eef:0001 and others driven by
    /// usbtouchscreen or hid-generic) advertise `BTN_TOOL_PEN` but only ever send
    /// `BTN_TOUCH` and positions. A touch with no tool in proximity brings the default
    /// tool, the pen, into proximity; that implied tool leaves when the touch ends (or the
    /// device goes, see ``detach(at:into:)``). A tool the device names takes over from an
    /// implied one, and a named tool that leaves ends the contact with it.
    mutating func reconcilePenProximity(toolLeft: Bool) {
        if penTool == nil, penTouching {
            if toolLeft {
                penTouching = false
            } else {
                penTool = .pen
                implicitPenTool = true
            }
        } else if implicitPenTool, !penTouching {
            penTool = nil
            implicitPenTool = false
        }
    }

    func penEvent() -> PenEvent {
        let x = read.axes[Evdev.ABS_X]
        let y = read.axes[Evdev.ABS_Y]
        let none = AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        let rangeX = axisRanges[Int(Evdev.ABS_X)] ?? none
        let rangeY = axisRanges[Int(Evdev.ABS_Y)] ?? none
        let pressureRange = axisRanges[Int(Evdev.ABS_PRESSURE)] ?? none
        func tilt(_ code: UInt16) -> Double {
            let value = Double(read.axes[code])
            guard let range = axisRanges[Int(code)], range.resolution > 0 else { return value }
            return value / Double(range.resolution) * 180 / Double.pi  // units per radian → degrees
        }
        return PenEvent(
            tool: penTool ?? .pen, inProximity: penTool != nil, touching: penTouching, x: x, y: y,
            normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y),
            pressure: pressureRange.normalized(read.axes[Evdev.ABS_PRESSURE]), distance: read.axes[Evdev.ABS_DISTANCE],
            tiltX: tilt(Evdev.ABS_TILT_X),
            tiltY: tilt(Evdev.ABS_TILT_Y), barrelButtons: penButtons)
    }

    @inline(__always)
    func event(_ time: MonotonicInstant, _ payload: HIDEvent.Payload) -> HIDEvent {
        HIDEvent(device: deviceID, timestamp: time, payload: payload)
    }

    /// Mouse buttons count from `BTN_LEFT` (1 primary, 2 secondary, 3 middle, then
    /// side, extra…); every other button from `BTN_0` (`BTN_0` is 1, a pad's `BTN_BASE`
    /// 39).
    static func buttonNumber(_ code: UInt16) -> Int {
        switch code {
        case Evdev.BTN_MOUSE..<Evdev.BTN_JOYSTICK: Int(code - Evdev.BTN_MOUSE) + 1
        default: Int(code) - Int(Evdev.BTN_MISC) + 1
        }
    }

    static func penTool(_ code: UInt16) -> PenEvent.Tool {
        switch code {
        case Evdev.BTN_TOOL_RUBBER: .eraser
        case Evdev.BTN_TOOL_BRUSH: .brush
        case Evdev.BTN_TOOL_PENCIL: .pencil
        case Evdev.BTN_TOOL_AIRBRUSH: .airbrush
        case Evdev.BTN_TOOL_MOUSE: .mouse
        case Evdev.BTN_TOOL_LENS: .lens
        default: .pen
        }
    }
}
