import RingLoop
import RingLoopEvdev

extension InputEvent {
    /// The event's timestamp on the monotonic clock (the chain sets `CLOCK_MONOTONIC`).
    var instant: MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, microseconds)) &* 1000)
    }
}

/// What a resync reads back from the device after `SYN_DROPPED`.
public struct DeviceStateSnapshot: Sendable {
    /// Keys and buttons down (codes).
    public var keysDown: Set<UInt16> = []
    /// Switches on.
    public var switchesOn: Set<UInt16> = []
    /// Current absolute values.
    public var absolute: [UInt16: Int32] = [:]
    /// Per slot: tracking id, x, y (protocol B devices).
    public var slots: [(trackingID: Int32, x: Int32, y: Int32)] = []

    public init() {}
}

/// Turns one device's evdev frames into HID events: state is applied at `SYN_REPORT`
/// only, per device and per multitouch slot; `SYN_DROPPED` discards the partial frame
/// and resyncs from the device's state, so no key stays held that is up and no touch
/// stays live that has lifted.
///
/// What a frame yields follows the device's capabilities, not only its class, so
/// nothing it reports is lost: multitouch slots become digitizer frames on any device (a
/// touch mouse too), pen tools and axes become pen events wherever there is a pen (a
/// pen-and-touch screen yields both), and every axis no other event describes (pad rings
/// and strips, `ABS_MISC`, `REL_Z`…) arrives as an ``AxisEvent``.
///
/// Allocation-free once warm: frames are built in reused buffers and events appended to
/// the caller's array.
public struct FrameDecoder {
    public let info: HIDDeviceInfo
    private let deviceID: HIDDeviceID

    /// Where an absolute axis's values go.
    enum AbsoluteRoute: UInt8 { case axisEvent, pen, touch, pointer, gamepad }
    /// Per `ABS_*` code (0…63).
    private let absoluteRoutes: InlineArray<64, AbsoluteRoute>
    /// The device has a pen (`BTN_TOOL_PEN` or `BTN_STYLUS`, and is not a tablet pad).
    private let hasPen: Bool
    /// Touches come from `ABS_MT_*` slots, protocol A, or a single-touch surface.
    private let hasTouch: Bool
    /// A touchscreen or touchpad without multitouch: one contact from `ABS_X`/`ABS_Y`.
    private let isSingleTouch: Bool
    /// Gamepads and joysticks: every axis is a gamepad axis.
    private let isGamepad: Bool

    // State applied at SYN_REPORT.
    private var keysDown = BitSet768()
    private var modifiers: KeyModifiers = []
    private var absolute = [Int32](repeating: 0, count: 64)
    private var slots: [SlotState]
    private var currentSlot = 0
    private var toolFingers = 0
    private var touching = false
    private var penTool: PenEvent.Tool?
    private var penButtons: UInt8 = 0
    private var penTouching = false
    private var wheelRemainder = 0
    private var horizontalWheelRemainder = 0
    private var switchesOn = Set<UInt16>()
    private var clickDown = false

    // The frame being read.
    private var pendingKeys: [(UInt16, Int32)] = []
    private var pendingAbsolute: [(UInt16, Int32)] = []
    private var pendingSwitches: [(UInt16, Int32)] = []
    private var pendingRelative: [(UInt16, Int32)] = []
    private var relX: Int32 = 0
    private var relY: Int32 = 0
    private var wheel: Int32 = 0
    private var horizontalWheel: Int32 = 0
    private var wheelHiRes: Int32 = 0
    private var horizontalWheelHiRes: Int32 = 0
    private var dial: Int32 = 0
    private var protocolAContacts: [Contact] = []
    private var protocolAPending = Contact()
    private var protocolAHasPending = false
    private var previousProtocolA: [Contact] = []
    // Scratch storage for protocol-A matching, kept so a warm decoder allocates nothing.
    private var matchedPrevious: [Bool] = []
    private var previousIndexOfContact: [Int] = []
    private var currentProtocolA: [Contact] = []
    private var nextTrackingID: Int32 = 1
    private var dropping = false
    private var frameTouchedSlots = false

    struct SlotState {
        var trackingID: Int32 = -1
        var reportedID: Int32 = -1
        var x: Int32 = 0
        var y: Int32 = 0
        var pressure: Int32 = 0
        var major: Int32 = 0
        var minor: Int32 = 0
        var orientation: Int32 = 0
        var distance: Int32 = 0
        var toolType: Int32 = 0
        var changed = false
    }

    public init(info: HIDDeviceInfo) {
        self.info = info
        self.deviceID = info.id
        let keys = info.codes[Evdev.EV_KEY] ?? []
        let pen = info.deviceClass != .tabletPad && (keys.contains(Evdev.BTN_TOOL_PEN) || keys.contains(Evdev.BTN_STYLUS))
        let multitouch = info.slotCount > 0 || info.isProtocolA
        let singleTouch = !multitouch && (info.deviceClass == .touchscreen || info.deviceClass == .touchpad)
        let gamepad = info.deviceClass == .gamepad || info.deviceClass == .joystick
        hasPen = pen
        hasTouch = multitouch || singleTouch
        isSingleTouch = singleTouch
        isGamepad = gamepad
        var routes = InlineArray<64, AbsoluteRoute>(repeating: .axisEvent)
        let penAxes: Set<UInt16> = [
            Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_DISTANCE, Evdev.ABS_TILT_X, Evdev.ABS_TILT_Y,
        ]
        // Single-touch pointer emulation.
        let touchAxes: Set<UInt16> = [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_TOOL_WIDTH]
        for index in 0..<Int(Evdev.ABS_CNT) {
            let code = UInt16(index)
            if gamepad {
                routes[index] = .gamepad
            } else if pen && penAxes.contains(code) {
                routes[index] = .pen
            } else if (multitouch || singleTouch) && touchAxes.contains(code) {
                routes[index] = .touch
            } else if (code == Evdev.ABS_X || code == Evdev.ABS_Y) && info.deviceClass != .tabletPad {
                routes[index] = .pointer
            }
        }
        absoluteRoutes = routes
        slots = Array(repeating: SlotState(), count: min(info.slotCount, 64))
        pendingKeys.reserveCapacity(32)
        pendingAbsolute.reserveCapacity(64)
        pendingSwitches.reserveCapacity(8)
        pendingRelative.reserveCapacity(8)
        protocolAContacts.reserveCapacity(DigitizerFrame.capacity)
        previousProtocolA.reserveCapacity(DigitizerFrame.capacity)
        matchedPrevious.reserveCapacity(DigitizerFrame.capacity)
        previousIndexOfContact.reserveCapacity(DigitizerFrame.capacity)
        currentProtocolA.reserveCapacity(DigitizerFrame.capacity)
    }

    /// Whether the decoder is discarding events until the end of a dropped frame.
    public var isResyncing: Bool { dropping }

    /// Feeds one event. Returns `true` when it was `SYN_DROPPED` (the caller must resync
    /// with ``resync(from:at:into:)`` after the next `SYN_REPORT`).
    @discardableResult
    public mutating func feed(_ event: InputEvent, into out: inout [HIDEvent]) -> Bool {
        if dropping {
            // Everything up to and including the next SYN_REPORT is incomplete.
            if event.isSynReport { dropping = false }
            return false
        }
        switch event.type {
        case Evdev.EV_SYN:
            switch event.code {
            case Evdev.SYN_REPORT: finishFrame(at: event.instant, into: &out)
            case Evdev.SYN_MT_REPORT: finishProtocolAContact()
            case Evdev.SYN_DROPPED:
                dropping = true
                clearPending()
                out.append(HIDEvent(device: deviceID, timestamp: event.instant, payload: .eventsDropped(count: 0)))
                return true
            default: break
            }
        case Evdev.EV_KEY: pendingKeys.append((event.code, event.value))
        case Evdev.EV_REL:
            switch event.code {
            case Evdev.REL_X: relX &+= event.value
            case Evdev.REL_Y: relY &+= event.value
            case Evdev.REL_HWHEEL: horizontalWheel &+= event.value
            case Evdev.REL_WHEEL: wheel &+= event.value
            case Evdev.REL_DIAL: dial &+= event.value
            case Evdev.REL_WHEEL_HI_RES: wheelHiRes &+= event.value
            case Evdev.REL_HWHEEL_HI_RES: horizontalWheelHiRes &+= event.value
            default: pendingRelative.append((event.code, event.value))
            }
        case Evdev.EV_ABS: feedAbsolute(event.code, event.value)
        case Evdev.EV_SW: pendingSwitches.append((event.code, event.value))
        default: break
        }
        return false
    }

    private mutating func feedAbsolute(_ code: UInt16, _ value: Int32) {
        if !slots.isEmpty {
            switch code {
            case Evdev.ABS_MT_SLOT:
                currentSlot = Int(value)
                return
            case Evdev.ABS_MT_TOUCH_MAJOR...Evdev.ABS_MT_TOOL_Y:
                guard currentSlot >= 0, currentSlot < slots.count else { return }  // out-of-range slots: ignored
                switch code {
                case Evdev.ABS_MT_POSITION_X: slots[currentSlot].x = value
                case Evdev.ABS_MT_POSITION_Y: slots[currentSlot].y = value
                case Evdev.ABS_MT_TRACKING_ID: slots[currentSlot].trackingID = value
                case Evdev.ABS_MT_PRESSURE: slots[currentSlot].pressure = value
                case Evdev.ABS_MT_TOUCH_MAJOR: slots[currentSlot].major = value
                case Evdev.ABS_MT_TOUCH_MINOR: slots[currentSlot].minor = value
                case Evdev.ABS_MT_ORIENTATION: slots[currentSlot].orientation = value
                case Evdev.ABS_MT_TOOL_TYPE: slots[currentSlot].toolType = value
                case Evdev.ABS_MT_DISTANCE: slots[currentSlot].distance = value
                default: break  // width, blob id and tool position belong to the contact, not reported
                }
                slots[currentSlot].changed = true
                frameTouchedSlots = true
                return
            default: break
            }
        } else if info.isProtocolA, code >= Evdev.ABS_MT_TOUCH_MAJOR, code <= Evdev.ABS_MT_TOOL_Y {
            protocolAHasPending = true
            switch code {
            case Evdev.ABS_MT_POSITION_X: protocolAPending.x = value
            case Evdev.ABS_MT_POSITION_Y: protocolAPending.y = value
            case Evdev.ABS_MT_PRESSURE: protocolAPending.pressure = value
            case Evdev.ABS_MT_TOUCH_MAJOR: protocolAPending.size = value
            case Evdev.ABS_MT_TOUCH_MINOR: protocolAPending.minor = value
            case Evdev.ABS_MT_ORIENTATION: protocolAPending.orientation = value
            case Evdev.ABS_MT_TOOL_TYPE: protocolAPending.toolType = value
            case Evdev.ABS_MT_DISTANCE: protocolAPending.distance = value
            default: break
            }
            return
        }
        pendingAbsolute.append((code, value))
    }

    private mutating func finishProtocolAContact() {
        if protocolAHasPending { protocolAContacts.append(protocolAPending) }
        protocolAPending = Contact()
        protocolAHasPending = false
    }

    private mutating func clearPending() {
        pendingKeys.removeAll(keepingCapacity: true)
        pendingAbsolute.removeAll(keepingCapacity: true)
        pendingSwitches.removeAll(keepingCapacity: true)
        pendingRelative.removeAll(keepingCapacity: true)
        protocolAContacts.removeAll(keepingCapacity: true)
        protocolAHasPending = false
        relX = 0
        relY = 0
        wheel = 0
        horizontalWheel = 0
        wheelHiRes = 0
        horizontalWheelHiRes = 0
        dial = 0
        for index in slots.indices { slots[index].changed = false }
        frameTouchedSlots = false
    }

    // MARK: Frame end

    private mutating func finishFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var digitizerChanged = frameTouchedSlots
        var penChanged = false
        // Keys and buttons, in arrival order.
        for (code, value) in pendingKeys {
            let wasDown = keysDown.contains(code)
            if value == 2 {
                guard wasDown else { continue }
            } else {
                keysDown.set(code, value != 0)
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
                    penTool = value != 0 ? Self.penTool(code) : (penTool == Self.penTool(code) ? nil : penTool)
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
        if relX != 0 || relY != 0 { out.append(event(time, .pointerMotion(dx: relX, dy: relY))) }
        emitScroll(at: time, into: &out)
        if dial != 0 { out.append(event(time, .dial(dial))) }
        for (code, value) in pendingRelative where value != 0 {
            out.append(event(time, .axis(AxisEvent(source: .relative, code: code, value: value, normalized: nil))))
        }
        // Absolute axes, each where its route says.
        var touchAxisChanged = false
        var penAxisChanged = false
        var pointerChanged = false
        for (code, value) in pendingAbsolute where Int(code) < absolute.count {
            absolute[Int(code)] = value
            switch absoluteRoutes[Int(code)] {
            case .gamepad:
                let range = info.axes[code] ?? AbsoluteAxis(minimum: 0, maximum: 1, resolution: 0)
                let normalized =
                    range.minimum < 0
                    ? Double(value) / Double(max(-Int64(range.minimum), Int64(range.maximum), 1))
                    : range.normalized(value)
                out.append(event(time, .gamepadAxis(GamepadAxisEvent(code: code, value: value, normalized: normalized))))
            case .pen: penAxisChanged = true
            case .touch: touchAxisChanged = true
            case .pointer: pointerChanged = true
            case .axisEvent:
                let normalized = info.axes[code].flatMap { $0.maximum > $0.minimum ? $0.normalized(value) : nil }
                out.append(event(time, .axis(AxisEvent(source: .absolute, code: code, value: value, normalized: normalized))))
            }
        }
        if hasPen, penAxisChanged || penChanged {
            out.append(event(time, .pen(penEvent())))
        }
        if info.isProtocolA {
            finishProtocolAContact()
            emitProtocolAFrame(at: time, into: &out)
        } else if !slots.isEmpty {
            if digitizerChanged || touchAxisChanged { emitSlotFrame(at: time, into: &out) }
        } else if isSingleTouch, touchAxisChanged || digitizerChanged {
            emitSingleTouchFrame(at: time, into: &out)
        }
        if pointerChanged, let rangeX = info.axes[0], let rangeY = info.axes[1] {
            let x = absolute[Int(Evdev.ABS_X)]
            let y = absolute[Int(Evdev.ABS_Y)]
            out.append(
                event(
                    time,
                    .absolutePointer(
                        AbsolutePointerEvent(x: x, y: y, normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y)))))
        }
        for (code, value) in pendingSwitches where switchesOn.contains(code) != (value != 0) {
            if value != 0 { switchesOn.insert(code) } else { switchesOn.remove(code) }
            out.append(event(time, .switchChanged(SwitchEvent(code: code, isOn: value != 0))))
        }
        clearPending()
    }

    /// A keyboard, consumer or system key (`value` 2 is a repeat of a held key).
    private mutating func emitKey(
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

    private mutating func emitScroll(at time: MonotonicInstant, into out: inout [HIDEvent]) {
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

    private func contact(
        slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32
    )
        -> Contact
    {
        contact(slot: slot, id: id, phase: phase, x: x, y: y, pressure: pressure, size: size, from: nil)
    }

    private func contact(slot: Int, id: Int32, phase: Contact.Phase, from state: SlotState) -> Contact {
        contact(slot: slot, id: id, phase: phase, x: state.x, y: state.y, pressure: state.pressure, size: state.major, from: state)
    }

    private func contact(
        slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32, from state: SlotState?
    ) -> Contact {
        let rangeX = info.axes[Evdev.ABS_MT_POSITION_X] ?? info.axes[Evdev.ABS_X] ?? AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        let rangeY = info.axes[Evdev.ABS_MT_POSITION_Y] ?? info.axes[Evdev.ABS_Y] ?? AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        return Contact(
            slot: Int16(slot), trackingID: id, phase: phase, x: x, y: y, normalizedX: rangeX.normalized(x),
            normalizedY: rangeY.normalized(y), millimetresX: rangeX.millimetres(x), millimetresY: rangeY.millimetres(y),
            pressure: pressure, size: size, minor: state?.minor ?? 0, orientation: state?.orientation ?? 0,
            distance: state?.distance ?? 0, toolType: state?.toolType ?? 0)
    }

    /// Protocol B: one contact per slot with a tracking id, and ended ones.
    private mutating func emitSlotFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = DigitizerFrame()
        frame.isBoundingBox = info.isSemiMultitouch
        frame.buttonDown = clickDown
        var live = 0
        for index in slots.indices {
            let slot = slots[index]
            let previous = slot.reportedID
            let current = slot.trackingID
            if previous != -1, current != previous {
                // Lifted, or the id was reused without a release (handled as libevdev
                // does: the old touch ends, a new one begins).
                frame.append(contact(slot: index, id: previous, phase: .ended, from: slot))
            }
            if current != -1 {
                let phase: Contact.Phase = current != previous ? .began : slot.changed ? .moved : .stationary
                frame.append(contact(slot: index, id: current, phase: phase, from: slot))
                live += 1
            }
            slots[index].reportedID = current
            slots[index].changed = false
        }
        frame.fingerCount = toolFingers > 0 ? toolFingers : live
        out.append(event(time, .digitizer(frame)))
    }

    /// A single-touch screen (ABS_X/ABS_Y with BTN_TOUCH): one contact.
    private mutating func emitSingleTouchFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = DigitizerFrame()
        let x = absolute[Int(Evdev.ABS_X)]
        let y = absolute[Int(Evdev.ABS_Y)]
        let wasTouching = slots.isEmpty && previousProtocolA.count == 1
        if touching {
            let id = wasTouching ? previousProtocolA[0].trackingID : nextID()
            let current = contact(
                slot: 0, id: id, phase: wasTouching ? .moved : .began, x: x, y: y, pressure: absolute[Int(Evdev.ABS_PRESSURE)], size: 0)
            frame.append(current)
            previousProtocolA.removeAll(keepingCapacity: true)
            previousProtocolA.append(current)
        } else if wasTouching {
            frame.append(contact(slot: 0, id: previousProtocolA[0].trackingID, phase: .ended, x: x, y: y, pressure: 0, size: 0))
            previousProtocolA.removeAll(keepingCapacity: true)
        } else {
            return
        }
        frame.fingerCount = touching ? 1 : 0
        out.append(event(time, .digitizer(frame)))
    }

    /// Protocol A: contacts carry no ids; match them to the previous frame's by
    /// distance, closest pairs first (as mtdev matches by least movement), to assign
    /// slots and tracking ids. Allocation-free once warm.
    private mutating func emitProtocolAFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = DigitizerFrame()
        frame.buttonDown = clickDown
        let reported = min(protocolAContacts.count, DigitizerFrame.capacity)
        matchedPrevious.removeAll(keepingCapacity: true)
        matchedPrevious.append(contentsOf: repeatElement(false, count: previousProtocolA.count))
        previousIndexOfContact.removeAll(keepingCapacity: true)
        previousIndexOfContact.append(contentsOf: repeatElement(-1, count: reported))
        // Closest pair first, over all pairs (not in report order: a new finger reported
        // before a moving one must not take the moving one's identity).
        while true {
            var best: (contact: Int, previous: Int) = (-1, -1)
            var bestDistance = Double.infinity
            for index in 0..<reported where previousIndexOfContact[index] < 0 {
                let raw = protocolAContacts[index]
                for (previous, old) in previousProtocolA.enumerated() where !matchedPrevious[previous] {
                    // In floating point: squares of full-range Int32 differences overflow Int64.
                    let dx = Double(raw.x) - Double(old.x)
                    let dy = Double(raw.y) - Double(old.y)
                    let distance = dx * dx + dy * dy
                    if distance < bestDistance {
                        bestDistance = distance
                        best = (index, previous)
                    }
                }
            }
            if best.contact < 0 { break }
            previousIndexOfContact[best.contact] = best.previous
            matchedPrevious[best.previous] = true
        }
        currentProtocolA.removeAll(keepingCapacity: true)
        // Slots (at most DigitizerFrame.capacity of them) kept by matched contacts, as bits.
        var usedSlots: UInt64 = 0
        for index in 0..<reported {
            let raw = protocolAContacts[index]
            let previous = previousIndexOfContact[index]
            if previous >= 0 {
                let old = previousProtocolA[previous]
                let phase: Contact.Phase = raw.x == old.x && raw.y == old.y ? .stationary : .moved
                currentProtocolA.append(
                    Self.carryingExtras(
                        of: raw,
                        contact(
                            slot: Int(old.slot), id: old.trackingID, phase: phase, x: raw.x, y: raw.y, pressure: raw.pressure,
                            size: raw.size)))
                usedSlots |= Self.slotBit(old.slot)
            } else {
                currentProtocolA.append(
                    Self.carryingExtras(
                        of: raw, contact(slot: -1, id: nextID(), phase: .began, x: raw.x, y: raw.y, pressure: raw.pressure, size: raw.size))
                )
            }
        }
        // New contacts take the lowest slots no matched contact keeps.
        for index in currentProtocolA.indices where currentProtocolA[index].slot < 0 {
            let slot = Int16((~usedSlots).trailingZeroBitCount)
            currentProtocolA[index].slot = slot
            usedSlots |= Self.slotBit(slot)
        }
        for (index, old) in previousProtocolA.enumerated() where !matchedPrevious[index] {
            var ended = old
            ended.phase = .ended
            frame.append(ended)
        }
        for contact in currentProtocolA { frame.append(contact) }
        frame.fingerCount = toolFingers > 0 ? toolFingers : currentProtocolA.count
        if frame.count > 0 || !previousProtocolA.isEmpty { out.append(event(time, .digitizer(frame))) }
        swap(&previousProtocolA, &currentProtocolA)
        protocolAContacts.removeAll(keepingCapacity: true)
    }

    /// `contact` with the minor axis, orientation, distance and tool type of the raw
    /// protocol-A contact it was made from.
    private static func carryingExtras(of raw: Contact, _ contact: Contact) -> Contact {
        var result = contact
        result.minor = raw.minor
        result.orientation = raw.orientation
        result.distance = raw.distance
        result.toolType = raw.toolType
        return result
    }

    private static func slotBit(_ slot: Int16) -> UInt64 { slot >= 0 && slot < 64 ? 1 << UInt64(slot) : 0 }

    private mutating func nextID() -> Int32 {
        defer { nextTrackingID = nextTrackingID == Int32.max ? 1 : nextTrackingID + 1 }
        return nextTrackingID
    }

    private func penEvent() -> PenEvent {
        let x = absolute[Int(Evdev.ABS_X)]
        let y = absolute[Int(Evdev.ABS_Y)]
        let rangeX = info.axes[Evdev.ABS_X] ?? AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        let rangeY = info.axes[Evdev.ABS_Y] ?? AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        let pressureRange = info.axes[Evdev.ABS_PRESSURE] ?? AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        func tilt(_ code: UInt16) -> Double {
            let value = Double(absolute[Int(code)])
            guard let range = info.axes[code], range.resolution > 0 else { return value }
            return value / Double(range.resolution) * 180 / Double.pi  // units per radian → degrees
        }
        return PenEvent(
            tool: penTool ?? .pen, inProximity: penTool != nil, touching: penTouching, x: x, y: y,
            normalizedX: rangeX.normalized(x), normalizedY: rangeY.normalized(y),
            pressure: pressureRange.normalized(absolute[Int(Evdev.ABS_PRESSURE)]), distance: absolute[Int(Evdev.ABS_DISTANCE)],
            tiltX: tilt(Evdev.ABS_TILT_X),
            tiltY: tilt(Evdev.ABS_TILT_Y), barrelButtons: penButtons)
    }

    @inline(__always)
    private func event(_ time: MonotonicInstant, _ payload: HIDEvent.Payload) -> HIDEvent {
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

    // MARK: Resync and teardown

    /// After a `SYN_DROPPED` frame ended: brings the state in line with what the device
    /// reports now, emitting key ups/downs and touch ends/begins for what changed.
    public mutating func resync(from snapshot: DeviceStateSnapshot, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        dropping = false
        clearPending()
        for code in keysDown.all where !snapshot.keysDown.contains(code) { pendingKeys.append((code, 0)) }
        for code in snapshot.keysDown.sorted() where !keysDown.contains(code) { pendingKeys.append((code, 1)) }
        for code in switchesOn where !snapshot.switchesOn.contains(code) { pendingSwitches.append((code, 0)) }
        for code in snapshot.switchesOn where !switchesOn.contains(code) { pendingSwitches.append((code, 1)) }
        for (code, value) in snapshot.absolute
        where Int(code) < absolute.count && absolute[Int(code)] != value
            && !(code >= Evdev.ABS_MT_SLOT && code <= Evdev.ABS_MT_TOOL_Y)
        {
            pendingAbsolute.append((code, value))
        }
        for (index, state) in snapshot.slots.enumerated() where index < slots.count {
            if slots[index].trackingID != state.trackingID || slots[index].x != state.x || slots[index].y != state.y {
                slots[index].trackingID = state.trackingID
                slots[index].x = state.x
                slots[index].y = state.y
                slots[index].changed = true
                frameTouchedSlots = true
            }
        }
        finishFrame(at: time, into: &out)
        if info.isProtocolA && !previousProtocolA.isEmpty {
            // A protocol-A device keeps no contact state to read back: the contacts seen
            // before the loss are cancelled, and the next frame begins those still down.
            var frame = DigitizerFrame()
            for old in previousProtocolA {
                var cancelled = old
                cancelled.phase = .cancelled
                frame.append(cancelled)
            }
            previousProtocolA.removeAll(keepingCapacity: true)
            out.append(event(time, .digitizer(frame)))
        }
    }

    /// The device is gone: releases held keys and buttons, cancels live touches and
    /// takes the pen out of proximity, then reports the removal.
    public mutating func detach(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        clearPending()
        // Keys and buttons are released; digitizer tools and touch state go with the
        // cancelled contacts below, not as frames of their own.
        for code in keysDown.all {
            if (Evdev.BTN_TOOL_PEN...Evdev.BTN_TOOL_QUADTAP).contains(code) {
                keysDown.set(code, false)
            } else {
                pendingKeys.append((code, 0))
            }
        }
        toolFingers = 0
        touching = false
        clickDown = false
        let hadPen = penTool != nil
        finishFrame(at: time, into: &out)
        var frame = DigitizerFrame()
        for index in slots.indices where slots[index].reportedID != -1 {
            let slot = slots[index]
            frame.append(contact(slot: index, id: slot.reportedID, phase: .cancelled, x: slot.x, y: slot.y, pressure: 0, size: 0))
            slots[index].reportedID = -1
            slots[index].trackingID = -1
        }
        for old in previousProtocolA {
            var cancelled = old
            cancelled.phase = .cancelled
            frame.append(cancelled)
        }
        previousProtocolA.removeAll()
        if frame.count > 0 { out.append(event(time, .digitizer(frame))) }
        if hadPen {
            penTool = nil
            penTouching = false
            penButtons = 0
            out.append(event(time, .pen(penEvent())))
        }
        out.append(event(time, .deviceRemoved))
    }

    /// Keys and buttons currently held.
    public var heldKeys: [UInt16] { keysDown.all }

}

/// The key bit set (KEY_MAX + 1 = 768 bits) without allocation.
struct BitSet768 {
    private var words = InlineArray<12, UInt64>(repeating: 0)

    func contains(_ code: UInt16) -> Bool {
        code < Evdev.KEY_CNT && words[Int(code) / 64] & (1 << (UInt64(code) % 64)) != 0
    }

    var isEmpty: Bool { (0..<12).allSatisfy { words[$0] == 0 } }

    mutating func set(_ code: UInt16, _ on: Bool) {
        guard code < Evdev.KEY_CNT else { return }
        if on { words[Int(code) / 64] |= 1 << (UInt64(code) % 64) } else { words[Int(code) / 64] &= ~(1 << (UInt64(code) % 64)) }
    }

    var all: [UInt16] {
        var codes: [UInt16] = []
        for word in 0..<12 where words[word] != 0 {
            for bit in 0..<64 where words[word] & (1 << UInt64(bit)) != 0 { codes.append(UInt16(word * 64 + bit)) }
        }
        return codes
    }
}
