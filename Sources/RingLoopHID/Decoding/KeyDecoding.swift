import RingLoop
import RingLoopEvdev

/// A frame's keys and buttons (`EV_KEY`): each code goes where one route, chosen once per
/// device, says — a key event (with the modifiers held), a button, a gamepad button, or
/// the state of the device's pen or touch surface (tools, the tip, finger counts, a
/// touchpad's click), which those families report in their own events.
struct KeyDecoding {
    /// Where a key code's changes go.
    enum Route: UInt8 {
        /// A keyboard, consumer or system key: a ``KeyEvent``.
        case key
        /// A ``ButtonEvent``.
        case button
        /// A ``GamepadButtonEvent``.
        case gamepadButton
        /// A touchpad's `BTN_LEFT`: a button, and the digitizer frame's `buttonDown`.
        case touchpadClick
        /// A pen tool (`BTN_TOOL_PEN` … `AIRBRUSH`, `MOUSE`, `LENS`) coming or going.
        case penTool
        /// A barrel button (`BTN_STYLUS`, `2`, `3`).
        case penButton
        /// `BTN_TOUCH`: the pen's tip while a pen is near (or there is no touch surface),
        /// else the touch surface's contact.
        case tip
        /// `BTN_TOOL_FINGER` … `QUINTTAP`: how many fingers the surface counts.
        case fingerTool
    }

    let device: HIDDeviceID
    /// Per key code (`KEY_CNT`).
    let routes: InlineArray<768, Route>
    /// The modifiers held, for key events.
    var modifiers: KeyModifiers = []
    /// The frame's key events, in arrival order (value 2: a repeat).
    var pending: [(UInt16, Int32)] = []

    init(info: HIDDeviceInfo, hasPen: Bool, hasTouch: Bool, isGamepad: Bool) {
        device = info.id
        var routes = InlineArray<768, Route>(repeating: .key)
        for index in 0..<Int(Evdev.KEY_CNT) {
            routes[index] = Self.route(UInt16(index), info: info, hasPen: hasPen, hasTouch: hasTouch, isGamepad: isGamepad)
        }
        self.routes = routes
        pending.reserveCapacity(32)
    }

    static func route(_ code: UInt16, info: HIDDeviceInfo, hasPen: Bool, hasTouch: Bool, isGamepad: Bool) -> Route {
        switch code {
        case Evdev.BTN_LEFT...Evdev.BTN_TASK:
            return info.deviceClass == .touchpad && code == Evdev.BTN_LEFT ? .touchpadClick : .button
        // BTN_0…BTN_9 (pads, remotes), further mouse buttons
        case Evdev.BTN_MISC..<Evdev.BTN_MOUSE, Evdev.BTN_TASK + 1..<Evdev.BTN_JOYSTICK:
            return .button
        case Evdev.BTN_JOYSTICK..<Evdev.BTN_DIGI, Evdev.BTN_TRIGGER_HAPPY1...Evdev.BTN_TRIGGER_HAPPY40,
            Evdev.BTN_DPAD_UP...Evdev.BTN_DPAD_RIGHT:  // joystick, gamepad, trigger-happy, d-pad
            if isGamepad || code >= Evdev.BTN_TRIGGER_HAPPY1 && info.roles.contains(.joystick) { return .gamepadButton }
            // A tablet pad's or remote's buttons in the gamepad range are buttons.
            return code < Evdev.BTN_TOOL_PEN ? .button : .key
        case Evdev.BTN_TOOL_PEN...Evdev.BTN_TOOL_AIRBRUSH, Evdev.BTN_TOOL_MOUSE, Evdev.BTN_TOOL_LENS:
            return hasPen ? .penTool : .button
        case Evdev.BTN_TOOL_FINGER, Evdev.BTN_TOOL_DOUBLETAP, Evdev.BTN_TOOL_TRIPLETAP, Evdev.BTN_TOOL_QUADTAP,
            Evdev.BTN_TOOL_QUINTTAP:
            return hasTouch ? .fingerTool : .button
        case Evdev.BTN_TOUCH:
            return hasPen || hasTouch ? .tip : .button
        case Evdev.BTN_STYLUS, Evdev.BTN_STYLUS2, Evdev.BTN_STYLUS3:
            return hasPen ? .penButton : .button
        case Evdev.BTN_WHEEL..<Evdev.KEY_OK:  // BTN_GEAR_DOWN, BTN_GEAR_UP and the rest of the button range
            return .button
        default:
            return .key
        }
    }

    /// Applies the frame's keys to `keys` (the read ledger) in arrival order: key,
    /// button and gamepad events go to `out`; tools, the tip, finger counts and a
    /// touchpad's click go to `pen` and `touch`.
    mutating func finish(
        keys: inout KeyCodeSet, pen: inout PenDecoding, touch: inout TouchDecoding, at time: MonotonicInstant,
        into out: inout [HIDEvent]
    ) {
        for (code, value) in pending {
            let wasDown = keys.contains(code)
            if value == 2 {
                guard wasDown else { continue }
            } else {
                keys.set(code, value != 0)
            }
            let changed = value != 2 && wasDown != (value != 0)
            let route = code < Evdev.KEY_CNT ? routes[Int(code)] : .key
            switch route {
            case .key:
                emitKey(code, value, wasDown: wasDown, at: time, into: &out)
            case .button:
                if changed { emitButton(code, isDown: value != 0, at: time, into: &out) }
            case .gamepadButton:
                if changed {
                    out.append(
                        HIDEvent(
                            device: device, timestamp: time, payload: .gamepadButton(GamepadButtonEvent(code: code, isDown: value != 0))))
                }
            case .touchpadClick:
                touch.click(isDown: value != 0)
                if changed { emitButton(code, isDown: value != 0, at: time, into: &out) }
            case .penTool:
                pen.tool(Self.penTool(code), isNear: value != 0)
            case .penButton:
                pen.button(code == Evdev.BTN_STYLUS ? 1 : code == Evdev.BTN_STYLUS2 ? 2 : 4, isDown: value != 0)
            case .tip:
                // The pen's tip where the pen is near (or there is no touch surface).
                if pen.isPresent && (!touch.isPresent || pen.currentTool != nil) {
                    pen.tip(isDown: value != 0)
                } else {
                    touch.contact(isDown: value != 0)
                }
            case .fingerTool:
                touch.fingerTool(Self.fingerCount(code), isDown: value != 0)
            }
        }
    }

    /// A keyboard, consumer or system key (`value` 2 is a repeat of a held key).
    mutating func emitKey(
        _ code: UInt16, _ value: Int32, wasDown: Bool, at time: MonotonicInstant, into out: inout [HIDEvent]
    ) {
        let state: KeyEvent.State = value == 2 ? .repeat : value != 0 ? .down : .up
        if let modifier = KeyModifiers.forLinuxKey(code) {
            if value == 0 { modifiers.remove(modifier) } else { modifiers.insert(modifier) }
        }
        if value == 2 || wasDown != (value != 0) {
            out.append(
                HIDEvent(
                    device: device, timestamp: time,
                    payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: state, modifiers: modifiers))))
        }
    }

    func emitButton(_ code: UInt16, isDown: Bool, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        out.append(
            HIDEvent(
                device: device, timestamp: time,
                payload: .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: isDown))))
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

    static func fingerCount(_ code: UInt16) -> Int {
        switch code {
        case Evdev.BTN_TOOL_DOUBLETAP: 2
        case Evdev.BTN_TOOL_TRIPLETAP: 3
        case Evdev.BTN_TOOL_QUADTAP: 4
        case Evdev.BTN_TOOL_QUINTTAP: 5
        default: 1
        }
    }
}
