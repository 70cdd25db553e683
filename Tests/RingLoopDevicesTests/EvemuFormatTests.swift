import Foundation
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices

@Suite("evemu recordings")
struct EvemuFormatTests {
    static let mouse = """
        # EVEMU 1.3
        # A test mouse
        N: Test Mouse
        I: 0003 046d c077 0111
        P: 00 00 00 00 00 00 00 00
        B: 00 17 00 00 00 00 00 00 00
        B: 01 00 00 00 00 00 00 00 00
        B: 01 00 00 00 00 00 00 00 00
        B: 01 00 00 00 00 00 00 00 00
        B: 01 00 00 00 00 00 00 00 00
        B: 01 00 00 07 00 00 00 00 00
        B: 02 03 09 00 00 00 00 00 00
        B: 04 10 00 00 00 00 00 00 00
        ################################
        #      Waiting for events      #
        ################################
        E: 0.000000 0002 0000 -0003\t# EV_REL / REL_X                -3
        E: 0.000000 0002 0001 0002\t# EV_REL / REL_Y                2
        E: 0.000000 0000 0000 0000\t# ------------ SYN_REPORT (0) ---------- +0ms
        E: 0.008012 0002 000b -120
        E: 0.008012 0000 0000 0000
        """

    @Test("A mouse recording parses: ids, capabilities, negative decimal values")
    func parsesMouse() throws {
        let recording = try EvemuFormat.parse(Self.mouse)
        let device = try #require(recording.description)
        #expect(device.name == "Test Mouse")
        #expect(device.vendor == 0x046d && device.product == 0xc077 && device.busType == 3 && device.version == 0x111)
        #expect(device.codes[0x01] == [0x110, 0x111, 0x112])  // BTN_LEFT, RIGHT, MIDDLE
        #expect(device.codes[0x02] == [0x00, 0x01, 0x08, 0x0b])  // REL_X, Y, WHEEL, WHEEL_HI_RES
        #expect(device.codes[0x00] == [0x00, 0x01, 0x02, 0x04])
        #expect(recording.notes == ["A test mouse"])
        #expect(recording.events.count == 5)
        #expect(recording.events[0] == InputEvent(seconds: 0, microseconds: 0, type: 2, code: 0, value: -3))
        #expect(recording.events[3] == InputEvent(seconds: 0, microseconds: 8012, type: 2, code: 0x0b, value: -120))
    }

    @Test("Writing and reading again gives the same recording and the same text")
    func roundTrip() throws {
        let recording = try EvemuFormat.parse(Self.mouse)
        let text = EvemuFormat.write(recording)
        let again = try EvemuFormat.parse(text)
        #expect(again == recording)
        #expect(EvemuFormat.write(again) == text)
    }

    @Test("A described device with axes, LEDs and switches round-trips")
    func roundTripRich() throws {
        let device = InputDeviceDescription(
            name: "Panel Touch Screen", busType: 0x18, vendor: 0x2386, product: 0x4328, version: 0x100,
            properties: [1],
            codes: [0x01: [0x14a], 0x03: [0x00, 0x01, 0x2f, 0x35, 0x36, 0x39], 0x05: [0x00], 0x11: [0x01]],
            absoluteAxes: [
                0x00: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 16),
                0x01: AbsoluteAxis(minimum: 0, maximum: 2303, resolution: 16),
                0x2f: AbsoluteAxis(minimum: 0, maximum: 9),
                0x35: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 16),
                0x36: AbsoluteAxis(minimum: 0, maximum: 2303, resolution: 16),
                0x39: AbsoluteAxis(minimum: 0, maximum: 65535),
            ],
            ledStates: [0x01: 1], switchStates: [0x00: 1])
        let recording = Recording(
            description: device,
            events: [
                InputEvent(seconds: 1_700_000_000, microseconds: 5, type: 3, code: 0x39, value: 12),
                InputEvent(seconds: 1_700_000_000, microseconds: 5, type: 0, code: 0, value: 0),
            ])
        let again = try EvemuFormat.parse(EvemuFormat.write(recording))
        #expect(again == recording)
        #expect(again.description?.slotCount == 10)
    }

    @Test("Format 1.0 A: lines without a resolution column are accepted")
    func format10Axes() throws {
        let text = """
            N: Old Touchpad
            I: 0011 0002 0007 01b1
            B: 00 0b 00 00 00 00 00 00 00
            B: 03 03 00 00 00 00 00 00 00
            A: 00 1472 5472 8 0
            A: 01 1408 4448 8 0
            """
        let device = try #require(try EvemuFormat.parse(text).description)
        #expect(device.absoluteAxes[0] == AbsoluteAxis(minimum: 1472, maximum: 5472, fuzz: 8, flat: 0, resolution: 0))
    }

    @Test("An events-only file has no description")
    func eventsOnly() throws {
        let recording = try EvemuFormat.parse("E: 12.000001 0001 001e 0001\nE: 12.000001 0000 0000 0000\n")
        #expect(recording.description == nil)
        #expect(recording.events.count == 2)
        #expect(recording.events[0].seconds == 12 && recording.events[0].microseconds == 1)
    }

    @Test(
        "Malformed lines are rejected with their line number and what was expected",
        arguments: [
            ("N: X\nI: 0003 zz 0001 0001\n", 2, "I: bus vendor product version"),
            ("N: X\nI: 0003 0001 0001\n", 2, "I: bus vendor product version"),
            ("N: X\nI: 0003 0001 0001 10000\n", 2, "at most ffff"),
            ("N: X\nI: 1 2 3 4\nB: 20 ff\n", 3, "above EV_MAX"),
            ("N: X\nI: 1 2 3 4\nB: 02 1ff\n", 3, "at most ff each"),
            ("N: X\nI: 1 2 3 4\nP: 00 1ff\n", 3, "at most ff"),
            ("N: X\nI: 1 2 3 4\nB: 03 01\nA: 00 0 x 0 0\n", 4, "A: code"),
            ("N: X\nI: 1 2 3 4\nB: 03 01\nA: 00 0 1 0\n", 4, "A: code"),
            ("N: X\nI: 1 2 3 4\nB: 03 01\nA: 00 0 1 0 0 99999999999\n", 4, "fit in 32 bits"),
            ("N: X\nI: 1 2 3 4\nA: 00 0 1 0 0\nB: 03 01\n", 4, "move it up"),
            ("N: X\nI: 1 2 3 4\nB: 01 01\nE: 0.000001 0001 0000 1\nB: 01 02\n", 5, "after the device's events"),
            ("N: X\nI: 1 2 3 4\nB: 03 00 00 00 00 00 80\nA: 2f 0 2147483647 0 0 0\n", 1, "at most 1024"),
            ("N: X\nI: 1 2 3 4\nB: 03 00 00 00 00 00 80\nA: 2f 0 -5 0 0 0\n", 1, "slots count from 0"),
            ("N: X\nI: 3 0001 0001\n", 2, "4 hexadecimal numbers"),
            ("N: X\nR: 52 05 01\n", 2, "hid-recorder"),
            ("E: 1.5 0001 001e 1\n", 1, "six digits of microseconds"),
            ("E: 1.000001 0001 001e 1\nE: 1.000002 0001 001e one\n", 2, "decimal 32-bit value"),
            ("E: 1.000001 0001 001e 1\nE: 1:000002 0001 001e 1\n", 2, "time like"),
            ("E: 1.000001 0001 001e 99999999999\n", 1, "decimal 32-bit value"),
            ("E: 1.000001 10001 001e 1\n", 1, "at most ffff"),
            ("E: 1.000001 0001 001e\n", 1, "E: seconds.microseconds"),
            ("E: 1.000001 0001 001e 1\nN: late\n", 2, "after events that have none"),
            ("E: 0.000001 ffffffffffffffffff 0 1\n", 1, "at most ffff"),
            ("E: 0.000001 0003 ffffffffffffffffff 1\n", 1, "at most ffff"),
            ("N: X\nI: 1 2 3 4\nB: 01 ffffffffffffffffffff\n", 3, "at most ff each"),
            ("X: what\n", 1, "unknown line"),
            ("hello\n", 1, "expected N:, I:"),
            ("N: X\nN: Y\n", 2, "second N:"),
            ("N: X\n", 1, "without an I: line"),
            ("I: 1 2 3 4\n", 1, "before the N: name line"),
        ] as [(String, Int, String)])
    func malformed(text: String, line: Int, message: String) {
        do {
            _ = try EvemuFormat.parse(text, file: "bad.evemu")
            Issue.record("accepted malformed input: \(text)")
        } catch {
            guard case .malformed(let file, let errorLine, let errorMessage) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(file == "bad.evemu")
            #expect(errorLine == line, "\(error)")
            #expect(errorMessage.contains(message), "\(error)")
            #expect(error.description.hasPrefix("bad.evemu:\(line): "))
        }
    }

    @Test("Overlong lines are refused, not buffered")
    func overlongLine() {
        let text = "N: " + String(repeating: "a", count: 10_000) + "\n"
        #expect(throws: RecordingError.malformed(file: "<text>", line: 1, message: "line is longer than 4096 characters")) {
            try EvemuFormat.parse(text)
        }
    }

    @Test("Hostile bytes never crash the parser")
    func hostileInput() {
        // Seeded (RINGLOOP_TEST_SEED=random draws a fresh seed and prints it first).
        var generator = SeededGenerator.forTest("hostileInput")
        let alphabet = Array("NIPBALSE: 0123456789abcdefx-.#\t\n\r\u{0}é".utf8)
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<200, using: &generator)
            var bytes = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
            if Bool.random(using: &generator) { bytes = Array("E: ".utf8) + bytes }
            _ = try? EvemuFormat.parse(bytes, file: "fuzz")
        }
    }

    @Test("A missing file is reported with the reason")
    func missingFile() {
        #expect(throws: RecordingError.unreadable(file: "/nonexistent/x.evemu", errno: .noSuchFileOrDirectory)) {
            try Recording.load(contentsOf: "/nonexistent/x.evemu")
        }
    }

    @Test("Several devices in one file are read in order, on one clock")
    func severalDevices() throws {
        let text = """
            # EVEMU 1.3
            N: Keyboard Part
            I: 0003 046d c52b 0111
            B: 01 00 00 00 40 00 00 00 00
            B: 14 03 00 00 00 00 00 00 00
            E: 10.000000 0001 001e 0001
            E: 10.000000 0000 0000 0000
            # EVEMU 1.3
            N: Mouse Part
            I: 0003 046d c52b 0111
            B: 01 00 00 00 00 00 00 00 00
            B: 01 00 00 00 00 00 00 00 00
            B: 01 00 00 00 00 00 00 00 00
            B: 01 00 00 00 00 00 00 00 00
            B: 01 00 00 01 00 00 00 00 00
            B: 02 03 00 00 00 00 00 00 00
            E: 10.500000 0002 0000 0004
            E: 10.500000 0000 0000 0000
            """
        let recordings = try EvemuFormat.parseAll(text)
        #expect(recordings.map { $0.description?.name } == ["Keyboard Part", "Mouse Part"])
        #expect(recordings[0].events.first?.timeMicroseconds == 10_000_000)
        #expect(recordings[1].events.first?.timeMicroseconds == 10_500_000)
        #expect(recordings[0].description?.keyRepeat?.delay == 250, "B: 14 gives kernel key repeat")
        #expect(recordings[0].description?.codes[0]?.contains(0x14) == true)
        #expect(recordings[1].description?.keyRepeat == nil)
        #expect(throws: RecordingError.self) { try EvemuFormat.parse(text) }  // one device expected
    }

    @Test("What evemu ignores is ignored with a warning naming its line")
    func warnings() throws {
        let text = """
            N: Warned
            I: 0003 0001 0002 0003
            P: 00 00 00 00 01 00 00 00
            B: 00 ff ff ff ff 00 00 00 00
            B: 02 03 00 ff 00 00 00 00 00
            B: 07 01
            B: 03 01 00 00 00 00 00 00 00
            A: 00 0 10 0 0 0
            A: 02 0 99 0 0 0
            L: 10 1
            """
        let recording = try EvemuFormat.parse(text, file: "w.evemu")
        let device = try #require(recording.description)
        #expect(device.codes[0] == [0, 2, 3], "B: 00 adds no types; types are those with codes")
        #expect(device.codes[2] == [0, 1], "bits past REL_MAX are ignored")
        #expect(device.properties.isEmpty)
        #expect(device.absoluteAxes.keys.sorted() == [0])
        let lines = recording.warnings.map(\.line)
        #expect(lines.contains(9), "\(recording.warnings)")  // the A: 02 line
        #expect(lines.contains(10))  // L: 10
        #expect(recording.warnings.contains { $0.message.contains("B: 02") })
        #expect(recording.warnings.contains { $0.message.contains("INPUT_PROP_MAX") })
        #expect(recording.warnings.allSatisfy { $0.description.hasPrefix("w.evemu:") })
    }

    @Test("CR LF line ends and trailing comments read like plain ones")
    func crlf() throws {
        let plain = try EvemuFormat.parse(Self.mouse)
        let crlf = try EvemuFormat.parse(Self.mouse.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(crlf == plain)
    }

    @Test("The writer writes masks as evemu-record does: B: 00 0b, B: 14 for key repeat")
    func writerMatchesEvemu() throws {
        let mouse = try #require(try EvemuFormat.parse(Self.mouse).description)
        let device = InputDeviceDescription(
            name: mouse.name, busType: mouse.busType, vendor: mouse.vendor, product: mouse.product, version: mouse.version,
            codes: mouse.codes, keyRepeat: InputDeviceDescription.kernelDefaultKeyRepeat)
        let text = EvemuFormat.write(Recording(description: device, events: []))
        #expect(text.contains("B: 00 0b 00 00 00 00 00 00 00\n"))
        #expect(text.contains("B: 14 03 00 00 00 00 00 00 00\n"))
        #expect(try EvemuFormat.parse(text).description == device)
    }
}
