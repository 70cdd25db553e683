import Testing

@testable import RingLoopDevices

@Suite("libinput record YAML")
struct LibinputRecordingTests {
    static let twoDevices = """
        # libinput record
        version: 1
        ndevices: 2
        libinput:
          version: "1.22.1"
        system:
          kernel: "6.1.0"
        devices:
        - node: /dev/input/event4
          evdev:
            # Name: Logitech MX Master 3
            name: "Logitech MX Master 3"
            id: [3, 1133, 16514, 273]
            codes:
              0: [0, 1, 2, 4] # EV_SYN
              1: [272, 273, 274] # EV_KEY
              2: [0, 1, 8, 11] # EV_REL
              4: [4] # EV_MSC
            properties: []
          events:
          - evdev:
            - [  0,      0,   2,   0,    -3] # EV_REL / REL_X -3
            - [  0,      0,   0,   0,     0] # SYN_REPORT
          - evdev:
            - [  0,   8012,   2,  11,  -120]
            - [  0,   8012,   0,   0,     0]
          - libinput:
            - {type: POINTER_MOTION}
        - node: /dev/input/event5
          evdev:
            name: "SynPS/2 Synaptics TouchPad"
            id: [17, 2, 7, 433]
            codes:
              0: [0, 1, 3]
              1: [272, 325, 330]
              3: [0, 1, 47, 53, 54, 57]
            absinfo:
              0: [1266, 5676, 0, 0, 47]
              1: [1096, 4758, 0, 0, 68]
              47: [0, 4, 0, 0, 0]
              53: [1266, 5676, 0, 0, 47]
              54: [1096, 4758, 0, 0, 68]
              57: [0, 65535, 0, 0, 0]
            properties: [0, 2]
          events:
          - evdev:
            - [  0,   4000,   3,  57,    12]
            - [  0,   4000,   3,  53,  3000]
            - [  0,   4000,   0,   0,     0]
        """

    @Test("Both devices are read, with descriptions and events on one clock")
    func parsesTwoDevices() throws {
        let recordings = try LibinputRecording.parse(Self.twoDevices)
        #expect(recordings.count == 2)
        let mouse = try #require(recordings[0].description)
        #expect(mouse.name == "Logitech MX Master 3" && mouse.vendor == 0x046d && mouse.product == 0x4082)
        #expect(mouse.codes[2] == [0, 1, 8, 11])
        #expect(recordings[0].events.count == 4)
        #expect(recordings[0].events[2] == RecordedEvent(seconds: 0, microseconds: 8012, type: 2, code: 11, value: -120))
        let touchpad = try #require(recordings[1].description)
        #expect(touchpad.properties == [0, 2])
        #expect(touchpad.absoluteAxes[0] == AbsoluteAxis(minimum: 1266, maximum: 5676, fuzz: 0, flat: 0, resolution: 47))
        #expect(touchpad.slotCount == 5)
        #expect(recordings[1].events.first?.timeMicroseconds == 4000)
    }

    @Test(
        "Malformed YAML names its line",
        arguments: [
            ("version: 2\ndevices: []\n", 1, "unsupported"),
            ("version: 1\ndevices:\n- node: x\n  evdev:\n    name: X\n    id: [1, 2, 3]\n", 6, "id: [bus"),
            ("version: 1\ndevices:\n- node: x\n  evdev:\n    name: X\n    id: [1, 2, 3, 4]\n    absinfo:\n      0: [1, 2]\n", 8, "[minimum"),
            ("version: 1\ndevices:\n- node: x\n  evdev:\n    name: X\n    id: [1, 2, 3, 4]\n  events:\n  - evdev:\n    - [0, 0, 1]\n", 9, "[sec, usec"),
            ("version: 1\ndevices: [\n", 3, "not valid YAML"),
        ] as [(String, Int, String)])
    func malformed(text: String, line: Int, message: String) {
        do {
            _ = try LibinputRecording.parse(text, file: "bad.yml")
            Issue.record("accepted: \(text)")
        } catch {
            guard case .malformed(_, let errorLine, let errorMessage) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(errorLine == line, "\(error)")
            #expect(errorMessage.contains(message), "\(error)")
        }
    }

    @Test("Recording.loadAll tells YAML from evemu by its first line")
    func detection() {
        #expect(Recording.isLibinputYAML(Array("# comment\n\nversion: 1\n".utf8)))
        #expect(!Recording.isLibinputYAML(Array("# EVEMU 1.3\nN: x\n".utf8)))
    }
}
