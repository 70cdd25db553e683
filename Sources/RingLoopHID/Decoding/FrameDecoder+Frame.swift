import RingLoop
import RingLoopEvdev

// The end of a frame: keys and buttons, relative motion and scrolling, then each family's
// frame (touch, pen) in the order a handler expects.
extension FrameDecoder {
    // MARK: Frame end

    mutating func finishFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var digitizerChanged = changedSlots != 0
        var penChanged = false
        var penToolLeft = false
        // Keys and buttons, in arrival order.
        for (code, value) in pendingKeys {
            let wasDown = read.keys.contains(code)
            if value == 2 {
                guard wasDown else { continue }
            } else {
                read.keys.set(code, value != 0)
            }
            let changed = value != 2 && wasDown != (value != 0)
            switch code {
            case Evdev.BTN_LEFT...Evdev.BTN_TASK:
                if info.deviceClass == .touchpad && code == Evdev.BTN_LEFT {
                    clickDown = value != 0
                    digitizerChanged = true
                }
                if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            // BTN_0…BTN_9 (pads, remotes), further mouse buttons
            case Evdev.BTN_MISC..<Evdev.BTN_MOUSE, Evdev.BTN_TASK + 1..<Evdev.BTN_JOYSTICK:
                if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            case Evdev.BTN_JOYSTICK..<Evdev.BTN_DIGI, Evdev.BTN_TRIGGER_HAPPY1...Evdev.BTN_TRIGGER_HAPPY40,
                Evdev.BTN_DPAD_UP...Evdev.BTN_DPAD_RIGHT:  // joystick, gamepad, trigger-happy, d-pad
                if isGamepad || code >= Evdev.BTN_TRIGGER_HAPPY1 && info.roles.contains(.joystick) {
                    if changed { out.append(event(time, .gamepadButton(GamepadButtonEvent(code: code, isDown: value != 0)))) }
                } else if code < Evdev.BTN_TOOL_PEN {
                    // A tablet pad's or remote's buttons in the gamepad range are buttons.
                    if changed {
                        out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                    }
                } else {
                    emitKey(code, value, wasDown: wasDown, at: time, into: &out)
                }
            // The pen tools: BTN_TOOL_PEN … AIRBRUSH, MOUSE, LENS.
            case Evdev.BTN_TOOL_PEN...Evdev.BTN_TOOL_AIRBRUSH, Evdev.BTN_TOOL_MOUSE, Evdev.BTN_TOOL_LENS:
                if hasPen {
                    let tool = Self.penTool(code)
                    if value != 0 {
                        penTool = tool
                    } else if penTool == tool {
                        penTool = nil
                        penToolLeft = true
                    }
                    implicitPenTool = false
                    penChanged = true
                } else if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            case Evdev.BTN_TOOL_FINGER:  // BTN_TOOL_FINGER
                if hasTouch {
                    toolFingers = value != 0 ? 1 : (toolFingers == 1 ? 0 : toolFingers)
                    digitizerChanged = true
                } else if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            case Evdev.BTN_TOUCH:  // BTN_TOUCH: the pen's tip where the pen is near (or there is no touch surface)
                if hasPen && (!hasTouch || penTool != nil) {
                    penTouching = value != 0
                    penChanged = true
                } else if hasTouch {
                    touching = value != 0
                    digitizerChanged = true
                } else if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            case Evdev.BTN_STYLUS, Evdev.BTN_STYLUS2, Evdev.BTN_STYLUS3:  // BTN_STYLUS, BTN_STYLUS2, BTN_STYLUS3
                if hasPen {
                    let bit: UInt8 = code == Evdev.BTN_STYLUS ? 1 : code == Evdev.BTN_STYLUS2 ? 2 : 4
                    if value != 0 { penButtons |= bit } else { penButtons &= ~bit }
                    penChanged = true
                } else if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            // Finger counts.
            case Evdev.BTN_TOOL_DOUBLETAP, Evdev.BTN_TOOL_TRIPLETAP, Evdev.BTN_TOOL_QUADTAP, Evdev.BTN_TOOL_QUINTTAP:
                if hasTouch {
                    let fingers =
                        code == Evdev.BTN_TOOL_DOUBLETAP ? 2 : code == Evdev.BTN_TOOL_TRIPLETAP ? 3 : code == Evdev.BTN_TOOL_QUADTAP ? 4 : 5
                    if value != 0 { toolFingers = fingers } else if toolFingers == fingers { toolFingers = 0 }
                    digitizerChanged = true
                } else if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            case Evdev.BTN_WHEEL..<Evdev.KEY_OK:  // BTN_GEAR_DOWN, BTN_GEAR_UP and the rest of the button range
                if changed {
                    out.append(event(time, .button(ButtonEvent(code: code, number: Self.buttonNumber(code), isDown: value != 0))))
                }
            default:
                emitKey(code, value, wasDown: wasDown, at: time, into: &out)
            }
        }
        // Relative motion, wheels, dials and the other relative axes.
        if relX != 0 || relY != 0 { out.append(event(time, .pointerMotion(PointerMotionEvent(dx: relX, dy: relY)))) }
        emitScroll(at: time, into: &out)
        if dial != 0 { out.append(event(time, .dial(dial))) }
        for (code, value) in pendingRelative where value != 0 {
            out.append(event(time, .axis(AxisEvent(source: .relative, code: code, value: value, normalized: nil))))
        }
        // Absolute axes, each where its route says.
        var touchAxisChanged = false
        var penAxisChanged = false
        var pointerChanged = false
        var motionChanged = false
        for (code, value) in pendingAbsolute where code < Evdev.ABS_CNT {
            read.axes[code] = value
            switch absoluteRoutes[Int(code)] {
            case .gamepad:
                let range = axisRanges[Int(code)] ?? AbsoluteAxis(minimum: 0, maximum: 1, resolution: 0)
                let normalized =
                    range.minimum < 0
                    ? Double(value) / Double(max(-Int64(range.minimum), Int64(range.maximum), 1))
                    : range.normalized(value)
                out.append(event(time, .gamepadAxis(GamepadAxisEvent(code: code, value: value, normalized: normalized))))
            case .pen: penAxisChanged = true
            case .touch: touchAxisChanged = true
            case .pointer: pointerChanged = true
            case .motion: motionChanged = true
            case .axisEvent:
                let normalized = axisRanges[Int(code)].flatMap { $0.maximum > $0.minimum ? $0.normalized(value) : nil }
                out.append(event(time, .axis(AxisEvent(source: .absolute, code: code, value: value, normalized: normalized))))
            }
        }
        if isMotion, motionChanged || motion.pendingTimestamp != nil {
            out.append(event(time, .motion(motion.sample(read.axes, at: time))))
        }
        if hasPen, penChanged { reconcilePenProximity(toolLeft: penToolLeft) }
        if hasPen, penAxisChanged || penChanged {
            out.append(event(time, .pen(penEvent())))
        }
        if info.isProtocolA {
            finishProtocolAContact()
            emitProtocolAFrame(at: time, into: &out)
        } else if !read.slots.isEmpty {
            if digitizerChanged || touchAxisChanged { emitSlotFrame(at: time, into: &out) }
        } else if isSingleTouch, touchAxisChanged || digitizerChanged {
            emitSingleTouchFrame(at: time, into: &out)
        }
        if pointerChanged, let rangeX = axisRanges[0], let rangeY = axisRanges[1] {
            let x = read.axes[Evdev.ABS_X]
            let y = read.axes[Evdev.ABS_Y]
            out.append(
                event(
                    time,
                    .absolutePointer(
                        AbsolutePointerEvent(x: x, y: y, normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y)))))
        }
        for (code, value) in pendingSwitches where read.switches.contains(code) != (value != 0) {
            read.switches.set(code, value != 0)
            out.append(event(time, .switchChanged(SwitchEvent(code: code, isOn: value != 0))))
        }
        clearPending()
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
            out.append(event(time, .key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: state, modifiers: modifiers))))
        }
    }

    mutating func emitScroll(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        // Hi-res streams count; the low-res events of the same notches are not added again.
        var vertical = 0.0
        var horizontal = 0.0
        if info.hasHighResolutionWheel {
            vertical = Double(wheelHiRes) / 120
        } else {
            vertical = Double(wheel)
        }
        if info.hasHighResolutionHorizontalWheel {
            horizontal = Double(horizontalWheelHiRes) / 120
        } else {
            horizontal = Double(horizontalWheel)
        }
        if vertical != 0 || horizontal != 0 {
            out.append(
                event(
                    time,
                    .scroll(
                        ScrollEvent(
                            vertical: vertical, horizontal: horizontal,
                            isHighResolution: info.hasHighResolutionWheel || info.hasHighResolutionHorizontalWheel))))
        }
    }
}
