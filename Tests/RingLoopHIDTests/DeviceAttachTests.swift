import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The per-device settings `ignore` and `class` decide attachment, as libinput's
/// `LIBINPUT_IGNORE_DEVICE` and udev's `ID_INPUT_*` tags do: an ignored device is never
/// attached, a device given a class is that class for every stage.
@Suite("Ignoring devices and overriding their class")
struct DeviceAttachTests {
    static func recording(_ name: String) throws -> Recording { try Recording.load(contentsOf: devicesFolder + "/" + name) }

    @Test("udev's LIBINPUT_IGNORE_DEVICE and ID_INPUT_* decide attachment; a gamepad tagged joystick stays a gamepad; a file wins")
    func policyFromUdevAndFile() throws {
        let screen = deviceInfo(of: try Self.recording("touchscreen-multitouch.evemu"))
        let pad = deviceInfo(of: try Self.recording("gamepad.evemu"))
        let keyboard = deviceInfo(of: try Self.recording("keyboard.evemu"))
        #expect(screen.deviceClass == .touchscreen && pad.deviceClass == .gamepad && keyboard.deviceClass == .keyboard)
        // What udev's input_id and a hwdb entry would say of each, by node.
        var (named, padNamed, keyboardNamed) = (screen, pad, keyboard)
        (named.path, padNamed.path, keyboardNamed.path) = ("/dev/input/event5", "/dev/input/event6", "/dev/input/event7")
        let udev: [String: [String: String]] = [
            named.path: ["ID_INPUT": "1", "ID_INPUT_TOUCHPAD": "1"],
            padNamed.path: ["ID_INPUT": "1", "ID_INPUT_JOYSTICK": "1"],
            keyboardNamed.path: ["ID_INPUT_KEYBOARD": "1", "LIBINPUT_IGNORE_DEVICE": "1"],
        ]
        let policy = DeviceAttachPolicy(udev: { udev[$0] ?? [:] })
        #expect(policy.decide(keyboardNamed) == .ignore("ignored (from udev's LIBINPUT_IGNORE_DEVICE)"))
        #expect(policy.decide(padNamed) == .attach(padNamed), "udev tags every gamepad ID_INPUT_JOYSTICK")
        guard case .attach(let touchpad) = policy.decide(named) else {
            Issue.record("the touchscreen was not attached")
            return
        }
        #expect(touchpad.deviceClass == .touchpad && touchpad.roles == [.touchpad])
        // A settings file wins over udev: the panel a touchscreen again, the keyboard attached.
        let file = DeviceSettingsFile(
            text: """
                version = 1
                [match name="ELAN Touchscreen"]
                class = touchscreen
                [match class=keyboard]
                ignore = no
                """, path: "devices.conf")
        #expect(file.problems.isEmpty, "\(file.problems)")
        policy.update(DeviceSettingsResolver(files: [file]))
        #expect(policy.decide(keyboardNamed) == .attach(keyboardNamed))
        guard case .attach(let panel) = policy.decide(named) else {
            Issue.record("the touchscreen was not attached")
            return
        }
        #expect(panel.deviceClass == .touchscreen && panel.roles == [.touchscreen])
    }

    @Test(
        "an attach reads udev once: the screen mapping and the pointer take the calibration and the resolution of that one read, also after new settings",
        arguments: HIDEventSystem.Shape.allCases)
    func oneUdevReadPerAttach(shape: HIDEventSystem.Shape) throws {
        let screen = deviceInfo(of: try Self.recording("touchscreen-multitouch.evemu"))
        let mouse = deviceInfo(of: try Self.recording("mouse-hires-wheel.evemu"))
        #expect(screen.deviceClass == .touchscreen && mouse.deviceClass == .pointer)
        let calibration = "0 -1 1 1 0 0"
        // What udev's database says of a node the first time it is asked, and then (the
        // database changed) nothing: a second read would undo what the first gave.
        let reads = Mutex<[String: Int]>([:])
        let policy = DeviceAttachPolicy(udev: { path in
            let count = reads.withLock { reads in
                reads[path, default: 0] += 1
                return reads[path]!
            }
            guard count == 1 else { return [:] }
            return [DeviceIdentity.calibrationProperty: calibration, PointerSettings.mouseDPIProperty: "1600@125"]
        })
        let (mapped, dotsPerInch, remapped, readCounts) = try onFreshThread {
            () throws -> (CalibrationMatrix?, Int?, CalibrationMatrix?, [String: Int]) in
            let loop = RingRunLoop.current
            var configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", shape: shape, nodeNames: [])
            configuration.pointer = PointerSettings()
            let system = HIDEventSystem(configuration: configuration, loop: loop, attachPolicy: policy)
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1920x1080")]))
            var added: [HIDDeviceID] = []
            system.addHandler(kinds: [.deviceAdded]) { event in
                added.append(event.device)
                return .pass
            }
            try system.start()
            var ids: [HIDDeviceID] = []
            // The write ends stay open: the devices stay attached until the stop.
            var writeEnds: [Int32] = []
            defer { for fd in writeEnds { close(fd) } }
            for info in [screen, mouse] {
                var ends: [Int32] = [0, 0]
                #expect(pipe(&ends) == 0)
                writeEnds.append(ends[1])
                ids.append(try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: info))
            }
            #expect(runUntil(loop) { Set(added) == Set(ids) })
            let mapped = system.screenMapping(for: ids[0])?.calibration
            let dotsPerInch = system.pointerSettings(for: ids[1])?.dotsPerInch
            // New settings: both stages work their devices out again from the same read.
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1080x1920")]))
            let remapped = system.screenMapping(for: ids[0])?.calibration
            #expect(system.pointerSettings(for: ids[1])?.dotsPerInch == 1600)
            system.stop()
            return (mapped, dotsPerInch, remapped, reads.withLock { $0 })
        }
        #expect(readCounts.count == 2 && readCounts.values.allSatisfy { $0 == 1 }, "one udev read per attach: \(readCounts)")
        let expected = try CalibrationMatrix(parsing: calibration)
        #expect(mapped == expected, "the screen stage maps by udev's LIBINPUT_CALIBRATION_MATRIX from the attach's read")
        #expect(remapped == expected)
        #expect(dotsPerInch == 1600, "the pointer stage takes udev's MOUSE_DPI from the attach's read")
    }

    static let settings = DeviceSettingsFile(
        text: """
            version = 1
            [match name="Logitech MX Master 3"]
            ignore = yes
            [match name="ELAN Touchscreen"]
            class = touchpad
            """, path: "devices.conf")

    @Test(
        "a replay of three real devices: the ignored mouse is never attached and the replay still starts; the panel is a touchpad to every stage",
        .enabled(if: FUSEHere.usable, FUSEHere.missing), arguments: HIDEventSystem.Shape.allCases)
    func ignoredAndReclassifiedInTheChain(shape: HIDEventSystem.Shape) throws {
        let keyboard = try Self.recording("keyboard.evemu")
        let mouse = try Self.recording("mouse-hires-wheel.evemu")
        let screen = try Self.recording("touchscreen-multitouch.evemu")
        let keyEvents = decodedEvents(of: keyboard).filter { $0.kind == .key }.count
        let frames = decodedEvents(of: screen).filter { $0.kind == .digitizer }.count
        #expect(keyEvents > 0 && frames > 0)
        _ = MountLeakCheck.armed
        let session = try ReplaySession(
            files: [[keyboard], [mouse], [screen]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-attach-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 8192, speed: .asFastAsPossible, settleTime: .milliseconds(20)))
        defer { session.close() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let finished = LoopBound(false, loop: loop)
            let system = HIDEventSystem(
                configuration: .init(
                    replaying: session, shape: shape, queueCapacity: 1 << 16, finished: { finished.value = true }), loop: loop)
            system.setScreens(DeviceSettingsResolver(files: [Self.settings], screens: [try ScreenDescription(parsing: "1920x1080")]))
            var added: [String] = []
            var kinds: [HIDEvent.Kind: Int] = [:]
            var touchpadFrames = 0
            var located = 0
            system.addHandler { event in
                if event.kind == .deviceAdded, let device = system.device(event.device) {
                    added.append("\(device.name) [\(device.deviceClass.rawValue)]")
                }
                kinds[event.kind, default: 0] += 1
                if case .digitizer(let frame) = event.payload, frame.contacts.contains(where: { $0.screenLocation != nil }) {
                    located += 1
                }
                return .pass
            }
            system.addHandler(kinds: [.digitizer], deviceClasses: [.touchpad]) { _ in
                touchpadFrames += 1
                return .pass
            }
            try system.start()
            #expect(runUntil(loop, timeout: .seconds(30)) { finished.value })
            #expect(runUntil(loop) { kinds[.key] == keyEvents && kinds[.digitizer] == frames })
            #expect(added.sorted() == ["AT Translated Set 2 keyboard [keyboard]", "ELAN Touchscreen [touchpad]"])
            #expect(system.devices.count == 2)
            #expect(
                kinds[.pointerMotion] == nil && kinds[.scroll] == nil && kinds[.button] == nil, "nothing of the ignored mouse: \(kinds)")
            #expect(touchpadFrames == frames, "a class filter sees the panel as a touchpad")
            #expect(located == 0, "a touchpad maps to no screen")
            system.stop()
        }
        #expect(session.wait().framesSent == session.frameCount)
    }

    @Test(
        "new settings apply to attached nodes: ignoring one detaches it, taking the setting back attaches it again with a new id",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func settingsChangeDetachesAndAttaches() throws {
        let keyboard = try Self.recording("keyboard.evemu")
        let screen = try Self.recording("touchscreen-multitouch.evemu")
        _ = MountLeakCheck.armed
        // The long start delay keeps both nodes there, unplayed, for the whole test.
        let session = try ReplaySession(
            files: [[keyboard], [screen]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-attach-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                speed: .asFastAsPossible, startDelay: .seconds(60)))
        defer { session.close() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(replaying: session), loop: loop)
            var log: [String] = []
            var names: [HIDDeviceID: String] = [:]
            system.addHandler(kinds: [.deviceAdded, .deviceRemoved]) { event in
                if event.kind == .deviceAdded, let device = system.device(event.device) { names[event.device] = device.name }
                log.append("\(event.kind == .deviceAdded ? "+" : "-")\(names[event.device] ?? "?")#\(event.device.rawValue)")
                return .pass
            }
            try system.start()
            #expect(runUntil(loop) { log.count == 2 })
            #expect(
                Set(log) == ["+AT Translated Set 2 keyboard#1", "+ELAN Touchscreen#2"]
                    || Set(log) == ["+AT Translated Set 2 keyboard#2", "+ELAN Touchscreen#1"])
            let keyboardID = try #require(names.first { $0.value == "AT Translated Set 2 keyboard" }?.key)
            let ignoring = DeviceSettingsFile(text: "version = 1\n[match class=keyboard]\nignore = yes\n", path: "kiosk.conf")
            system.setScreens(DeviceSettingsResolver(files: [ignoring]))
            #expect(runUntil(loop) { log.count == 3 })
            #expect(log.last == "-AT Translated Set 2 keyboard#\(keyboardID.rawValue)")
            #expect(system.devices.map(\.name) == ["ELAN Touchscreen"])
            #expect(system.attachPolicy.ignoredNodes.values.map { $0 } == ["ignored (from kiosk.conf:3)"])
            system.setScreens(nil)
            #expect(runUntil(loop) { log.count == 4 })
            #expect(log.last == "+AT Translated Set 2 keyboard#3")
            #expect(system.devices.count == 2 && system.attachPolicy.ignoredNodes.isEmpty)
            system.stop()
        }
    }
}
