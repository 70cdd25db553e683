import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Every bundled recording (devices/*.evemu, devices/gestures, devices/motion and the kernel
/// drivers' devices/kernel) and every real one (devices/real), each device with its
/// description.
func everyRecording() throws -> [(name: String, recording: Recording)] {
    var all: [(String, Recording)] = []
    for folder in [devicesFolder, gesturesFolder, motionFolder, devicesFolder + "/kernel"] {
        for entry in directoryEntries(folder) ?? [] where entry.name.hasSuffix(".evemu") {
            for recording in try Recording.loadAll(contentsOf: folder + "/" + entry.name) { all.append((entry.name, recording)) }
        }
    }
    for real in RealRecording.all {
        for recording in try real.load() { all.append((real.file, recording)) }
    }
    return all.sorted { $0.0 < $1.0 }
}

/// The standard gamepad's events (SDL's names) that a decoded frame of a device with a
/// bundled mapping makes, beside the frame, as the chain's gamepad stage adds them.
func withStandardGamepad(_ frame: [HIDEvent], _ layout: inout GamepadLayout?) -> [HIDEvent] {
    guard layout != nil else { return frame }
    var out: [HIDEvent] = []
    for event in frame {
        out.append(event)
        let emit: (GamepadEvent) -> Void = {
            out.append(HIDEvent(device: event.device, timestamp: event.timestamp, payload: .gamepad($0)))
        }
        switch event.payload {
        case .gamepadButton(let button): layout?.process(button: button.code, isDown: button.isDown, emit: emit)
        case .gamepadAxis(let axis): layout?.process(axis: axis.code, value: axis.value, emit: emit)
        default: break
        }
    }
    return out
}

/// The standard gamepad of a recording's device, where the bundled database maps it.
func standardGamepad(of recording: Recording) -> GamepadLayout? {
    guard let description = recording.description else { return nil }
    let device = HIDDeviceInfo(description: description)
    guard device.roles.contains(.gamepad) || device.roles.contains(.joystick),
        let match = bundledMappings.match(for: device)
    else { return nil }
    return GamepadLayout(device: device, mapping: match.mapping)
}

let bundledMappings = SDLMappingDatabase.bundled(hints: [:])

/// A batch's bytes read back.
func roundTrip(_ events: [HIDEvent], sequence: UInt64 = 7) throws -> [HIDEvent] {
    let batch = ServerWire.Batch(sequence: sequence, events: events)
    let decoded = try ServerWire.Batch(decoding: batch.encoded)
    #expect(decoded.sequence == sequence)
    return decoded.events
}

@Suite("The event server's wire format")
struct ServerWireTests {
    @Test("every event decoded from every bundled and real recording reads back equal, in batches of one frame")
    func everyRecordedEvent() throws {
        let recordings = try everyRecording()
        #expect(recordings.count >= 20, "found \(recordings.count) recordings")
        var total = 0
        var kinds = Set<HIDEvent.Kind>()
        for (name, recording) in recordings {
            var gamepad = standardGamepad(of: recording)
            try forEachDecodedFrame(of: recording) { decoded in
                let frame = withStandardGamepad(decoded, &gamepad)
                for event in frame {
                    var writer = WireWriter()
                    ServerWire.encode(event, into: &writer)
                    #expect(writer.bytes.count == ServerWire.encodedSize(event), "\(name): \(event.kind)'s size")
                }
                let back = try roundTrip(frame)
                #expect(back == frame, "\(name): a frame of \(frame.count) events read back differently")
                total += frame.count
                kinds.formUnion(frame.map(\.kind))
            }
        }
        // The lifecycle and loss events the chain makes itself, and a difference.
        let made: [HIDEvent] = [
            HIDEvent(device: HIDDeviceID(rawValue: 3), timestamp: .now, payload: .deviceAdded),
            HIDEvent(device: HIDDeviceID(rawValue: 3), timestamp: .now, payload: .deviceRemoved),
            HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .eventsDropped(count: 12345)),
        ]
        #expect(try roundTrip(made) == made)
        kinds.formUnion(made.map(\.kind))
        // A client makes its focus changes itself from the server's focus messages: that
        // kind never travels in a batch (and is refused there: ServerHostilePeerTests).
        let sent = Set(HIDEvent.Kind.allCases).subtracting([.focusChanged])
        #expect(kinds == sent, "kinds never seen in \(total) events of \(recordings.count) recordings: \(sent.subtracting(kinds))")
    }

    @Test(
        "a frame sent to several clients is encoded once: each client's batch, its own sequence number in it, is byte for byte the batch encoded for it alone, whole or as its number and a body every client shares, on every recording's frames"
    )
    func sharedBatchEncoding() throws {
        let shared = SharedBatchEncoding()
        var sequence: UInt64 = 1
        var frames = 0
        for (name, recording) in try everyRecording() {
            forEachDecodedFrame(of: recording) { frame in
                guard !frame.isEmpty, frame.count <= ServerWire.maximumBatchEvents else { return }
                // Three clients in one pass, each at its own place in its sequence.
                var bodies: [UInt] = []
                for client in 0..<3 {
                    let number = sequence + UInt64(client) * 1_000_003
                    let alone = ServerWire.Batch(sequence: number, events: frame).encoded
                    #expect(shared.batch(sequence: number, events: frame) == alone, "\(name): client \(client)'s batch")
                    let parts = shared.parts(sequence: number, events: frame)
                    #expect(parts.lead + parts.body == alone, "\(name): client \(client)'s batch in two parts")
                    bodies.append(parts.body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) })
                }
                // One body for the three: the same storage, not a copy each.
                #expect(Set(bodies).count == 1, "\(name): the clients' bodies are copies")
                sequence += 1
                frames += 1
            }
        }
        #expect(frames >= 1000, "only \(frames) frames")
    }

    @Test("every event decoded from every bundled and real recording, made again with the public initializers, is equal")
    func everyRecordedEventMadeByAnApp() throws {
        var kinds = Set<HIDEvent.Kind>()
        var total = 0
        for (name, recording) in try everyRecording() {
            var differing: [(made: HIDEvent, decoded: HIDEvent)] = []
            var gamepad = standardGamepad(of: recording)
            forEachDecodedFrame(of: recording) { decodedFrame in
                let frame = withStandardGamepad(decodedFrame, &gamepad)
                for decoded in frame {
                    let made = madeByAnApp(decoded)
                    if made != decoded { differing.append((made, decoded)) }
                    kinds.insert(decoded.kind)
                }
                total += frame.count
            }
            #expect(
                differing.isEmpty,
                "\(name): \(differing.count) events differ, the first made as \(differing.first!.made), decoded as \(differing.first!.decoded)"
            )
        }
        #expect(total > 50_000, "\(total) events")
        let lifecycle: Set<HIDEvent.Kind> = [.deviceAdded, .deviceRemoved, .eventsDropped, .focusChanged]
        #expect(
            kinds.union(lifecycle) == Set(HIDEvent.Kind.allCases), "kinds never seen: \(Set(HIDEvent.Kind.allCases).subtracting(kinds))")
    }

    @Test(
        "The input chain article's synthetic key press is what the decoder makes of a recorded one, and the article shows the code tested")
    func articlesSyntheticEvents() throws {
        let (press, touch) = theArticlesSyntheticEvents()
        let recording = try loadRecording("keyboard")
        let decoded = decodedEvents(of: recording)
        let firstA = try #require(decoded.first { if case .key(let key) = $0.payload { key.code == 30 } else { false } })
        #expect(firstA.payload == press.payload)
        guard case .digitizer(let frame) = touch.payload else { Issue.record("\(touch)"); return }
        #expect(frame.count == 1 && frame[0].trackingID == 7 && frame[0].phase == .began)

        var root = #filePath
        for _ in 0..<3 { root = String(root[..<root.lastIndex(of: "/")!]) }
        let article = ReadmeExample.sourceLines(root + "/Sources/RingLoopHID/RingLoopHID.docc/TheInputChain.md")
        let tested = ReadmeExample.sourceLines(root + "/Tests/RingLoopHIDTests/PublicPayloads.swift")
        let shown = [
            "let press = HIDEvent(", "payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(30), code: 30, state: .down)))",
            "var frame = DigitizerFrame()",
            "let touch = HIDEvent(device: HIDDeviceID(rawValue: 2), timestamp: .now, payload: .digitizer(frame))",
        ]
        for line in shown {
            #expect(article.contains(line) && tested.contains(line), "not in both the article and the test: \(line)")
        }
    }

    @Test("every recording's device description reads back as the same HIDDeviceInfo (class and roles derived alike)")
    func everyDescription() throws {
        for (name, recording) in try everyRecording() {
            var info = deviceInfo(of: recording)
            info.id = HIDDeviceID(rawValue: 42)
            info.path = "/dev/input/event\(name.count)"
            let back = try ServerWire.decodeDevice(ServerWire.encode(info))
            #expect(back == info, "\(name)")
            #expect(ServerWire.encode(info).count <= PortWire.fragmentCapacity, "\(name): a description fits one packet")
        }
    }

    @Test("the largest hello a client may send (longest port and client names, every kind and class) fits the server's message limit")
    func largestHello() throws {
        let port = String(repeating: "p", count: LocalMessagePort.maximumNameLength)
        let name = String(repeating: "n", count: ServerWire.maximumClientNameLength)
        let hello = ServerWire.Hello(
            token: .max, port: port, name: name, kinds: Set(HIDEvent.Kind.allCases), deviceClasses: Set(HIDDeviceClass.allCases),
            wantsFocus: true)
        #expect(try ServerWire.Hello(decoding: hello.encoded) == hello)
        #expect(hello.encoded.count <= ServerWire.maximumClientMessageSize, "\(hello.encoded.count) bytes")
        #expect(ServerWire.Ack(token: .max, sequence: .max).encoded.count <= ServerWire.maximumClientMessageSize)
    }

    @Test("the control messages read back; a hello of another version, a bad flag or trailing bytes are refused")
    func messages() throws {
        let hello = ServerWire.Hello(
            token: 0xdead_beef, port: "panel.client.1", name: "kiosk", kinds: [.switchChanged],
            deviceClasses: [.gamepad, .switch], wantsFocus: true)
        #expect(try ServerWire.Hello(decoding: hello.encoded) == hello)
        var other = hello.encoded
        other[0] = 9
        #expect(throws: ServerWire.Violation.version(of: "hello", received: 9, own: ServerWire.version)) {
            try ServerWire.Hello(decoding: other)
        }
        #expect(throws: ServerWire.Violation.self) { try ServerWire.Hello(decoding: hello.encoded + [0]) }
        var flag = hello.encoded
        flag[flag.count - 1] = 2
        #expect(throws: ServerWire.Violation.self) { try ServerWire.Hello(decoding: flag) }
        // The names a client chose end up in the server's log and on its terminal: a line
        // break (a forged log line), an escape (colours) or a NUL is refused.
        for (port, name, field) in [
            ("panel\n.client", "kiosk", "hello port"), ("panel.client", "x\ndetached client 1: FORGED", "hello name"),
            ("panel.client", "\u{1B}[31mred", "hello name"), ("panel.client\u{0}", "kiosk", "hello port"),
            ("panel.client", "del\u{7F}", "hello name"), ("panel.client", "c1\u{85}", "hello name"),
        ] {
            let bad = ServerWire.Hello(token: 1, port: port, name: name, kinds: [], deviceClasses: [], wantsFocus: false)
            #expect(throws: ServerWire.Violation.controlCharacter(field: field)) { try ServerWire.Hello(decoding: bad.encoded) }
        }
        #expect(throws: ServerWire.Violation.controlCharacter(field: "welcome refusal")) {
            try ServerWire.Welcome(decoding: ServerWire.Welcome(focused: false, window: 1, refusal: "full\u{1B}[2J").encoded)
        }
        let unicode = ServerWire.Hello(
            token: 1, port: "panneau.client", name: "kiosque ★ café", kinds: [], deviceClasses: [], wantsFocus: false)
        #expect(try ServerWire.Hello(decoding: unicode.encoded) == unicode)
        let ack = ServerWire.Ack(token: 5, sequence: 99)
        #expect(try ServerWire.Ack(decoding: ack.encoded) == ack)
        for welcome in [
            ServerWire.Welcome(focused: true, window: 256), ServerWire.Welcome(focused: false, window: 1, refusal: "no"),
            ServerWire.Welcome(focused: true, window: 8, layoutNames: ["English (US)", "German", "French (AZERTY)"]),
        ] {
            #expect(try ServerWire.Welcome(decoding: welcome.encoded) == welcome)
        }
        #expect(try ServerWire.decodeFocus(ServerWire.focus(true)))
        #expect(throws: ServerWire.Violation.self) { try ServerWire.decodeFocus([3]) }
    }

    @Test("every prefix of a batch is refused, naming the field it ends in; no byte string traps")
    func truncationsAndCorruption() throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let events = decodedEvents(of: recording, first: 200)
        let bytes = ServerWire.Batch(sequence: 1, events: events).encoded
        for length in 0..<bytes.count {
            #expect(throws: ServerWire.Violation.self) { try ServerWire.Batch(decoding: Array(bytes.prefix(length))) }
        }
        // Each byte flipped in turn: decoded or refused, never a trap; a contact count past
        // the capacity, an unknown kind and a NaN are refused.
        var generator = SystemRandomNumberGenerator()
        for index in 0..<bytes.count {
            var corrupt = bytes
            corrupt[index] ^= UInt8.random(in: 1...255, using: &generator)
            _ = try? ServerWire.Batch(decoding: corrupt)
        }
        var writer = WireWriter()
        writer.u64(1)
        writer.u16(1)
        writer.u8(UInt8(HIDEvent.Kind.allCases.firstIndex(of: .digitizer)!))
        writer.u32(1)
        writer.u64(1)
        writer.u8(17)
        #expect(throws: ServerWire.Violation.outOfRange(field: "contact count", value: 17)) {
            try ServerWire.Batch(decoding: writer.bytes)
        }
        var unknown = WireWriter()
        unknown.u64(1)
        unknown.u16(1)
        unknown.u8(UInt8(HIDEvent.Kind.allCases.count))
        #expect(throws: ServerWire.Violation.self) { try ServerWire.Batch(decoding: unknown.bytes) }
        let scroll = HIDEvent(
            device: HIDDeviceID(rawValue: 1), timestamp: .now,
            payload: .scroll(ScrollEvent(vertical: .nan, horizontal: 0, isHighResolution: false)))
        #expect(throws: ServerWire.Violation.notFinite(field: "scroll vertical")) {
            try ServerWire.Batch(decoding: ServerWire.Batch(sequence: 1, events: [scroll]).encoded)
        }
        // A motion sample's rate below zero, and beyond Int64's range (FuzzServerWire found
        // the conversion of the value named in the error trapping), and a count of none.
        for (rate, count, violation) in [
            (-3.0, UInt32(1), ServerWire.Violation.outOfRange(field: "motion sample rate", value: -3)),
            (-1e300, 1, .outOfRange(field: "motion sample rate", value: .min)),
            (250, 0, .outOfRange(field: "motion sample count", value: 0)),
        ] {
            let motion = HIDEvent(
                device: HIDDeviceID(rawValue: 2), timestamp: .now,
                payload: .motion(MotionEvent(acceleration: .zero, rotationRate: .zero, sampleRate: rate, sampleCount: count)))
            #expect(throws: violation) { try ServerWire.Batch(decoding: ServerWire.Batch(sequence: 1, events: [motion]).encoded) }
        }
    }

    @Test(
        "pointer motion's accelerated and unaccelerated deltas and cursor, and scrolling's unscaled amounts, source and phase, read back; a bad flag, source or phase is refused"
    )
    func pointerAndScrollFields() throws {
        let device = HIDDeviceID(rawValue: 4)
        let events = [
            HIDEvent(
                device: device, timestamp: .now,
                payload: .pointerMotion(
                    PointerMotionEvent(
                        dx: 3, dy: -7, acceleratedDX: 4.125, acceleratedDY: -9.625, unacceleratedDX: 2.75, unacceleratedDY: -6.5,
                        cursor: PointerCursor(location: ScreenPoint(x: 812.5, y: 0), screen: 2)))),
            HIDEvent(device: device, timestamp: .now, payload: .pointerMotion(PointerMotionEvent(dx: -1, dy: 0))),
            HIDEvent(
                device: device, timestamp: .now,
                payload: .scroll(
                    ScrollEvent(
                        vertical: -12.5, horizontal: 3, source: .finger, phase: .began, unscaledVertical: 6.25, unscaledHorizontal: -1.5))),
            HIDEvent(
                device: device, timestamp: .now, payload: .scroll(ScrollEvent(vertical: 0, horizontal: 0, source: .edge, phase: .ended))),
            HIDEvent(device: device, timestamp: .now, payload: .scroll(ScrollEvent(vertical: 0.25, isHighResolution: true))),
        ]
        #expect(try roundTrip(events) == events)
        #expect(events.allSatisfy { ServerWire.encodedSize($0) == ServerWire.Batch(sequence: 1, events: [$0]).encoded.count - 10 })

        // The byte after the hi-res flag is the source, then the phase; after the
        // accelerated deltas of a motion, the cursor's flag.
        let scrollBytes = ServerWire.Batch(sequence: 1, events: [events[2]]).encoded
        for (offset, value, violation) in [
            (scrollBytes.count - 2, UInt8(4), ServerWire.Violation.unknown(field: "scroll source", value: 4)),
            (scrollBytes.count - 1, 4, .unknown(field: "scroll phase", value: 4)),
            (scrollBytes.count - 3, 2, .outOfRange(field: "scroll hi-res flag", value: 2)),
        ] {
            var corrupt = scrollBytes
            corrupt[offset] = value
            #expect(throws: violation) { try ServerWire.Batch(decoding: corrupt) }
        }
        var motionBytes = ServerWire.Batch(sequence: 1, events: [events[1]]).encoded
        motionBytes[motionBytes.count - 2] = 1  // a screen without a cursor
        #expect(throws: ServerWire.Violation.notCanonical(field: "motion cursor screen")) { try ServerWire.Batch(decoding: motionBytes) }
        let infinite = HIDEvent(
            device: device, timestamp: .now, payload: .pointerMotion(PointerMotionEvent(dx: 1, dy: 1, acceleratedDX: .infinity)))
        #expect(throws: ServerWire.Violation.notFinite(field: "motion accelerated dx")) {
            try ServerWire.Batch(decoding: ServerWire.Batch(sequence: 1, events: [infinite]).encoded)
        }
        let notANumber = HIDEvent(
            device: device, timestamp: .now, payload: .pointerMotion(PointerMotionEvent(dx: 1, dy: 1, unacceleratedDY: .nan)))
        #expect(throws: ServerWire.Violation.notFinite(field: "motion unaccelerated dy")) {
            try ServerWire.Batch(decoding: ServerWire.Batch(sequence: 1, events: [notANumber]).encoded)
        }
        let unscaled = HIDEvent(
            device: device, timestamp: .now, payload: .scroll(ScrollEvent(vertical: 1, unscaledHorizontal: -.infinity)))
        #expect(throws: ServerWire.Violation.notFinite(field: "scroll unscaled horizontal")) {
            try ServerWire.Batch(decoding: ServerWire.Batch(sequence: 1, events: [unscaled]).encoded)
        }
    }

    @Test(
        "a motion's deltas and a scroll's amounts beyond ±1e6 (1e20, 1e155, 1e308), which a client's pointer stage would accelerate and scale, are refused naming the field and the bound"
    )
    func amountsBeyondTheBound() throws {
        let device = HIDDeviceID(rawValue: 4)
        for huge in [1e20, -1e155, 1e308, 1_000_000.5] {
            for (event, field) in [
                (PointerMotionEvent(dx: 1, dy: 1, unacceleratedDX: huge), "motion unaccelerated dx"),
                (PointerMotionEvent(dx: 1, dy: 1, unacceleratedDY: huge), "motion unaccelerated dy"),
                (PointerMotionEvent(dx: 1, dy: 1, acceleratedDX: huge), "motion accelerated dx"),
            ] {
                let bytes = ServerWire.Batch(
                    sequence: 1, events: [HIDEvent(device: device, timestamp: .now, payload: .pointerMotion(event))]
                ).encoded
                #expect(throws: ServerWire.Violation.beyondBound(field: field, bound: 1e6)) { try ServerWire.Batch(decoding: bytes) }
            }
            for (event, field) in [
                (ScrollEvent(vertical: 1, unscaledVertical: huge), "scroll unscaled vertical"),
                (ScrollEvent(vertical: 1, unscaledHorizontal: huge), "scroll unscaled horizontal"),
                (ScrollEvent(vertical: huge), "scroll vertical"),
            ] {
                let bytes = ServerWire.Batch(sequence: 1, events: [HIDEvent(device: device, timestamp: .now, payload: .scroll(event))])
                    .encoded
                #expect(throws: ServerWire.Violation.beyondBound(field: field, bound: 1e6)) { try ServerWire.Batch(decoding: bytes) }
            }
        }
        // The bound itself is taken.
        let edge = [
            HIDEvent(
                device: device, timestamp: .now,
                payload: .pointerMotion(PointerMotionEvent(dx: 1, dy: 1, unacceleratedDX: -1e6, unacceleratedDY: 1e6)))
        ]
        #expect(try roundTrip(edge) == edge)
        #expect(
            "\(ServerWire.Violation.beyondBound(field: "scroll vertical", bound: 1e6))"
                == "scroll vertical is beyond ±1000000; valid values are from −1000000 to 1000000")
    }

    @Test("a description with codes out of order, an axis the device lacks or a code past its type's maximum is refused")
    func hostileDescriptions() throws {
        var writer = WireWriter()
        writer.u32(1)
        writer.string("/dev/input/event0")
        writer.string("evil")
        for _ in 0..<4 { writer.u16(0) }
        writer.u16(1)
        writer.u16(Evdev.EV_KEY)
        writer.u16(2)
        writer.u16(30)
        writer.u16(30)
        #expect(throws: ServerWire.Violation.notCanonical(field: "device codes")) {
            try ServerWire.decodeDevice(writer.bytes)
        }
        var past = WireWriter()
        past.u32(1)
        past.string("")
        past.string("evil")
        for _ in 0..<4 { past.u16(0) }
        past.u16(1)
        past.u16(Evdev.EV_SW)
        past.u16(1)
        past.u16(Evdev.SW_MAX + 1)
        #expect(throws: ServerWire.Violation.self) { try ServerWire.decodeDevice(past.bytes) }
        var axis = WireWriter()
        axis.u32(1)
        axis.string("")
        axis.string("evil")
        for _ in 0..<4 { axis.u16(0) }
        axis.u16(0)
        axis.u16(1)
        axis.u16(Evdev.ABS_X)
        #expect(throws: ServerWire.Violation.self) { try ServerWire.decodeDevice(axis.bytes) }
    }
}
