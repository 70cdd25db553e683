import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Writes `text` to a new file at `path`.
func writeTextFile(_ path: String, _ text: String) throws {
    struct CannotWrite: Error { var path: String }
    guard let file = fopen(path, "w") else { throw CannotWrite(path: path) }
    defer { fclose(file) }
    _ = text.withCString { fputs($0, file) }
}

/// One position a recording decoded to: its kind (a multitouch contact or an `ABS_X`/`ABS_Y`
/// pen or pointer), device units, and the event it came from.
private struct DecodedPosition {
    var multitouch: Bool
    var x: Int32
    var y: Int32
    var normalizedX: Double
    var normalizedY: Double
}

@Suite("Screens: libinput's calibration and rotation, mapping, validation")
struct ScreenMappingTests {
    @Test(
        "the panel's corners land where libinput's matrices put them, at each rotation (hand-derived)",
        arguments: [
            // (rotation, device (0,0), (1,0), (0,1), (1,1)) on a 1080x1920 screen. 90: (x,y) → (1−y, x);
            // 180: (1−x, 1−y); 270: (y, 1−x).
            (0, [0.0, 0], [1080.0, 0], [0.0, 1920], [1080.0, 1920]),
            (90, [1080.0, 0], [1080.0, 1920], [0.0, 0], [0.0, 1920]),
            (180, [1080.0, 1920], [0.0, 1920], [1080.0, 0], [0.0, 0]),
            (270, [0.0, 1920], [0.0, 0], [1080.0, 1920], [1080.0, 0]),
        ])
    func corners(rotation: Int, topLeft: [Double], topRight: [Double], bottomLeft: [Double], bottomRight: [Double]) throws {
        let screen = try ScreenDescription(parsing: "1080x1920@\(rotation)")
        let mapping = ScreenMapping(screen: screen)
        for (device, expected) in [((0.0, 0.0), topLeft), ((1.0, 0.0), topRight), ((0.0, 1.0), bottomLeft), ((1.0, 1.0), bottomRight)] {
            let point = mapping.location(normalizedX: device.0, normalizedY: device.1)
            #expect(abs(point.x - expected[0]) < 1e-9 && abs(point.y - expected[1]) < 1e-9, "\(device) → \(point), not \(expected)")
        }
    }

    @Test("a calibration matrix comes before the rotation: a half-width shift, then 90° clockwise (hand-derived)")
    func calibrationBeforeRotation() throws {
        // [1 0 0.5; 0 1 0]: (0.25, 0.5) → (0.75, 0.5); 90° cw → (1 − 0.5, 0.75) = (0.5, 0.75) → (400, 450) on 800x600.
        let mapping = ScreenMapping(
            screen: try ScreenDescription(parsing: "800x600@90"), calibration: try CalibrationMatrix(parsing: "1 0 0.5 0 1 0"))
        let point = mapping.location(normalizedX: 0.25, normalizedY: 0.5)
        #expect(abs(point.x - 400) < 1e-9 && abs(point.y - 450) < 1e-9, "\(point)")
    }

    static let matrices = ["1 0 0 0 1 0", "1.05 0.02 -0.03 -0.01 0.97 0.02", "0 1 0 1 0 0", "-1 0 1 0 1 0", "0.5 0 0.25 0 0.5 0.25"]

    @Test(
        "every touchscreen, tablet and absolute pointer of devices/real, at every rotation and with non-trivial matrices, maps where libinput's formula (Python, reading the recording's own axis ranges) puts it",
        .enabled(if: access("/usr/bin/python3", X_OK) == 0, "python3 (tools/setup installs it with python3-libevdev)"))
    func realRecordingsAgainstTheFormula() throws {
        var recordingsSeen = 0
        var pointsCompared = 0
        let directory = "/tmp/ringloop-screen-\(getpid())"
        mkdir(directory, 0o700)
        defer {
            for name in ["points", "expected"] { unlink(directory + "/" + name) }
            rmdir(directory)
        }
        for real in RealRecording.all {
            for recording in try real.load() {
                let info = deviceInfo(of: recording)
                guard ScreenMapper.mapsToScreen(info) else { continue }
                var positions: [DecodedPosition] = []
                for event in decodedEvents(of: recording) where positions.count < 300 {
                    switch event.payload {
                    case .digitizer(let frame):
                        for contact in frame.contacts {
                            positions.append(
                                DecodedPosition(
                                    multitouch: true, x: contact.x, y: contact.y, normalizedX: contact.normalizedX,
                                    normalizedY: contact.normalizedY))
                        }
                    case .pen(let pen):
                        positions.append(
                            DecodedPosition(
                                multitouch: false, x: pen.x, y: pen.y, normalizedX: pen.normalizedX, normalizedY: pen.normalizedY))
                    case .absolutePointer(let pointer):
                        positions.append(
                            DecodedPosition(
                                multitouch: false, x: pointer.x, y: pointer.y, normalizedX: pointer.normalizedX,
                                normalizedY: pointer.normalizedY))
                    default: break
                    }
                }
                guard !positions.isEmpty else { continue }
                // A device whose axes have an empty range cannot be mapped; the formula divides by zero.
                let axes = info.axes
                guard
                    positions.allSatisfy({ position in
                        let (xCode, yCode) =
                            position.multitouch ? (Evdev.ABS_MT_POSITION_X, Evdev.ABS_MT_POSITION_Y) : (Evdev.ABS_X, Evdev.ABS_Y)
                        return (axes[xCode].map { $0.maximum > $0.minimum } ?? false)
                            && (axes[yCode].map { $0.maximum > $0.minimum } ?? false)
                    })
                else { continue }
                recordingsSeen += 1
                try writeTextFile(
                    directory + "/points",
                    positions.map { "\($0.multitouch ? "mt" : "abs") \($0.x) \($0.y)\n" }.joined())
                let axesFile = RealRecording.folder + "/" + (real.descriptionFile ?? real.file)
                for rotation in ScreenRotation.allCases {
                    for text in Self.matrices {
                        let screen = try ScreenDescription(name: "panel", width: 1080, height: 1920, rotation: rotation)
                        let mapping = ScreenMapping(screen: screen, calibration: try CalibrationMatrix(parsing: text))
                        let python = try Spawned(
                            "/usr/bin/python3",
                            ["-c", libinputFormulaScript, axesFile, directory + "/points", "1080", "1920", String(rotation.degrees)]
                                + text.split(separator: " ").map(String.init))
                        #expect(python.finish(timeout: .seconds(60)) == 0, "\(python.error)")
                        let expected = python.output.split(separator: "\n").map { line in
                            line.split(separator: " ").map { Double($0)! }
                        }
                        try #require(expected.count == positions.count, "\(real.file): \(python.error)")
                        for (position, want) in zip(positions, expected) {
                            var event = HIDEvent(
                                device: HIDDeviceID(rawValue: 1), timestamp: MonotonicInstant(nanoseconds: 0),
                                payload: .absolutePointer(
                                    AbsolutePointerEvent(
                                        x: position.x, y: position.y, normalizedX: position.normalizedX,
                                        normalizedY: position.normalizedY)))
                            ScreenMapper.apply(mapping, to: &event)
                            guard case .absolutePointer(let mapped) = event.payload, let got = mapped.screenLocation else {
                                Issue.record("no screen location")
                                return
                            }
                            #expect(
                                abs(got.x - want[0]) < 1e-6 && abs(got.y - want[1]) < 1e-6,
                                "\(real.file) at \(rotation.degrees)° with \(text): (\(position.x), \(position.y)) → \(got), libinput's formula \(want)"
                            )
                            pointsCompared += 1
                        }
                    }
                }
            }
        }
        #expect(recordingsSeen >= 10, "\(recordingsSeen) recordings of absolute devices")
        #expect(pointsCompared >= 10_000, "\(pointsCompared) positions compared")
    }

    @Test("the mapper fills in contacts, pens and absolute pointers of mapped devices only, and forgets a removed device")
    func mapperFillsInLocations() throws {
        let recording = try #require(
            try RealRecording.all.first { $0.file.hasSuffix("3m.event") }?.load().first, "devices/real/evemu/3m.event")
        let info = deviceInfo(of: recording)
        #expect(ScreenMapper.mapsToScreen(info))
        var mapper = ScreenMapper()
        let mapping = ScreenMapping(screen: try ScreenDescription(parsing: "1080x1920@90"))
        mapper.setMapping(mapping, for: info.id)
        var contacts = 0
        for var event in decodedEvents(of: recording) {
            mapper.process(&event)
            guard case .digitizer(let frame) = event.payload else { continue }
            for contact in frame.contacts {
                let location = try #require(contact.screenLocation)
                #expect(location == mapping.location(normalizedX: contact.normalizedX, normalizedY: contact.normalizedY))
                #expect((0...1080).contains(location.x) && (0...1920).contains(location.y), "\(location) outside 1080x1920")
                contacts += 1
            }
        }
        #expect(contacts > 100)
        var other = HIDEvent(
            device: HIDDeviceID(rawValue: 99), timestamp: MonotonicInstant(nanoseconds: 0),
            payload: .absolutePointer(AbsolutePointerEvent(x: 1, y: 1, normalizedX: 0.5, normalizedY: 0.5)))
        mapper.process(&other)
        #expect(other.payload == .absolutePointer(AbsolutePointerEvent(x: 1, y: 1, normalizedX: 0.5, normalizedY: 0.5)))
        var removal = HIDEvent(device: info.id, timestamp: MonotonicInstant(nanoseconds: 0), payload: .deviceRemoved)
        mapper.process(&removal)
        #expect(mapper.mapping(for: info.id) == nil)
    }

    @Test("a touchpad, keyboard, gamepad or motion sensor of devices/real does not map to a screen")
    func onlyAbsoluteDevicesMap() throws {
        var checked = 0
        for real in RealRecording.all {
            for recording in try real.load() {
                let info = deviceInfo(of: recording)
                if [.touchpad, .keyboard, .gamepad, .joystick, .motion].contains(info.deviceClass) {
                    #expect(!ScreenMapper.mapsToScreen(info), "\(real.file) is a \(info.deviceClass)")
                    checked += 1
                }
            }
        }
        #expect(checked > 20)
    }

    @Test("screen locations cross the server's wire and read back equal; the size is what encodedSize says")
    func wireCarriesLocations() throws {
        var frame = DigitizerFrame()
        frame.append(
            Contact(
                slot: 0, trackingID: 4, phase: .began, x: 10, y: 20, normalizedX: 0.1, normalizedY: 0.2,
                screenLocation: ScreenPoint(x: 1.5, y: 2.25)))
        frame.append(Contact(slot: 1, trackingID: 5, phase: .moved, x: 11, y: 21))
        let payloads: [HIDEvent.Payload] = [
            .digitizer(frame),
            .pen(
                PenEvent(
                    inProximity: true, touching: true, x: 3, y: 4, normalizedX: 0.3, normalizedY: 0.4,
                    screenLocation: ScreenPoint(x: 324, y: 768))),
            .pen(PenEvent(inProximity: true, touching: false, x: 3, y: 4, normalizedX: 0.3, normalizedY: 0.4)),
            .absolutePointer(
                AbsolutePointerEvent(x: 5, y: 6, normalizedX: 0.5, normalizedY: 0.6, screenLocation: ScreenPoint(x: -3, y: 2000.5))),
            .absolutePointer(AbsolutePointerEvent(x: 5, y: 6, normalizedX: 0.5, normalizedY: 0.6)),
        ]
        let events = payloads.map { HIDEvent(device: HIDDeviceID(rawValue: 2), timestamp: MonotonicInstant(nanoseconds: 77), payload: $0) }
        for event in events {
            var writer = WireWriter()
            ServerWire.encode(event, into: &writer)
            #expect(writer.bytes.count == ServerWire.encodedSize(event))
        }
        #expect(try roundTrip(events) == events)
        // A location's numbers without its flag are refused (one way to write "none").
        var writer = WireWriter()
        ServerWire.encode(events[4], into: &writer)
        var bytes = writer.bytes
        bytes[bytes.count - 9] = 0x40  // the last byte of the screen x of a pointer without a location
        var reader = WireReader(bytes)
        #expect(throws: ServerWire.Violation.self) { _ = try ServerWire.decodeEvent(from: &reader) }
    }

    @Test("bad values are refused with what would be valid")
    func refusals() {
        func message(_ body: () throws -> Void) -> String {
            do {
                try body()
                return "accepted"
            } catch let error as ScreenSettingError { return error.description } catch { return "\(error)" }
        }
        let singular = message { _ = try CalibrationMatrix(parsing: "1 2 0 2 4 0") }
        #expect(singular.contains("singular") && singular.contains("1 0 0 0 1 0"), "\(singular)")
        let five = message { _ = try CalibrationMatrix(parsing: "1 0 0 0 1") }
        #expect(five.contains("6 numbers") && five.contains("not 5"), "\(five)")
        let word = message { _ = try CalibrationMatrix(parsing: "1 0 0 0 one 0") }
        #expect(word.contains("'one'"), "\(word)")
        let nan = message { _ = try CalibrationMatrix(parsing: "1 0 nan 0 1 0") }
        #expect(nan.contains("finite"), "\(nan)")
        let rotation = message { _ = try ScreenDescription(parsing: "1080x1920@45") }
        #expect(rotation.contains("'45'") && rotation.contains("0, 90, 180 and 270"), "\(rotation)")
        let empty = message { _ = try ScreenDescription(parsing: "0x1920") }
        #expect(empty.contains("'0x1920'") && empty.contains("1 or more"), "\(empty)")
        #expect(message { _ = try ScreenDescription(parsing: "1080") }.contains("WIDTHxHEIGHT"))
        #expect(message { _ = try ScreenDescription(name: "s", width: 1080, height: -2) }.contains("1 or more"))
        #expect(message { _ = try ScreenRotation(degrees: 360) }.contains("0, 90, 180 and 270"))
        #expect(message { _ = try CalibrationMatrix(parsing: "1 0 0 0 1 0") } == "accepted")
        #expect(message { _ = try ScreenDescription(parsing: " 800x480@270 ") } == "accepted")
    }

    @Test("a matrix composed after its inverse is the identity; the text reads back equal")
    func matrixAlgebra() throws {
        let matrix = try CalibrationMatrix(parsing: "1.05 0.02 -0.03 -0.01 0.97 0.02")
        let product = try #require(matrix.inverse).after(matrix)
        for (got, want) in zip(product.values, CalibrationMatrix.identity.values) { #expect(abs(got - want) < 1e-12) }
        #expect(try CalibrationMatrix(parsing: matrix.text) == matrix)
        #expect(CalibrationMatrix.identity.text == "1 0 0 0 1 0")
        #expect(ScreenRotation.clockwise90.matrix.after(ScreenRotation.clockwise270.matrix) == .identity)
    }

    @Test("a device goes to the screen a rule names, else WL_OUTPUT's, else the only one; with several and no rule, none")
    func assignment() throws {
        let left = try ScreenDescription(name: "DSI-1", width: 800, height: 480)
        let right = try ScreenDescription(name: "HDMI-A-1", width: 1920, height: 1080, origin: ScreenPoint(x: 800, y: 0))
        let touch = DeviceIdentity(name: "ILITEK ILITEK-TP", bus: Evdev.BUS_USB, vendor: 0x222a, product: 0x0001, roles: [.touchscreen])
        #expect(ScreenAssignment(screens: [left]).screen(for: touch).screen == left)
        #expect(ScreenAssignment(screens: [left, right]).screen(for: touch).screen == nil)
        var tagged = touch
        tagged.properties = [DeviceIdentity.outputProperty: "HDMI-A-1"]
        #expect(ScreenAssignment(screens: [left, right]).screen(for: tagged).screen == right)
        let rules = [
            ScreenAssignment.Rule(match: DeviceMatch(name: "ILITEK*"), screen: "DSI-1"),
            ScreenAssignment.Rule(match: DeviceMatch(vendor: 0x222a, product: 0x0001), screen: "HDMI-A-1"),
        ]
        let (screen, reason) = ScreenAssignment(screens: [left, right], rules: rules).screen(for: tagged)
        #expect(screen == right && reason == .rule(rules[1].match))
        #expect(ScreenAssignment(screens: [left, right], rules: [rules[0]]).screen(for: tagged).screen == left)
        #expect(!DeviceMatch(path: "pci-*").matches(touch), "ID_PATH never matches a device udev does not know")
        var withPath = touch
        withPath.properties = [DeviceIdentity.pathProperty: "pci-0000:00:14.0-usb-0:1:1.0"]
        #expect(DeviceMatch(path: "pci-0000:00:14.0-usb-*").matches(withPath))
        #expect(DeviceMatch(deviceClass: .touchscreen, physicalLocation: "").matches(touch))
        #expect(!DeviceMatch(bus: Evdev.BUS_I2C).matches(touch))
        let missing = ScreenAssignment(screens: [left], rules: [ScreenAssignment.Rule(match: DeviceMatch(), screen: "HDMI-A-2")])
        #expect(missing.screen(for: touch).reason == .unknownScreen("HDMI-A-2"))
    }
}
