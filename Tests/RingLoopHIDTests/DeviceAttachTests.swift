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
        "an attach reads udev once, new settings once more: the screen mapping and the pointer take the calibration and the resolution of the one read",
        arguments: HIDEventSystem.Shape.allCases)
    func oneUdevReadPerAttach(shape: HIDEventSystem.Shape) throws {
        let screen = deviceInfo(of: try Self.recording("touchscreen-multitouch.evemu"))
        let mouse = deviceInfo(of: try Self.recording("mouse-hires-wheel.evemu"))
        #expect(screen.deviceClass == .touchscreen && mouse.deviceClass == .pointer)
        let calibration = "0 -1 1 1 0 0"
        // What udev's database says of a node the first time it is asked, and then (the
        // database changed) nothing: a stage reading on its own would see the other answer.
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
            let readsAtAttach = reads.withLock { $0 }
            #expect(
                readsAtAttach.count == 2 && readsAtAttach.values.allSatisfy { $0 == 1 }, "one udev read per attach: \(readsAtAttach)")
            // New settings: one more read each (the database changed: no properties now),
            // and both stages work their devices out again from it.
            let portrait = try ScreenDescription(parsing: "1080x1920")
            system.setScreens(DeviceSettingsResolver(screens: [portrait]))
            #expect(system.screenMapping(for: ids[0])?.screen == portrait, "the panel maps to the new settings' screen")
            let remapped = system.screenMapping(for: ids[0])?.calibration
            #expect(system.pointerSettings(for: ids[1])?.dotsPerInch == PointerSettings.defaultDotsPerInch)
            system.stop()
            return (mapped, dotsPerInch, remapped, reads.withLock { $0 })
        }
        #expect(readCounts.count == 2 && readCounts.values.allSatisfy { $0 == 2 }, "one more read for the new settings: \(readCounts)")
        let expected = try CalibrationMatrix(parsing: calibration)
        #expect(mapped == expected, "the screen stage maps by udev's LIBINPUT_CALIBRATION_MATRIX from the attach's read")
        #expect(remapped == .identity, "the new settings' read has no calibration")
        #expect(dotsPerInch == 1600, "the pointer stage takes udev's MOUSE_DPI from the attach's read")
    }

    /// A node can appear before udev has run its rules on it (udev's database has no entry
    /// yet: only the kernel's values, and udev says the device is not initialized). Such a
    /// read is not kept: the stages read again when they configure the device, as each did
    /// before the attach kept one read, and find udev's calibration by then (the booted
    /// kernel's check writes the entry right after making the device).
    @Test(
        "a read made before udev initialized the device is not kept: the stages read again and take udev's calibration",
        arguments: HIDEventSystem.Shape.allCases)
    func readBeforeUdevInitializedIsNotKept(shape: HIDEventSystem.Shape) throws {
        let screen = deviceInfo(of: try Self.recording("touchscreen-multitouch.evemu"))
        let calibration = "0 -1 1 1 0 0"
        // The first read finds the device not initialized; later ones find udev's entry.
        let reads = Mutex<[String: Int]>([:])
        let policy = DeviceAttachPolicy(reading: { path in
            let count = reads.withLock { reads -> Int in
                reads[path, default: 0] += 1
                return reads[path]!
            }
            return count == 1 ? ([:], false, nil) : ([DeviceIdentity.calibrationProperty: calibration], true, nil)
        })
        let (mapped, readCounts) = try onFreshThread { () throws -> (CalibrationMatrix?, [String: Int]) in
            let loop = RingRunLoop.current
            let configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", shape: shape, nodeNames: [])
            let system = HIDEventSystem(configuration: configuration, loop: loop, attachPolicy: policy)
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1920x1080")]))
            try system.start()
            defer { system.stop() }
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let id = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: screen)
            #expect(runUntil(loop) { system.screenMapping(for: id) != nil })
            return (system.screenMapping(for: id)?.calibration, reads.withLock { $0 })
        }
        #expect(mapped == (try CalibrationMatrix(parsing: calibration)), "the panel maps by udev's entry: \(readCounts)")
        #expect(readCounts["stream:1"] == 2, "the attach's read, then one the stages keep: \(readCounts)")
    }

    /// A handler that restarts the system on a device's removal: the old device's removal
    /// finishes its dispatch after the new run attached a device with the same id, and
    /// must not drop the new device's attachment (before the fix it did: the stages read
    /// udev again, `["stream:1": 3]`, and the panel mapped with the identity calibration).
    @Test(
        "a restart from a deviceRemoved handler: the new device 1 keeps its attach's udev read",
        arguments: HIDEventSystem.Shape.allCases)
    func restartInRemovalHandler(shape: HIDEventSystem.Shape) throws {
        let screen = deviceInfo(of: try Self.recording("touchscreen-multitouch.evemu"))
        let calibration = "0 -1 1 1 0 0"
        // udev's database gives the calibration until the new device attached, then nothing.
        let changed = Mutex(false)
        let reads = Mutex<[String: Int]>([:])
        let policy = DeviceAttachPolicy(udev: { path in
            reads.withLock { $0[path, default: 0] += 1 }
            return changed.withLock { $0 } ? [:] : [DeviceIdentity.calibrationProperty: calibration]
        })
        let (mapped, secondID, readCounts) = try onFreshThread {
            () throws -> (CalibrationMatrix?, HIDDeviceID?, [String: Int]) in
            let loop = RingRunLoop.current
            let configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", shape: shape, nodeNames: [])
            let system = HIDEventSystem(configuration: configuration, loop: loop, attachPolicy: policy)
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1920x1080")]))
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let first = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: screen)
            #expect(runUntil(loop) { system.screenMapping(for: first) != nil })
            var second: HIDDeviceID?
            var writeEnd: Int32 = -1
            system.addHandler(kinds: [.deviceRemoved]) { event in
                guard event.device == first, second == nil else { return .pass }
                system.stop()
                try? system.start()
                var more: [Int32] = [0, 0]
                guard pipe(&more) == 0 else { return .pass }
                writeEnd = more[1]
                second = try? system.attachStream(fileDescriptor: FileDescriptor(rawValue: more[0]), description: screen)
                changed.withLock { $0 = true }
                return .pass
            }
            close(ends[1])
            #expect(runUntil(loop) { second != nil })
            // The new device's deviceAdded goes through the stages.
            #expect(runUntil(loop) { second.map { system.screenMapping(for: $0) != nil } ?? false })
            let mapped = second.flatMap { system.screenMapping(for: $0)?.calibration }
            system.stop()
            if writeEnd >= 0 { close(writeEnd) }
            return (mapped, second, reads.withLock { $0 })
        }
        #expect(secondID == HIDDeviceID(rawValue: 1), "the new run numbers from 1 again")
        #expect(mapped == (try CalibrationMatrix(parsing: calibration)), "the new device maps by its attach's read: \(readCounts)")
        #expect(readCounts["stream:1"] == 2, "one read per attach (two attaches): \(readCounts)")
    }

    /// ``DeviceAttachPolicy/update(_:)`` resolves every kept attachment again: a file's
    /// `dpi` read after the attach wins over the attach's udev `MOUSE_DPI`.
    @Test(
        "new settings re-resolve a kept attachment: a file's dpi after the attach wins over udev's MOUSE_DPI",
        arguments: HIDEventSystem.Shape.allCases)
    func newSettingsReResolve(shape: HIDEventSystem.Shape) throws {
        let mouse = deviceInfo(of: try Self.recording("mouse-hires-wheel.evemu"))
        let reads = Mutex(0)
        let policy = DeviceAttachPolicy(udev: { _ in
            reads.withLock { $0 += 1 }
            return [PointerSettings.mouseDPIProperty: "1600@125"]
        })
        let (before, after, readCount) = try onFreshThread { () throws -> (Int?, Int?, Int) in
            let loop = RingRunLoop.current
            var configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", shape: shape, nodeNames: [])
            configuration.pointer = PointerSettings()
            let system = HIDEventSystem(configuration: configuration, loop: loop, attachPolicy: policy)
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let id = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: mouse)
            #expect(runUntil(loop) { system.pointerSettings(for: id)?.dotsPerInch == 1600 })
            let before = system.pointerSettings(for: id)?.dotsPerInch
            let file = DeviceSettingsFile(text: "version = 1\n[match class=pointer]\ndpi = 800\n", path: "d.conf")
            #expect(file.problems.isEmpty, "\(file.problems)")
            system.setScreens(DeviceSettingsResolver(files: [file]))
            let after = system.pointerSettings(for: id)?.dotsPerInch
            system.stop()
            return (before, after, reads.withLock { $0 })
        }
        #expect(before == 1600, "udev's MOUSE_DPI from the attach's read")
        #expect(after == 800, "the file's dpi, resolved again for the kept attachment")
        #expect(readCount == 2, "the attach's read and one for the new settings")
    }

    /// A stream the settings ignore is attached anyway (a caller's stream is never left
    /// alone); its attach's read is kept like any other, so its stages read udev no more.
    @Test("an ignored stream is attached with its attach's read: udev is read once for it", arguments: HIDEventSystem.Shape.allCases)
    func ignoredStreamOneRead(shape: HIDEventSystem.Shape) throws {
        let mouse = deviceInfo(of: try Self.recording("mouse-hires-wheel.evemu"))
        let reads = Mutex<[String: Int]>([:])
        let policy = DeviceAttachPolicy(udev: { path in
            reads.withLock { $0[path, default: 0] += 1 }
            return ["LIBINPUT_IGNORE_DEVICE": "1", PointerSettings.mouseDPIProperty: "1600@125"]
        })
        let (dotsPerInch, readCounts) = try onFreshThread { () throws -> (Int?, [String: Int]) in
            let loop = RingRunLoop.current
            var configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", shape: shape, nodeNames: [])
            configuration.pointer = PointerSettings()
            let system = HIDEventSystem(configuration: configuration, loop: loop, attachPolicy: policy)
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let id = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: mouse)
            #expect(runUntil(loop) { system.pointerSettings(for: id)?.dotsPerInch == 1600 })
            let dotsPerInch = system.pointerSettings(for: id)?.dotsPerInch
            system.stop()
            return (dotsPerInch, reads.withLock { $0 })
        }
        #expect(dotsPerInch == 1600)
        #expect(readCounts == ["stream:1": 1], "one udev read for the ignored stream: \(readCounts)")
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
