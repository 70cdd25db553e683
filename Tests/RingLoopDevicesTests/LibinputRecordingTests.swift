import Foundation
import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
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
        #expect(recordings[0].events[2] == InputEvent(seconds: 0, microseconds: 8012, type: 2, code: 11, value: -120))
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
            (
                "version: 1\ndevices:\n- node: x\n  evdev:\n    name: X\n    id: [1, 2, 3, 4]\n    absinfo:\n      0: [1, 2]\n", 8,
                "[minimum"
            ),
            (
                "version: 1\ndevices:\n- node: x\n  evdev:\n    name: X\n    id: [1, 2, 3, 4]\n  events:\n  - evdev:\n    - [0, 0, 1]\n", 9,
                "[sec, usec"
            ),
            ("version: 1\ndevices: [\n", 2, "not valid YAML: an unclosed '['"),
            ("version: 1\ndevices:\n- node: x\n  evdev: &anchor\n", 4, "anchors, aliases, tags and block scalars"),
            ("version: 1\n\tdevices: []\n", 2, "a tab in indentation"),
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

@Suite("libinput record as libinput writes it", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct LibinputToolTests {
    static let tool = "/usr/bin/libinput"

    /// Two real recordings hosted as FUSE nodes, recorded by the real `libinput record`
    /// while they replay: its YAML reads back as the two devices, with the events each
    /// node delivered (read by a second reader of our own), on one clock.
    @Test("A libinput record of two devices reads back as those devices and their events")
    func recordedByLibinput() throws {
        try #require(access(Self.tool, X_OK) == 0, "libinput-tools is not installed (tools/setup installs it)")
        let touchpad = try Recording.load(
            description: RealRecordings.folder + "/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.hp8470p.desc",
            events: RealRecordings.folder + "/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.hp8470p.two-finger-scroll-vertical.events")
        let keyboard = try Recording.load(
            contentsOf: RealRecordings.folder
                + "/evemu-devices/keyboards/Lenovo ThinkPad Compact USB Keyboard with TrackPoint.keyboard.events")
        let output = "/tmp/ringloop-libinput-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).yml"
        defer { unlink(output) }
        try withDeviceFolder { folder in
            let nodes = [
                try folder.addDevice(touchpad.description!, bufferSize: 65536, appliesFuzz: false),
                try folder.addDevice(keyboard.description!, bufferSize: 65536, appliesFuzz: false),
            ]
            let ours = nodes.map { open($0.path, O_RDONLY | O_NONBLOCK) }
            defer { ours.forEach { close($0) } }
            // Our readers read once (nothing yet), so the nodes count them as readers.
            for fd in ours { #expect(readOnce(fd) == EAGAIN) }
            // Spawned with default signal actions: libinput record's signalfd must see SIGINT.
            let process = try Spawned(Self.tool, ["record", "--show-keycodes", "-o", output] + nodes.map(\.path))
            // Ended with its output read whatever happens below (a libinput record left
            // running spins once the folder is gone).
            defer { process.finish(timeout: .zero) }
            // Replay once libinput record polls both nodes (each then has two readers) and
            // has taken its clock's origin, which it says ("Recording to"): a frame before
            // the origin would have a negative time. (Its epoll may be armed before.)
            try #require(
                waitUntil { nodes.allSatisfy { $0.readerCount >= 2 } },
                "libinput record never read the nodes: \(nodes.map(\.readerCount)) readers, \(nodes.map(\.clientCount)) opens")
            try #require(process.waitFor("Recording to", inError: true), "libinput record never started: \(process.error)")
            try Replay.play([(touchpad, nodes[0]), (keyboard, nodes[1])], timeline: .eachFromItsStart, speed: .scaled(4))
            // libinput record has read every event (its file has nothing left unread, ours
            // everything); it writes what it read before it handles the signal, which its
            // event loop sees next.
            #expect(waitUntil { nodes.allSatisfy { $0.unreadEventCounts.min() == 0 } }, "libinput record did not read everything")
            process.signal(SIGINT)  // libinput record finishes its file and exits
            if process.wait(timeout: .seconds(10)) == nil { Issue.record("libinput record did not stop on SIGINT") }
            process.finish(timeout: .zero)
            let delivered = ours.map { readEvents($0).map { [Int($0.type), Int($0.code), Int($0.value)] } }
            let recordings = try Recording.loadAll(contentsOf: output)
            try #require(recordings.count == 2)
            for (index, recording) in recordings.enumerated() {
                let recorded = try #require(recording.description)
                let hosted = nodes[index].deviceDescription
                #expect(recorded.name == hosted.name)
                #expect(
                    [recorded.busType, recorded.vendor, recorded.product, recorded.version]
                        == [hosted.busType, hosted.vendor, hosted.product, hosted.version])
                #expect(recorded.properties == hosted.properties)
                #expect(recorded.codes == hosted.codes, "\(recorded.name): codes")
                #expect(recorded.absoluteAxes == hosted.absoluteAxes, "\(recorded.name): axes")
                #expect((recorded.keyRepeat != nil) == (hosted.keyRepeat != nil))
                let events = recording.events.map { [Int($0.type), Int($0.code), Int($0.value)] }
                #expect(
                    events == delivered[index], "\(recorded.name): \(events.count) events recorded, \(delivered[index].count) delivered")
            }
            // One clock: the keyboard's first event came after the touchpad's (both started together,
            // the keyboard's recording starts later in its own time).
            let firstTimes = recordings.map { $0.events.first?.timeMicroseconds ?? -1 }
            #expect(firstTimes.allSatisfy { $0 >= 0 && $0 < 5_000_000 }, "\(firstTimes)")
        }
    }

    @Test("Pasted pieces: a device without the file header, a devices list, an events fragment")
    func pastedPieces() throws {
        let device = """
            - node: /dev/input/event7
              evdev:
                name: "Lid Switch"
                id: [25, 0, 5, 0]
                codes:
                  0: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] # EV_SYN
                  5: [0] # EV_SW
                properties: []
              hid: [0x05, 0x01]
              udev:
                properties:
                - ID_INPUT=1
                - ID_INPUT_SWITCH=1
              quirks:
              events:
              - evdev:
                - [  1, 500000,   5,   0,       1] # EV_SW / SW_LID  1
                - [  1, 500000,   0,   0,       0] # ------------ SYN_REPORT (0) ---------- +0ms
            """
        let single = try LibinputRecording.parse(device)
        try #require(single.count == 1)
        let lid = try #require(single[0].description)
        #expect(lid.name == "Lid Switch" && lid.busType == 25)
        #expect(lid.codes[0] == [0, 5], "type 0 lists SYN_* codes, not types: the types are the code lists present")
        #expect(lid.codes[5] == [0])
        #expect(single[0].events.count == 2)
        #expect(Recording.isLibinputYAML(Array(device.utf8)))

        let fragment = """
              events:
              - evdev:
                - [  0,      0,   2,   8,       1] # EV_REL / REL_WHEEL                 1
                - [  0,      0,   0,   0,       0] # ------------ SYN_REPORT (0) ---------- +0ms
              - evdev:
                - [  0,  15126,   2,   8,      -1] # EV_REL / REL_WHEEL                -1
                - [  0,  15126,   0,   0,       0] # ------------ SYN_REPORT (0) ---------- +15ms
            """
        let events = try LibinputRecording.parse(fragment)
        #expect(events.count == 1 && events[0].description == nil)
        #expect(events[0].events.map(\.value) == [1, 0, -1, 0])
        #expect(Recording.isLibinputYAML(Array(fragment.utf8)))
        let items = try LibinputRecording.parse("- evdev:\n  - [0, 1, 1, 30, 1]\n  - [0, 1, 0, 0, 0]\n")
        #expect(items.count == 1 && items[0].events.count == 2)
    }

    @Test("EV_REP in the codes means kernel key repeat")
    func repeatType() throws {
        let text = """
            version: 1
            devices:
            - node: /dev/input/event3
              evdev:
                name: "AT Translated Set 2 keyboard"
                id: [17, 1, 1, 43841]
                codes:
                  0: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] # EV_SYN
                  1: [1, 2, 3, 30] # EV_KEY
                  4: [4] # EV_MSC
                  17: [0, 1, 2] # EV_LED
                  20: [0, 1] # EV_REP
                properties: []
            """
        let keyboard = try #require(try LibinputRecording.parse(text).first?.description)
        #expect(keyboard.keyRepeat?.delay == 250 && keyboard.keyRepeat?.period == 33)
        #expect(keyboard.codes[0] == [0, 1, 4, 0x11, 0x14])
        #expect(keyboard.codes[0x14] == nil)
    }
}
