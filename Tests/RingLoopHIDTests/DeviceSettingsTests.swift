import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopHID

@Suite("The per-device settings file")
struct DeviceSettingsTests {
    static let good = """
        # a kiosk's settings
        version = 1

        [screen HDMI-A-1]
        size = 1080x1920
        rotation = 90
        physical-size = 68x121

        [match name="ILITEK ILITEK-TP" vendor=0x222a bus=usb]   # the panel
        screen = HDMI-A-1
        calibration = 1.02 0 -0.01 0 0.98 0.01

        [match class=pointer]
        accel-profile = flat
        accel-speed = 0.3
        natural-scroll = yes

        [match vendor=222a product=0001]
        rotation = 270
        """

    static let panel = DeviceIdentity(
        name: "ILITEK ILITEK-TP", bus: Evdev.BUS_USB, vendor: 0x222a, product: 0x0001, roles: [.touchscreen])

    @Test("a good file reads whole: its screen, its sections in order, each value with its line")
    func goodFile() throws {
        let file = DeviceSettingsFile(text: Self.good, path: "/etc/ringloop/devices.conf")
        #expect(file.problems.isEmpty, "\(file.problems)")
        #expect(file.screens.count == 1)
        let screen = try #require(file.screens.first?.screen)
        #expect(screen.name == "HDMI-A-1" && screen.width == 1080 && screen.height == 1920 && screen.rotation == .clockwise90)
        #expect(screen.physicalSize?.width == 68 && screen.physicalSize?.height == 121)
        #expect(file.sections.map(\.line) == [9, 13, 18])
        let settings = DeviceSettingsResolver(files: [file]).settings(for: Self.panel)
        #expect(settings.calibration == (try CalibrationMatrix(parsing: "1.02 0 -0.01 0 0.98 0.01")))
        #expect(settings.source(of: .calibration) == .file(path: "/etc/ringloop/devices.conf", line: 11))
        #expect(settings.shown.contains("calibration = 1.02 0 -0.01 0 0.98 0.01 (from /etc/ringloop/devices.conf:11)"))
        #expect(settings.rotation == .clockwise270 && settings.source(of: .rotation) == .file(path: "/etc/ringloop/devices.conf", line: 19))
        #expect(settings.accelerationProfile == nil, "the pointer section does not match a touchscreen")
        let mouse = DeviceIdentity(name: "mouse", roles: [.pointer])
        let pointer = DeviceSettingsResolver(files: [file]).settings(for: mouse)
        #expect(pointer.accelerationProfile == .flat && pointer.accelerationSpeed == 0.3 && pointer.naturalScroll == true)
    }

    @Test("each bad line is named by file, line and key with what is valid; the rest of the file is kept")
    func problems() {
        let text = """
            [match name="a*" colour=red]
            screen = one

            [match name="b*"]
            calibration = 1 0 0 0 1
            rotation = 45
            accel-speed = 3
            wobble = 2
            tap = maybe
            deadzone = 0.1
            this line has no equals

            [screen tiny]
            size = 0x100
            rotation = 90

            [output DP-1]
            size = 10x10
            [screen DP-2]
            size = 640x480
            """
        let file = DeviceSettingsFile(text: text, path: "devices.conf")
        let shown = file.problems.map(\.description)
        let expected = [
            "devices.conf:1: version: the file does not say its version first",
            "devices.conf:1: colour: not a criterion; valid: name, vendor, product, bus, class, phys, id-path; the section is left out",
            "devices.conf:5: calibration: a calibration matrix has 6 numbers",
            "devices.conf:6: rotation: '45' is not a rotation; valid rotations are 0, 90, 180 and 270",
            "devices.conf:7: accel-speed: '3' is not a speed; valid speeds are −1…1",
            "devices.conf:8: wobble: not a setting; valid: ignore, class, screen, calibration, rotation, accel-profile",
            "devices.conf:9: tap: 'maybe' is not yes or no",
            "devices.conf:11: 'this line has no equals' is not 'key = value'",
            "devices.conf:13: size: screen 'tiny' has no size",
            "devices.conf:14: size: '0x100' is not a screen size",
            "devices.conf:17: '[output DP-1]' is not a section; sections are [screen NAME] and [match CRITERIA]",
        ]
        #expect(shown.count == expected.count, "\(shown.joined(separator: "\n"))")
        for (got, want) in zip(shown, expected) { #expect(got.hasPrefix(want), "\(got)\n  expected: \(want)…") }
        // The valid rest: one section (b*) with its dead zone, and the screen DP-2.
        #expect(file.sections.count == 1 && file.sections[0].entries.map(\.key) == [.deadZone])
        #expect(file.screens.map(\.screen.name) == ["DP-2"])
    }

    @Test("a file of a newer version is not used, and says which versions are")
    func newerVersion() {
        let file = DeviceSettingsFile(text: "version = 2\n[match]\nignore = yes\n", path: "new.conf")
        #expect(file.sections.isEmpty)
        #expect(
            file.problems.map(\.description) == [
                "new.conf:1: version: version '2' is not one this reader knows (valid: 1); the file is not used"
            ])
    }

    @Test("udev's properties give way to the file, and the options win over both")
    func precedence() throws {
        var panel = Self.panel
        panel.properties = [DeviceIdentity.calibrationProperty: "0 1 0 1 0 0", DeviceIdentity.ignoreProperty: "1"]
        let fromUdev = DeviceSettingsResolver().settings(for: panel)
        #expect(fromUdev.calibration == (try CalibrationMatrix(parsing: "0 1 0 1 0 0")))
        #expect(fromUdev.source(of: .calibration).description == "udev's LIBINPUT_CALIBRATION_MATRIX")
        #expect(fromUdev.ignore)
        let file = DeviceSettingsFile(text: Self.good + "\n[match]\nignore = no\n", path: "d.conf")
        let fromFile = DeviceSettingsResolver(files: [file]).settings(for: panel)
        #expect(fromFile.source(of: .calibration) == .file(path: "d.conf", line: 11) && !fromFile.ignore)
        var overrides = DeviceSettings()
        overrides.set(.calibration, to: .calibration(.identity), from: .option("--calibration"))
        let resolver = DeviceSettingsResolver(files: [file], overrides: overrides)
        let fromOption = resolver.settings(for: panel)
        #expect(fromOption.calibration == .identity && fromOption.source(of: .calibration) == .option("--calibration"))
        // udev's class tag: a device udev calls a touchscreen (a rule's override) is one;
        // a tag the device's roles already have changes nothing.
        var tagged = DeviceIdentity(name: "odd", roles: [.pointer])
        tagged.properties = ["ID_INPUT_TOUCHSCREEN": "1", "ID_INPUT_MOUSE": "1"]
        let retagged = DeviceSettingsResolver().settings(for: tagged)
        #expect(retagged.deviceClass == .touchscreen && retagged.source(of: .deviceClass).description == "udev's ID_INPUT_TOUCHSCREEN")
        tagged.roles = [.touchscreen]
        #expect(DeviceSettingsResolver().settings(for: tagged).deviceClass == nil)
        // A malformed property is not used, and is said.
        var broken = Self.panel
        broken.properties = [DeviceIdentity.calibrationProperty: "1 0 0"]
        #expect(DeviceSettingsResolver().settings(for: broken).calibration == nil)
        #expect(DeviceSettingsResolver().udevProblems(for: broken).first?.contains("6 numbers") == true)
    }

    @Test("the resolver maps a device to its screen with the file's calibration and rotation, and says why")
    func mapping() throws {
        let file = DeviceSettingsFile(text: Self.good, path: "d.conf")
        let info = HIDDeviceInfo.describing(
            name: "ILITEK ILITEK-TP", codes: [Evdev.EV_KEY: [Evdev.BTN_TOUCH], Evdev.EV_ABS: [Evdev.ABS_X, Evdev.ABS_Y]],
            axes: [
                Evdev.ABS_X: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 0),
                Evdev.ABS_Y: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 0),
            ],
            properties: [Evdev.INPUT_PROP_DIRECT])
        #expect(info.deviceClass == .touchscreen)
        let (mapping, reason) = DeviceSettingsResolver(files: [file]).mapping(for: info, identity: Self.panel)
        let found = try #require(mapping, "\(reason)")
        #expect(found.screen.name == "HDMI-A-1" && found.screen.rotation == .clockwise270)
        #expect(reason == "screen from d.conf:10, rotation from d.conf:19, calibration from d.conf:11")
        let ignored = DeviceSettingsFile(text: "version = 1\n[match name=ILITEK*]\nignore = yes\n", path: "i.conf")
        #expect(
            DeviceSettingsResolver(files: [file, ignored]).mapping(for: info, identity: Self.panel).reason == "ignored (from i.conf:3)")
    }

    @Test("a reload keeps a refused key's previous value, and an unreadable file keeps the previous reading")
    func reload() throws {
        let path = "/tmp/ringloop-settings-\(getpid()).conf"
        defer { unlink(path) }
        try writeTextFile(path, "version = 1\n[match name=pen*]\ncalibration = 1 0 0.1 0 1 0\ntap = yes\n")
        var store = DeviceSettingsStore(path: path)
        #expect(store.reload().isEmpty)
        let pen = DeviceIdentity(name: "pen 1", roles: [.tablet])
        #expect(DeviceSettingsResolver(files: [try #require(store.current)]).settings(for: pen).calibration?.c == 0.1)
        // The new reading has a matrix of five numbers: the old matrix stays, the new tap applies.
        try writeTextFile(path, "version = 1\n[match name=pen*]\ncalibration = 1 0 0.2 0 1\ntap = no\n")
        let problems = store.reload()
        #expect(problems.map(\.description).first?.hasPrefix("\(path):3: calibration: a calibration matrix has 6 numbers") == true)
        let settings = DeviceSettingsResolver(files: [try #require(store.current)]).settings(for: pen)
        #expect(settings.calibration?.c == 0.1 && settings.source(of: .calibration) == .file(path: path, line: 3))
        #expect(settings.tap == false)
        unlink(path)
        let gone = store.reload()
        #expect(
            gone.first?.description.contains("cannot read") == true && gone.first?.description.contains("previous reading stays") == true)
        #expect(DeviceSettingsResolver(files: [try #require(store.current)]).settings(for: pen).calibration?.c == 0.1)
    }
}

extension DeviceSettingsTests {
    @Test(
        "20,000 mutations of a good file (bytes changed, lines cut, joined, repeated) read without a crash; each problem names a line of the file"
    )
    func mutations() {
        var random = SeededGenerator.forTest("device settings mutations")
        let original = Array(Self.good.utf8)
        let pieces: [[UInt8]] = [
            "[", "]", "=", "\"", "#", ";", " ", "\n", "x", "@", "-", "0x", "ffff", "1e308", "nan", "[match", "[screen",
        ]
        .map { Array($0.utf8) }
        for round in 0..<20_000 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0 where at < bytes.count: bytes[at] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.insert(contentsOf: pieces.randomElement(using: &random)!, at: at)
                case 2 where at < bytes.count: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...20, using: &random)))
                default: bytes.insert(contentsOf: bytes[at...].prefix(30), at: at)
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let file = DeviceSettingsFile(text: text, path: "m.conf")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
            for problem in file.problems where !(1...lines).contains(problem.line) {
                Issue.record("round \(round): \(problem) names line \(problem.line) of \(lines)")
            }
            _ = DeviceSettingsResolver(files: [file]).settings(for: Self.panel)
        }
    }
}

@Suite("udev's properties through libudev")
struct UdevPropertiesTests {
    @Test(
        "a character device's properties come from libudev (the kernel's uevent at least); a file that is not one has none",
        .enabled(if: UdevProperties.isAvailable, "libudev.so.1"))
    func characterDevice() {
        // /dev/null is 1:3; its uevent says MAJOR=1, MINOR=3, DEVNAME=null, which libudev gives
        // with the node's path, its subsystem and its sysfs path (no udev database needed).
        let properties = UdevProperties.of(node: "/dev/null")
        #expect(properties["DEVNAME"] == "/dev/null" && properties["MAJOR"] == "1" && properties["MINOR"] == "3", "\(properties)")
        #expect(properties["SUBSYSTEM"] == "mem" && properties["DEVPATH"] == "/devices/virtual/mem/null", "\(properties)")
        #expect(UdevProperties.of(node: "/etc/hostname").isEmpty)
        #expect(UdevProperties.of(node: "/nonexistent/event0").isEmpty)
    }
}
