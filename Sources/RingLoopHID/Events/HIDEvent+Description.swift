import RingLoopEvdev

// Readable text for events, in the words `ringloop monitor` prints: `print(event)` shows
// `device 3: key KEY_A down usage 7:4`, not the payload's fields.

extension HIDEvent: CustomStringConvertible {
    /// The device and what happened: `device 3: key KEY_A down usage 7:4`.
    public var description: String { "\(device): \(payload)" }
}

extension HIDEvent.Payload: CustomStringConvertible {
    /// What happened, as `ringloop monitor` prints it: `key KEY_A down`, `motion 3 -1`,
    /// `touch 2 finger(s): #12@0 began 1024,800, …`.
    public var description: String {
        switch self {
        case .key(let key): "\(key)"
        case .button(let button): "\(button)"
        case .pointerMotion(let motion): "\(motion)"
        case .scroll(let scroll): "\(scroll)"
        case .absolutePointer(let pointer): "absolute \(pointer.x) \(pointer.y)" + ScreenPoint.shown(pointer.screenLocation)
        case .digitizer(let frame): "\(frame)"
        case .pen(let pen): "\(pen)"
        case .gamepadButton(let button):
            "gamepad \(Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)) \(button.isDown ? "down" : "up")"
        case .gamepadAxis(let axis):
            "axis \(Evdev.shownName(ofCode: axis.code, type: Evdev.EV_ABS)) \(axis.value) (\(TextFormat.fixed(Double(axis.normalized), 2)))"
        case .switchChanged(let change):
            "switch \(Evdev.shownName(ofCode: change.code, type: Evdev.EV_SW)) \(change.isOn ? "on" : "off")"
        case .dial(let steps): "dial \(steps)"
        case .motion(let motion): "\(motion)"
        case .axis(let axis): "\(axis)"
        case .deviceAdded: "added"
        case .deviceRemoved: "removed"
        case .eventsDropped(let count): "EVENTS DROPPED (\(count))"
        case .focusChanged(let isFocused): isFocused ? "focus gained" : "focus lost"
        case .gamepad(let gamepad): "\(gamepad)"
        }
    }
}

extension KeyEvent: CustomStringConvertible {
    /// The key's name (``codeName``), its state, its usage and the modifiers held, then,
    /// where a keymap read it, its keysym and text: `key KEY_A down usage 7:4 modifiers 0x02
    /// keysym A text "A"`.
    public var description: String {
        let usage = self.usage.map { " usage \($0)" } ?? ""
        let modifiers = self.modifiers.isEmpty ? "" : " modifiers 0x" + TextFormat.hex(self.modifiers.rawValue, digits: 2)
        var keymap = ""
        if keysym != 0 {
            keymap = " keysym \(Keymap.keysymName(keysym))"
            if !text.isEmpty { keymap += " text \(text.string.debugDescription)" }
        }
        return "key \(codeName) \(state)\(usage)\(modifiers)\(keymap)"
    }

    /// The kernel's name of the key (`KEY_A`, `KEY_LEFTSHIFT`), or its number where the
    /// kernel names none.
    public var codeName: String { Evdev.shownName(ofCode: code, type: Evdev.EV_KEY) }
}

extension ButtonEvent: CustomStringConvertible {
    /// `button 1 (BTN_LEFT) down`.
    public var description: String { "button \(number) (\(codeName)) \(isDown ? "down" : "up")" }

    /// The kernel's name of the button (`BTN_LEFT`).
    public var codeName: String { Evdev.shownName(ofCode: code, type: Evdev.EV_KEY) }
}

extension GamepadButtonEvent {
    /// The kernel's name of the button (`BTN_SOUTH`).
    public var codeName: String { Evdev.shownName(ofCode: code, type: Evdev.EV_KEY) }
}

extension GamepadAxisEvent {
    /// The kernel's name of the axis (`ABS_X`).
    public var codeName: String { Evdev.shownName(ofCode: code, type: Evdev.EV_ABS) }
}

extension SwitchEvent {
    /// The kernel's name of the switch (`SW_LID`).
    public var codeName: String { Evdev.shownName(ofCode: code, type: Evdev.EV_SW) }
}

extension AxisEvent: CustomStringConvertible {
    /// `axis ABS_MISC 12 (0.50)`.
    public var description: String {
        "axis \(codeName) \(value)" + (normalized.map { " (\(TextFormat.fixed(Double($0), 2)))" } ?? "")
    }

    /// The kernel's name of the axis (`ABS_WHEEL`, `REL_Z`).
    public var codeName: String {
        Evdev.shownName(ofCode: code, type: source == .absolute ? Evdev.EV_ABS : Evdev.EV_REL)
    }
}

extension PointerMotionEvent: CustomStringConvertible {
    /// The raw counts, the accelerated deltas where they differ, and the cursor where there
    /// is one: `motion 3 -1`, `motion 3 -1 accelerated 4.50 -1.50 → (812.5, 400.0) px on screen 0`.
    public var description: String {
        var text = "motion \(dx) \(dy)"
        if acceleratedDX != Double(dx) || acceleratedDY != Double(dy) {
            text += " accelerated \(TextFormat.fixed(acceleratedDX, 2)) \(TextFormat.fixed(acceleratedDY, 2))"
        }
        if let cursor { text += ScreenPoint.shown(cursor.location) + " on screen \(cursor.screen)" }
        return text
    }
}

extension ScrollEvent: CustomStringConvertible {
    /// The amounts, and the source and phase where they are not a wheel's:
    /// `scroll vertical 1.0 horizontal 0.0 (hi-res)`, `scroll vertical 0.0 horizontal 0.0 finger ended`.
    public var description: String {
        "scroll vertical \(vertical) horizontal \(horizontal)\(isHighResolution ? " (hi-res)" : "")"
            + (source == .wheel ? "" : " \(source.rawValue)") + (phase == .none ? "" : " \(phase.rawValue)")
    }
}

extension DigitizerFrame: CustomStringConvertible {
    /// The fingers down and each contact as `#tracking-id@slot phase x,y`, and its screen
    /// location when it has one (`→ (540.0, 960.0) px`).
    public var description: String {
        let contacts = self.contacts.map {
            "#\($0.trackingID)@\($0.slot) \($0.phase) \($0.x),\($0.y)" + ScreenPoint.shown($0.screenLocation)
        }
        return "touch \(fingerCount) finger(s)\(isBoundingBox ? " (bounding box)" : ""): \(contacts.joined(separator: ", "))"
    }
}

extension PenEvent: CustomStringConvertible {
    /// The tool, whether it touches, hovers or is out, where, and its pressure, tilt and buttons.
    public var description: String {
        "pen \(tool) \(inProximity ? (touching ? "touching" : "hovering") : "out") \(x),\(y) pressure "
            + "\(TextFormat.fixed(Double(pressure), 2)) tilt \(TextFormat.fixed(Double(tiltX), 0))°,"
            + "\(TextFormat.fixed(Double(tiltY), 0))° buttons \(barrelButtons)" + ScreenPoint.shown(screenLocation)
    }
}

extension MotionEvent: CustomStringConvertible {
    /// The acceleration and rotation rate with their units, the sensor's clock and rate.
    public var description: String {
        let unit = isCalibrated ? ("g", "°/s") : ("units", "units")
        let clock = sensorTime.map { ", sensor time \($0) µs" } ?? ""
        return "motion acceleration \(acceleration) \(unit.0), rotation rate \(rotationRate) \(unit.1)\(clock)"
            + ", \(TextFormat.fixed(Double(sampleRate), 0)) Hz"
    }
}

/// Number formats without Foundation's `String(format:)`, shared by the events' text and
/// the commands'.
package enum TextFormat {
    /// `value` in lowercase hexadecimal, zero-padded to `digits`.
    package static func hex(_ value: some BinaryInteger, digits: Int) -> String {
        pad(String(value, radix: 16), digits, "0")
    }

    /// `value` with `decimals` digits after the point, rounded half away from zero.
    package static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e18 else { return value.description }
        let whole = UInt64(scaled)
        let integer = whole / UInt64(scale)
        let sign = value < 0 && whole != 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(integer) }
        return sign + String(integer) + "." + pad(String(whole % UInt64(scale)), decimals, "0")
    }

    /// `text` padded on the left with `fill` to `width` characters.
    package static func pad(_ text: String, _ width: Int, _ fill: Character = " ") -> String {
        text.count >= width ? text : String(repeating: fill, count: width - text.count) + text
    }
}

extension GestureEvent: CustomStringConvertible {
    /// The device and the gesture's change as `ringloop monitor --gestures` prints it.
    public var description: String { "\(device): \(summary)" }

    /// The gesture's change without the device: `gesture swipe left ended, 2 finger(s)
    /// at (…) mm, translation (…), velocity (…) mm/s`, with the scale of a pinch and the
    /// rotation of a rotation.
    public var summary: String {
        let unit = values.unit == .millimetres ? "mm" : values.unit == .screenPoints ? "pt" : "units"
        var text = "gesture \(gesture)"
        if let direction { text += " \(direction)" }
        text += " \(state.rawValue), \(values.fingers) finger(s) at \(values.location) \(unit)"
        switch gesture {
        case .pinch, .touchpadPinch:
            text += ", scale \(TextFormat.fixed(Double(values.scale), 2))"
            if gesture == .touchpadPinch {
                text += ", rotation \(TextFormat.fixed(Double(values.rotation) * 180 / .pi, 1))°"
            }
        case .rotation: text += ", rotation \(TextFormat.fixed(Double(values.rotation) * 180 / .pi, 1))°"
        case .tap, .doubleTap, .tripleTap, .longPress, .hold: break
        default: text += ", translation \(values.translation), velocity \(values.velocity) \(unit)/s"
        }
        return text
    }
}

extension GamepadEvent: CustomStringConvertible {
    /// The control by SDL's name, its value and the raw value: `gamepad leftx -0.157 (raw -5267)`.
    public var description: String { "gamepad \(control.name) \(TextFormat.fixed(value, 3)) (raw \(raw))" }
}
