import RingLoop
import RingLoopEvdev

/// The event server's wire format: what ``HIDEventServer`` and its clients send each other
/// inside named-port messages, little-endian, versioned by ``version`` (the hello and the
/// welcome carry it; a peer of another version is refused).
///
/// Events travel decoded, as `IOHIDEvent`s travel from the event server to an app: one
/// ``HIDEvent`` is its kind (1 byte), device (4), timestamp in nanoseconds (8) and the
/// payload's fields in a fixed order (see ``encode(_:into:)``). Devices travel as what
/// the chain's description needs (name, ids, codes, axes, properties; not `phys` and
/// `uniq`), and the client derives the rest with ``HIDDeviceInfo/init(description:id:path:)``,
/// the same code as the server.
///
/// Everything a peer sends is checked field by field before use — every enumeration's
/// raw value, every flag byte, every count against its capacity, every code against its
/// type's `_MAX`, every number finite (a delta or scroll amount within ``largestAmount``), every string's length and UTF-8 — and a message
/// with bytes left over is refused too: a ``Violation`` names the field. A libFuzzer target
/// (`FuzzServerWire`) runs the decoders in CI.
package enum ServerWire {
    /// The format's version (3: pointer motion carries its accelerated deltas and the
    /// cursor, scrolling its source and phase; 4: the welcome names the server keymap's
    /// layouts; 5: pointer motion carries its unaccelerated deltas and scrolling its
    /// unscaled amounts, from which a client's pointer stage makes its own).
    package static let version: UInt16 = 5

    /// The largest magnitude a pointer motion's delta or a scroll amount may have on the
    /// wire (device units, or detents and their fractions): a million, far beyond any
    /// device's motion in one frame (a 32,000 dpi mouse moved a metre is 1.3 million
    /// counts, over many frames). A larger value, which a client's pointer stage would
    /// accelerate and scale, is a ``Violation/beyondBound(field:bound:)``.
    package static let largestAmount = 1_000_000.0

    /// A message that breaks the format; the receiver drops it (and a client that sends
    /// one is dropped).
    package enum Violation: Error, Equatable, CustomStringConvertible {
        case truncated(field: String, at: Int)
        case outOfRange(field: String, value: Int64)
        case notFinite(field: String)
        case notUTF8(field: String)
        case unknown(field: String, value: UInt64)
        case trailingBytes(what: String, count: Int)
        case notCanonical(field: String)
        case controlCharacter(field: String)
        /// The message (a hello or a welcome) is of another version of the format than
        /// this process's ``ServerWire/version``.
        case version(of: String, received: UInt16, own: UInt16)
        /// A finite number whose magnitude is beyond `bound` (``largestAmount``).
        case beyondBound(field: String, bound: Double)

        package var description: String {
            switch self {
            case .truncated(let field, let at): "the message ends at byte \(at), inside \(field)"
            case .outOfRange(let field, let value): "\(field) is \(value), out of its range"
            case .notFinite(let field): "\(field) is not a finite number"
            case .notUTF8(let field): "\(field) is not UTF-8"
            case .unknown(let field, let value): "\(field) has the unknown value \(value)"
            case .trailingBytes(let what, let count): "\(count) bytes follow the \(what)"
            case .notCanonical(let field): "\(field) repeats or is out of order"
            case .controlCharacter(let field): "\(field) holds a control or format character"
            case .version(let message, let received, let own):
                "a \(message) of the event server's wire format version \(received), where version \(own) is expected"
                    + " (a server and its clients need the same version of RingLoopHID)"
            case .beyondBound(let field, let bound):
                "\(field) is beyond ±\(Int(bound)); valid values are from −\(Int(bound)) to \(Int(bound))"
            }
        }
    }

    /// The kinds in wire order (their index is the kind's byte).
    static let kinds = HIDEvent.Kind.allCases

    /// The largest finger count taken (the kernel's most slots).
    static let maximumFingerCount = Int32(Evdev.maximumSlotCount)

    // MARK: Events

    /// Appends one event.
    static func encode(_ event: HIDEvent, into out: inout WireWriter) {
        out.u8(UInt8(kinds.firstIndex(of: event.kind)!))
        out.u32(event.device.rawValue)
        out.u64(event.timestamp.nanoseconds)
        switch event.payload {
        case .key(let key):
            out.u16(key.code)
            out.u8(key.state == .down ? 0 : key.state == .up ? 1 : 2)
            out.bool(key.usage != nil)
            out.u16(key.usage?.page ?? 0)
            out.u16(key.usage?.usage ?? 0)
            out.u8(key.modifiers.rawValue)
            out.u32(key.keysym)
            key.text.withUTF8 { text in
                out.u8(UInt8(text.count))
                for byte in text { out.u8(byte) }
            }
            out.u8(key.keymapModifiers.effective.rawValue)
            out.u8(key.keymapModifiers.latched.rawValue)
            out.u8(key.keymapModifiers.locked.rawValue)
            out.u8(key.keymapModifiers.layout)
        case .button(let button):
            out.u16(button.code)
            out.i32(Int32(clamping: button.number))
            out.bool(button.isDown)
        case .pointerMotion(let motion):
            out.i32(motion.dx)
            out.i32(motion.dy)
            out.f64(motion.acceleratedDX)
            out.f64(motion.acceleratedDY)
            out.f64(motion.unacceleratedDX)
            out.f64(motion.unacceleratedDY)
            out.bool(motion.cursor != nil)
            out.f64(motion.cursor?.location.x ?? 0)
            out.f64(motion.cursor?.location.y ?? 0)
            out.u16(UInt16(clamping: motion.cursor?.screen ?? 0))
        case .scroll(let scroll):
            out.f64(scroll.vertical)
            out.f64(scroll.horizontal)
            out.f64(scroll.unscaledVertical)
            out.f64(scroll.unscaledHorizontal)
            out.bool(scroll.isHighResolution)
            out.u8(UInt8(scrollSources.firstIndex(of: scroll.source)!))
            out.u8(UInt8(scrollPhases.firstIndex(of: scroll.phase)!))
        case .absolutePointer(let pointer):
            out.i32(pointer.x)
            out.i32(pointer.y)
            out.f64(pointer.normalizedX)
            out.f64(pointer.normalizedY)
            encode(pointer.screenLocation, into: &out)
        case .digitizer(let frame):
            out.u8(UInt8(frame.count))
            out.i32(Int32(clamping: frame.fingerCount))
            out.u8((frame.isBoundingBox ? 1 : 0) | (frame.buttonDown ? 2 : 0))
            for index in 0..<frame.count { encode(frame[index], into: &out) }
        case .pen(let pen):
            out.u8(UInt8(penTools.firstIndex(of: pen.tool)!))
            out.u8((pen.inProximity ? 1 : 0) | (pen.touching ? 2 : 0) | (pen.screenLocation != nil ? 4 : 0))
            out.i32(pen.x)
            out.i32(pen.y)
            out.f64(pen.normalizedX)
            out.f64(pen.normalizedY)
            out.f64(pen.pressure)
            out.i32(pen.distance)
            out.f64(pen.tiltX)
            out.f64(pen.tiltY)
            out.u8(pen.barrelButtons)
            out.f64(pen.screenLocation?.x ?? 0)
            out.f64(pen.screenLocation?.y ?? 0)
        case .gamepadButton(let button):
            out.u16(button.code)
            out.bool(button.isDown)
        case .gamepadAxis(let axis):
            out.u16(axis.code)
            out.i32(axis.value)
            out.f64(axis.normalized)
        case .switchChanged(let change):
            out.u16(change.code)
            out.bool(change.isOn)
        case .dial(let steps):
            out.i32(steps)
        case .motion(let motion):
            for vector in [motion.acceleration, motion.rotationRate] {
                out.f64(vector.x)
                out.f64(vector.y)
                out.f64(vector.z)
            }
            out.bool(motion.sensorTime != nil)
            out.u64(motion.sensorTime ?? 0)
            out.f64(motion.sampleRate)
            out.u32(motion.sampleCount)
            out.u8(motion.sensors.rawValue)
            out.bool(motion.isCalibrated)
        case .axis(let axis):
            out.bool(axis.source == .relative)
            out.u16(axis.code)
            out.i32(axis.value)
            out.bool(axis.normalized != nil)
            out.f64(axis.normalized ?? 0)
        case .deviceAdded, .deviceRemoved, .focusChanged:
            break
        case .eventsDropped(let count):
            out.u64(UInt64(max(0, count)))
        case .gamepad(let gamepad):
            out.u8(gamepad.control.rawValue)
            out.f64(gamepad.value)
            out.i32(gamepad.raw)
        }
    }

    /// The bytes ``encode(_:into:)`` appends for `event`, worked out without encoding it.
    static func encodedSize(_ event: HIDEvent) -> Int {
        let payload: Int
        switch event.payload {
        case .key(let key): payload = 9 + 4 + 1 + key.text.count + 4
        case .button: payload = 7
        case .pointerMotion: payload = 59
        case .scroll: payload = 35
        case .absolutePointer: payload = 41
        case .digitizer(let frame): payload = 6 + frame.count * contactSize
        case .pen: payload = 71
        case .gamepadButton, .switchChanged: payload = 3
        case .gamepadAxis: payload = 14
        case .dial: payload = 4
        case .motion: payload = 71
        case .axis: payload = 16
        case .deviceAdded, .deviceRemoved, .focusChanged: payload = 0
        case .eventsDropped: payload = 8
        case .gamepad: payload = 13
        }
        return 13 + payload
    }

    /// The bytes of one encoded contact.
    private static let contactSize = 88

    private static let penTools: [PenEvent.Tool] = [.pen, .eraser, .brush, .pencil, .airbrush, .mouse, .lens]
    private static let phases: [Contact.Phase] = [.began, .moved, .stationary, .ended, .cancelled]
    private static let scrollSources: [ScrollEvent.Source] = [.wheel, .finger, .edge, .continuous]
    private static let scrollPhases: [ScrollEvent.Phase] = [.none, .began, .changed, .ended]

    private static func encode(_ contact: Contact, into out: inout WireWriter) {
        out.i16(contact.slot)
        out.i32(contact.trackingID)
        out.u8(UInt8(phases.firstIndex(of: contact.phase)!))
        out.i32(contact.x)
        out.i32(contact.y)
        out.f64(contact.normalizedX)
        out.f64(contact.normalizedY)
        out.u8(
            (contact.millimetresX != nil ? 1 : 0) | (contact.millimetresY != nil ? 2 : 0) | (contact.screenLocation != nil ? 4 : 0))
        out.f64(contact.millimetresX ?? 0)
        out.f64(contact.millimetresY ?? 0)
        out.f64(contact.screenLocation?.x ?? 0)
        out.f64(contact.screenLocation?.y ?? 0)
        for value in [contact.pressure, contact.size, contact.minor, contact.orientation, contact.distance, contact.toolType] {
            out.i32(value)
        }
    }

    /// Reads one event, checking every field.
    static func decodeEvent(from input: inout WireReader) throws(Violation) -> HIDEvent {
        let kindIndex = try input.u8("event kind")
        guard Int(kindIndex) < kinds.count else { throw .unknown(field: "event kind", value: UInt64(kindIndex)) }
        let device = HIDDeviceID(rawValue: try input.u32("event device"))
        let time = try input.u64("event timestamp")
        let payload: HIDEvent.Payload
        switch kinds[Int(kindIndex)] {
        case .key:
            let code = try input.code("key code", maximum: Evdev.KEY_MAX)
            let rawState = try input.u8("key state")
            guard rawState <= 2 else { throw .unknown(field: "key state", value: UInt64(rawState)) }
            let hasUsage = try input.bool("key usage flag")
            let page = try input.u16("key usage page")
            let usage = try input.u16("key usage")
            guard hasUsage || (page == 0 && usage == 0) else { throw .outOfRange(field: "key usage", value: Int64(usage)) }
            let modifiers = KeyModifiers(rawValue: try input.u8("key modifiers"))
            let keysym = try input.u32("key keysym")
            let text = try input.keyText("key text")
            let keymapModifiers = KeymapModifierState(
                effective: KeymapModifiers(rawValue: try input.u8("key effective modifiers")),
                latched: KeymapModifiers(rawValue: try input.u8("key latched modifiers")),
                locked: KeymapModifiers(rawValue: try input.u8("key locked modifiers")),
                layout: try input.u8("key layout"))
            payload = .key(
                KeyEvent(
                    usage: hasUsage ? HIDUsage(page: page, usage: usage) : nil, code: code,
                    state: [KeyEvent.State.down, .up, .repeat][Int(rawState)], modifiers: modifiers, keysym: keysym,
                    text: text, keymapModifiers: keymapModifiers))
        case .button:
            let code = try input.code("button code", maximum: Evdev.KEY_MAX)
            let number = try input.i32("button number", in: 0...Int32(Evdev.KEY_MAX) + 1)
            payload = .button(ButtonEvent(code: code, number: Int(number), isDown: try input.bool("button state")))
        case .pointerMotion:
            payload = .pointerMotion(try decodePointerMotion(from: &input))
        case .scroll:
            let vertical = try input.amount("scroll vertical")
            let horizontal = try input.amount("scroll horizontal")
            let unscaledVertical = try input.amount("scroll unscaled vertical")
            let unscaledHorizontal = try input.amount("scroll unscaled horizontal")
            let isHighResolution = try input.bool("scroll hi-res flag")
            let source = try input.u8("scroll source")
            guard Int(source) < scrollSources.count else { throw .unknown(field: "scroll source", value: UInt64(source)) }
            let phase = try input.u8("scroll phase")
            guard Int(phase) < scrollPhases.count else { throw .unknown(field: "scroll phase", value: UInt64(phase)) }
            payload = .scroll(
                ScrollEvent(
                    vertical: vertical, horizontal: horizontal, isHighResolution: isHighResolution,
                    source: scrollSources[Int(source)], phase: scrollPhases[Int(phase)], unscaledVertical: unscaledVertical,
                    unscaledHorizontal: unscaledHorizontal))
        case .absolutePointer:
            var pointer = AbsolutePointerEvent(
                x: try input.i32("pointer x"), y: try input.i32("pointer y"),
                normalizedX: try input.f64("pointer normalized x"), normalizedY: try input.f64("pointer normalized y"))
            let hasLocation = try input.bool("pointer screen flag")
            pointer.screenLocation = try decodeScreenLocation("pointer screen x", "pointer screen y", hasIt: hasLocation, from: &input)
            payload = .absolutePointer(pointer)
        case .digitizer:
            payload = .digitizer(try decodeFrame(from: &input))
        case .pen:
            payload = .pen(try decodePen(from: &input))
        case .gamepadButton:
            payload = .gamepadButton(
                GamepadButtonEvent(
                    code: try input.code("gamepad button code", maximum: Evdev.KEY_MAX),
                    isDown: try input.bool("gamepad button state")))
        case .gamepadAxis:
            payload = .gamepadAxis(
                GamepadAxisEvent(
                    code: try input.code("gamepad axis code", maximum: Evdev.ABS_MAX),
                    value: try input.i32("gamepad axis value"), normalized: try input.f64("gamepad axis normalized")))
        case .switchChanged:
            payload = .switchChanged(
                SwitchEvent(code: try input.code("switch code", maximum: Evdev.SW_MAX), isOn: try input.bool("switch state")))
        case .dial:
            payload = .dial(try input.i32("dial steps"))
        case .motion:
            payload = .motion(try decodeMotion(from: &input))
        case .axis:
            let relative = try input.bool("axis source")
            let code = try input.code("axis code", maximum: relative ? Evdev.REL_MAX : Evdev.ABS_MAX)
            let value = try input.i32("axis value")
            let hasNormalized = try input.bool("axis normalized flag")
            let normalized = try input.f64("axis normalized")
            guard hasNormalized || normalized == 0 else { throw .outOfRange(field: "axis normalized", value: 1) }
            payload = .axis(
                AxisEvent(
                    source: relative ? .relative : .absolute, code: code, value: value,
                    normalized: hasNormalized ? normalized : nil))
        case .gamepad:
            let rawControl = try input.u8("gamepad control")
            guard let control = GamepadControl(rawValue: rawControl) else {
                throw .unknown(field: "gamepad control", value: UInt64(rawControl))
            }
            let value = try input.f64("gamepad value")
            guard value >= -1 && value <= 1 else { throw .outOfRange(field: "gamepad value", value: value > 0 ? 2 : -2) }
            payload = .gamepad(GamepadEvent(control: control, value: value, raw: try input.i32("gamepad raw")))
        case .deviceAdded:
            payload = .deviceAdded
        case .deviceRemoved:
            payload = .deviceRemoved
        case .eventsDropped:
            let count = try input.u64("dropped count")
            guard count <= UInt64(Int.max) else { throw .outOfRange(field: "dropped count", value: -1) }
            payload = .eventsDropped(count: Int(count))
        case .focusChanged:
            // A client makes its own from the server's focus messages: never in a batch.
            throw .unknown(field: "event kind", value: UInt64(kindIndex))
        }
        return HIDEvent(device: device, timestamp: MonotonicInstant(nanoseconds: time), payload: payload)
    }

    /// Reads a pointer motion: the raw, accelerated and unaccelerated deltas, then the
    /// cursor's flag, location and screen (all 0 without a cursor).
    private static func decodePointerMotion(from input: inout WireReader) throws(Violation) -> PointerMotionEvent {
        let dx = try input.i32("motion dx")
        let dy = try input.i32("motion dy")
        let acceleratedDX = try input.amount("motion accelerated dx")
        let acceleratedDY = try input.amount("motion accelerated dy")
        let unacceleratedDX = try input.amount("motion unaccelerated dx")
        let unacceleratedDY = try input.amount("motion unaccelerated dy")
        let hasCursor = try input.bool("motion cursor flag")
        let location = try decodeScreenLocation("motion cursor x", "motion cursor y", hasIt: hasCursor, from: &input)
        let screen = try input.u16("motion cursor screen")
        guard hasCursor || screen == 0 else { throw .notCanonical(field: "motion cursor screen") }
        return PointerMotionEvent(
            dx: dx, dy: dy, acceleratedDX: acceleratedDX, acceleratedDY: acceleratedDY, unacceleratedDX: unacceleratedDX,
            unacceleratedDY: unacceleratedDY, cursor: location.map { PointerCursor(location: $0, screen: Int(screen)) })
    }

    private static func decodeFrame(from input: inout WireReader) throws(Violation) -> DigitizerFrame {
        let count = try input.u8("contact count")
        guard Int(count) <= DigitizerFrame.capacity else { throw .outOfRange(field: "contact count", value: Int64(count)) }
        var frame = DigitizerFrame()
        frame.fingerCount = Int(try input.i32("finger count", in: 0...maximumFingerCount))
        let flags = try input.u8("frame flags")
        guard flags & ~3 == 0 else { throw .unknown(field: "frame flags", value: UInt64(flags)) }
        frame.isBoundingBox = flags & 1 != 0
        frame.buttonDown = flags & 2 != 0
        for _ in 0..<count { frame.append(try decodeContact(from: &input)) }
        return frame
    }

    /// A screen location as a flag byte and two numbers (both 0 without one).
    private static func encode(_ location: ScreenPoint?, into out: inout WireWriter) {
        out.bool(location != nil)
        out.f64(location?.x ?? 0)
        out.f64(location?.y ?? 0)
    }

    /// Reads a screen location: the flag, then both numbers (0 when the flag is off).
    private static func decodeScreenLocation(
        _ fieldX: StaticString, _ fieldY: StaticString, hasIt: Bool, from input: inout WireReader
    ) throws(Violation) -> ScreenPoint? {
        let x = try input.f64(fieldX)
        let y = try input.f64(fieldY)
        guard hasIt || (x == 0 && y == 0) else { throw .notCanonical(field: "\(fieldX) and y") }
        return hasIt ? ScreenPoint(x: x, y: y) : nil
    }

    private static func decodeContact(from input: inout WireReader) throws(Violation) -> Contact {
        var contact = Contact()
        contact.slot = try input.i16("contact slot")
        guard contact.slot >= 0, Int(contact.slot) < Evdev.maximumSlotCount else {
            throw .outOfRange(field: "contact slot", value: Int64(contact.slot))
        }
        contact.trackingID = try input.i32("contact tracking id")
        let phase = try input.u8("contact phase")
        guard Int(phase) < phases.count else { throw .unknown(field: "contact phase", value: UInt64(phase)) }
        contact.phase = phases[Int(phase)]
        contact.x = try input.i32("contact x")
        contact.y = try input.i32("contact y")
        contact.normalizedX = try input.f64("contact normalized x")
        contact.normalizedY = try input.f64("contact normalized y")
        let flags = try input.u8("contact millimetre flags")
        guard flags & ~7 == 0 else { throw .unknown(field: "contact millimetre flags", value: UInt64(flags)) }
        let millimetresX = try input.f64("contact millimetres x")
        let millimetresY = try input.f64("contact millimetres y")
        guard flags & 1 != 0 || millimetresX == 0, flags & 2 != 0 || millimetresY == 0 else {
            throw .notCanonical(field: "contact millimetres")
        }
        contact.screenLocation = try decodeScreenLocation("contact screen x", "contact screen y", hasIt: flags & 4 != 0, from: &input)
        contact.millimetresX = flags & 1 != 0 ? millimetresX : nil
        contact.millimetresY = flags & 2 != 0 ? millimetresY : nil
        contact.pressure = try input.i32("contact pressure")
        contact.size = try input.i32("contact size")
        contact.minor = try input.i32("contact minor")
        contact.orientation = try input.i32("contact orientation")
        contact.distance = try input.i32("contact distance")
        contact.toolType = try input.i32("contact tool type")
        return contact
    }

    private static func decodeMotion(from input: inout WireReader) throws(Violation) -> MotionEvent {
        let acceleration = MotionVector(
            x: try input.f64("acceleration x"), y: try input.f64("acceleration y"), z: try input.f64("acceleration z"))
        let rotationRate = MotionVector(
            x: try input.f64("rotation rate x"), y: try input.f64("rotation rate y"), z: try input.f64("rotation rate z"))
        let hasSensorTime = try input.bool("motion sensor time flag")
        let sensorTime = try input.u64("motion sensor time")
        guard hasSensorTime || sensorTime == 0 else { throw .notCanonical(field: "motion sensor time") }
        let sampleRate = try input.f64("motion sample rate")
        guard sampleRate >= 0 else {
            // A finite double may lie beyond Int64's range: the value named is clamped to it.
            throw .outOfRange(field: "motion sample rate", value: Int64(exactly: sampleRate.rounded(.down)) ?? .min)
        }
        let sampleCount = try input.u32("motion sample count")
        guard sampleCount > 0 else { throw .outOfRange(field: "motion sample count", value: 0) }
        let sensors = try input.u8("motion sensors")
        guard sensors & ~3 == 0 else { throw .unknown(field: "motion sensors", value: UInt64(sensors)) }
        return MotionEvent(
            acceleration: acceleration, rotationRate: rotationRate, sensorTime: hasSensorTime ? sensorTime : nil,
            sampleRate: sampleRate, sampleCount: sampleCount, sensors: MotionEvent.Sensors(rawValue: sensors),
            isCalibrated: try input.bool("motion calibrated flag"))
    }

    private static func decodePen(from input: inout WireReader) throws(Violation) -> PenEvent {
        let tool = try input.u8("pen tool")
        guard Int(tool) < penTools.count else { throw .unknown(field: "pen tool", value: UInt64(tool)) }
        let flags = try input.u8("pen flags")
        guard flags & ~7 == 0 else { throw .unknown(field: "pen flags", value: UInt64(flags)) }
        let x = try input.i32("pen x")
        let y = try input.i32("pen y")
        let normalizedX = try input.f64("pen normalized x")
        let normalizedY = try input.f64("pen normalized y")
        let pressure = try input.f64("pen pressure")
        let distance = try input.i32("pen distance")
        let tiltX = try input.f64("pen tilt x")
        let tiltY = try input.f64("pen tilt y")
        let buttons = try input.u8("pen barrel buttons")
        guard buttons & ~7 == 0 else { throw .unknown(field: "pen barrel buttons", value: UInt64(buttons)) }
        let location = try decodeScreenLocation("pen screen x", "pen screen y", hasIt: flags & 4 != 0, from: &input)
        return PenEvent(
            tool: penTools[Int(tool)], inProximity: flags & 1 != 0, touching: flags & 2 != 0, x: x, y: y,
            normalizedX: normalizedX, normalizedY: normalizedY, pressure: pressure, distance: distance, tiltX: tiltX,
            tiltY: tiltY, barrelButtons: buttons, screenLocation: location)
    }
}

extension WireReader {
    /// A key's text: a count of at most ``KeyText/capacity`` bytes, then that many bytes of
    /// valid UTF-8 (control characters are text here: Ctrl+C types U+0003).
    mutating func keyText(_ field: StaticString) throws(ServerWire.Violation) -> KeyText {
        let count = Int(try u8(field))
        guard count <= KeyText.capacity else { throw .outOfRange(field: "\(field)", value: Int64(count)) }
        var bytes: (UInt64, UInt64) = (0, 0)
        for index in 0..<count {
            let byte = try u8(field)
            withUnsafeMutableBytes(of: &bytes) { $0[index] = byte }
        }
        return try withUnsafeBytes(of: &bytes) { raw throws(ServerWire.Violation) in
            let utf8 = UnsafeBufferPointer(start: raw.bindMemory(to: UInt8.self).baseAddress, count: count)
            var iterator = utf8.makeIterator()
            var decoder = Unicode.UTF8()
            decoding: while true {
                switch decoder.decode(&iterator) {
                case .scalarValue: continue
                case .emptyInput: break decoding
                case .error: throw .notUTF8(field: "\(field)")
                }
            }
            return KeyText(utf8: utf8)
        }
    }
}
