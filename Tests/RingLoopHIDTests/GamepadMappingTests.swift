import Glibc
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Testing

/// A GUID written as hex digits.
func guid(_ hex: String) throws -> SDLJoystickGUID { try #require(SDLJoystickGUID(hexString: hex)) }

/// Mapping lines and files as SDL reads them, and the errors a person's file gets.
@Suite("SDL mapping lines and files")
struct GamepadMappingTests {
    /// Lines of SDL_GameControllerDB (the DualShock 4's for hid-playstation, a PS3 pad
    /// whose triggers are buttons, an 8BitDo pad with half axes and an inverted axis)
    /// parse into the bindings they say.
    @Test func databaseLinesParse() throws {
        let ps4 = try SDLGameControllerMapping(
            parsing:
                "030000004c050000cc09000011810000,PS4 Controller,a:b0,b:b1,back:b8,dpdown:h0.4,dpleft:h0.8,dpright:h0.2,dpup:h0.1,guide:b10,leftshoulder:b4,leftstick:b11,lefttrigger:a2,leftx:a0,lefty:a1,rightshoulder:b5,rightstick:b12,righttrigger:a5,rightx:a3,righty:a4,start:b9,x:b3,y:b2,platform:Linux,"
        )
        #expect(ps4.guid?.hexString == "030000004c050000cc09000011810000")
        #expect(ps4.guid?.vendor == 0x054c && ps4.guid?.product == 0x09cc && ps4.guid?.version == 0x8111)
        #expect(ps4.name == "PS4 Controller" && ps4.platform == "Linux" && ps4.crc == 0)
        #expect(ps4.bindings.count == 21)
        #expect(ps4.bindings.contains(.init(output: .button(.dpup), input: .hat(index: 0, mask: 1))))
        #expect(
            ps4.bindings.contains(
                .init(output: .axis(.lefttrigger, minimum: 0, maximum: 32767), input: .axis(index: 2, minimum: -32768, maximum: 32767))))
        let forms = try SDLGameControllerMapping(
            parsing:
                "05000000c82d00006a28000000010000,8BitDo GameCube,a:b0,-leftx:-a0,+leftx:+a0,lefty:a1~,righttrigger:-a5,crc:a1b2,hint:!SDL_GAMECONTROLLER_USE_GAMECUBE_LABELS:=1,platform:Linux,"
        )
        #expect(forms.crc == 0xa1b2)
        #expect(forms.hint == .init(name: "SDL_GAMECONTROLLER_USE_GAMECUBE_LABELS", isNegated: true, defaultValue: true))
        #expect(
            forms.bindings == [
                .init(output: .button(.a), input: .button(index: 0)),
                .init(output: .axis(.leftx, minimum: 0, maximum: -32768), input: .axis(index: 0, minimum: 0, maximum: -32768)),
                .init(output: .axis(.leftx, minimum: 0, maximum: 32767), input: .axis(index: 0, minimum: 0, maximum: 32767)),
                .init(output: .axis(.lefty, minimum: -32768, maximum: 32767), input: .axis(index: 1, minimum: 32767, maximum: -32768)),
                .init(output: .axis(.righttrigger, minimum: 0, maximum: 32767), input: .axis(index: 5, minimum: 0, maximum: -32768)),
            ])
    }

    /// Every bundled line parses (SDL_GameControllerDB's Linux entries), and the bundled
    /// database holds one entry per GUID.
    @Test func bundledLinesParse() throws {
        var database = SDLMappingDatabase(hints: [:])
        let problems = database.addMappings(fromText: SDLGameControllerDB.linuxText, source: "bundled")
        #expect(problems.isEmpty, "\(problems.prefix(3))")
        let lines = SDLGameControllerDB.linuxText.split(separator: "\n").filter { $0.contains("platform:Linux") }
        #expect(lines.count > 600)
        #expect(Set(database.mappings.compactMap(\.guid)).count == database.count)
    }

    /// A person's file with mistakes: each bad line is reported with the file and its line
    /// and what would be valid; the good lines still load; comments, blank lines and lines
    /// for other platforms are not errors.
    @Test func malformedLinesAreReportedAndSkipped() throws {
        let path = "/tmp/ringloop-mappings-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
        let text = """
            # my pads
            03000000aaaa0000bbbb000000010000,Good Pad,a:b0,b:b1,leftx:a0,lefty:a1,platform:Linux,

            03000000aaaa0000bbbb00000001000,Short GUID,a:b0,platform:Linux,
            03000000aaaa0000cccc000000010000,Bad Input,a:x0,platform:Linux,
            03000000aaaa0000dddd000000010000,Bad Hat,dpup:h0,platform:Linux,
            03000000aaaa0000eeee000000010000,No Colon,a,platform:Linux,
            03000000aaaa0000ffff000000010000,Windows Pad,a:b0,platform:Windows,
            03000000aaaa00000101000000010000,Second Good,a:b1,b:b0,platform:Linux,
            """
        _ = try Recording.write(text, to: path)
        defer { unlink(path) }
        var database = SDLMappingDatabase(hints: [:])
        let problems = try database.addMappings(contentsOfFile: path)
        #expect(problems.map(\.line) == [4, 5, 6, 7])
        #expect(problems.allSatisfy { $0.source == path })
        #expect(problems[0].description.hasPrefix("\(path):4: the GUID must be 32 hex digits"))
        #expect(problems[1].problem.contains("'a' takes bN (a button), aN"), "\(problems[1])")
        #expect(problems[1].problem.hasSuffix("found 'x0'"))
        #expect(database.mappings.map(\.name) == ["Good Pad", "Second Good"])
        #expect(throws: SDLMappingError.self) { try database.addMappings(contentsOfFile: path + ".missing") }
    }

    /// SDL's environment: the file named by SDL_GAMECONTROLLERCONFIG_FILE, then the lines
    /// of SDL_GAMECONTROLLERCONFIG (no platform needed), which replace a bundled line of
    /// the same GUID; a line under a false hint is left out; the Xbox 360 pad's bundled
    /// line is replaced for that pad.
    @Test func environmentAndPriorities() throws {
        let xbox = "030000005e0400008e02000014010000"
        var database = SDLMappingDatabase.bundled(hints: [:])
        let bundled = try #require(database.match(guid: try guid(xbox), name: ""))
        #expect(bundled.kind == .guid)
        let problems = database.addEnvironment([
            "SDL_GAMECONTROLLERCONFIG": "\(xbox),Mine,a:b1,b:b0\n03000000aaaa0000bbbb000000010000,Hinted,a:b0,hint:SDL_MY_HINT",
            "SDL_GAMECONTROLLERCONFIG_FILE": "/nonexistent/gamecontrollerdb.txt",
        ])
        #expect(problems.count == 1 && problems[0].source == "/nonexistent/gamecontrollerdb.txt")
        let mine = try #require(database.match(guid: try guid(xbox), name: ""))
        #expect(mine.mapping.name == "Mine")
        #expect(database.match(guid: try guid("03000000aaaa0000bbbb000000010000"), name: "") == nil)
        // A lower priority does not replace a higher one.
        database.add(try SDLGameControllerMapping(parsing: "\(xbox),Bundled Again,a:b0,"), priority: .bundled)
        #expect(database.match(guid: try guid(xbox), name: "")?.mapping.name == "Mine")
    }

    /// SDL's look-up order on one GUID: the line with the device's name CRC first, then the
    /// line without the version.
    @Test func lookUpOrder() throws {
        var database = SDLMappingDatabase(hints: [:])
        database.add(try SDLGameControllerMapping(parsing: "03000000aaaa0000bbbb000000010000,Version 1,a:b0,"))
        database.add(try SDLGameControllerMapping(parsing: "03000000aaaa0000bbbb000000020000,Version 2,a:b1,"))
        let device = try guid("0300efbeaaaa0000bbbb000000020000")
        #expect(database.match(guid: device, name: "")?.mapping.name == "Version 2")
        #expect(database.match(guid: device, name: "")?.kind == .guid)
        let other = try guid("0300efbeaaaa0000bbbb000000090000")
        #expect(database.match(guid: other, name: "")?.mapping.name == "Version 1")
        #expect(database.match(guid: other, name: "")?.kind == .versionless)
        // A line for this name's CRC replaces the entry of its GUID and matches first.
        database.add(try SDLGameControllerMapping(parsing: "03000000aaaa0000bbbb000000020000,With CRC,a:b2,crc:beef,"))
        #expect(database.match(guid: device, name: "")?.kind == .guidAndCRC)
        #expect(database.match(guid: device.withCRC(0x1234), name: "")?.mapping.name == "With CRC")
        // The xpad names with no line: SDL's layout of the xpad driver.
        let xpad = try guid("0300beef111100002222000000010000")
        #expect(database.match(guid: xpad, name: "Generic X-Box pad")?.kind == .name)
        #expect(database.match(guid: xpad, name: "Generic pad") == nil)
    }
}

/// Dead zones on the Xbox 360 pad's recording (xpad: sticks −32768…32767 with flat 128,
/// triggers 0…255 with flat 0), as the type documents them.
@Suite("Gamepad dead zones")
struct GamepadDeadZoneTests {
    static func xboxPad(_ zones: GamepadDeadZones) throws -> GamepadLayout {
        let recording = try Recording.load(contentsOf: devicesFolder + "/gamepad.evemu")
        let device = HIDDeviceInfo(description: try #require(recording.description))
        let match = try #require(SDLMappingDatabase.bundled(hints: [:]).match(for: device))
        return GamepadLayout(device: device, mapping: match.mapping, deadZones: zones)
    }

    @Test func fromTheDevicesFlat() throws {
        let pad = try Self.xboxPad(.fromDevice)
        #expect(abs(pad.stickDeadZone.left - 128.0 / 32767.5) < 1e-9)
        #expect(pad.triggerDeadZone.left == 0 && pad.triggerDeadZone.right == 0)
    }

    @Test func radialSticksAndLinearTriggers() throws {
        var pad = try Self.xboxPad(GamepadDeadZones(stick: 0.2, trigger: 0.1))
        var events: [GamepadEvent] = []
        func x(_ value: Int32) { pad.process(axis: Evdev.ABS_X, value: value) { events.append($0) } }
        func y(_ value: Int32) { pad.process(axis: Evdev.ABS_Y, value: value) { events.append($0) } }
        // Inside the circle (0.1, 0.1: 0.14 from the centre): both axes read 0.
        x(3277)
        y(3277)
        #expect(pad.value(of: .leftx) == 0 && pad.value(of: .lefty) == 0)
        #expect(events.isEmpty, "nothing moved out of the dead zone: \(events)")
        // Out along x (0.6): (0.6 − 0.2) / 0.8 of the way, y still 0.
        y(0)
        x(19660)
        #expect(abs(pad.value(of: .leftx) - (19660.0 / 32767 - 0.2) / 0.8) < 1e-6)
        #expect(events.last == GamepadEvent(control: .leftx, value: pad.value(of: .leftx), raw: 19660))
        // Diagonal just outside (0.15, 0.15: 0.212 from the centre): both small, same direction.
        x(4915)
        y(4915)
        let magnitude = (4915.0 / 32767) * 2.0.squareRoot()
        let scaled = (magnitude - 0.2) / 0.8 / magnitude * 4915 / 32767
        #expect(abs(pad.value(of: .leftx) - scaled) < 1e-6 && abs(pad.value(of: .lefty) - scaled) < 1e-6)
        // The edge still reads 1.
        x(32767)
        y(0)
        #expect(pad.value(of: .leftx) == 1)
        // Trigger (ABS_Z, 0…255): 10 % of travel is 0, full is 1, halfway (0.5 − 0.1) / 0.9.
        pad.process(axis: Evdev.ABS_Z, value: 25) { events.append($0) }
        #expect(pad.value(of: .lefttrigger) == 0)
        pad.process(axis: Evdev.ABS_Z, value: 255) { events.append($0) }
        #expect(pad.value(of: .lefttrigger) == 1)
        pad.process(axis: Evdev.ABS_Z, value: 128) { events.append($0) }
        let sdl = Double(128 * 257 - 32768) / 32767  // SDL's −32768…32767 scale, then 0…1 of the trigger
        let half = (sdl + 1) / 2
        #expect(abs(pad.value(of: .lefttrigger) - (half - 0.1) / 0.9) < 1e-3)
        #expect(events.last?.raw == 128)
    }
}

/// The DualShock 4's hardware recording (devices/kernel/README.md: triangle, circle,
/// cross, square, the d-pad's up, right, down and left, R1, L1, R3, L3, Options, Share
/// and PS pressed one at a time), with expectations written by hand from the database
/// lines before the first run.
@Suite("The DualShock 4's recording through its mappings")
struct DualShock4MappingTests {
    static func presses(_ mapping: SDLGameControllerMapping) throws -> [String] {
        let recording = try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu")
        let device = HIDDeviceInfo(description: try #require(recording.description))
        var pad = GamepadLayout(device: device, mapping: mapping)
        var pressed: [String] = []
        for event in recording.events {
            let emit: (GamepadEvent) -> Void = { if !$0.control.isAxis && $0.value == 1 { pressed.append($0.control.name) } }
            if event.type == Evdev.EV_KEY {
                pad.process(button: event.code, isDown: event.value != 0, emit: emit)
            } else if event.type == Evdev.EV_ABS {
                pad.process(axis: event.code, value: event.value, emit: emit)
            }
        }
        return pressed
    }

    /// hid-playstation (Linux 6.2+) gives version 0x8100; no line has it, so SDL's
    /// version-less match takes the database's first DualShock 4 line on USB, made for
    /// hid-sony's older layout (a:b1, b:b2, x:b0, y:b3, guide:b12, leftstick:b10,
    /// rightstick:b11). Through it cross (BTN_SOUTH, b0) is x, circle (b1) a, triangle
    /// (BTN_NORTH, b2) b, square (BTN_WEST, b3) y, R3 (b12) guide, L3 (b11) rightstick,
    /// PS (b10) leftstick — what SDL 2.26 reports for this pad (the SDL tests check it).
    @Test func versionlessLineOfTheOlderDriver() throws {
        let device = HIDDeviceInfo(
            description: try #require(
                try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu").description))
        let match = try #require(SDLMappingDatabase.bundled(hints: [:]).match(for: device))
        #expect(match.kind == .versionless)
        #expect(match.mapping.guid?.hexString == "030000004c050000cc09000000010000")
        #expect(
            try Self.presses(match.mapping) == [
                "b", "a", "x", "y", "dpup", "dpright", "dpdown", "dpleft", "rightshoulder", "leftshoulder", "guide",
                "rightstick", "start", "back", "leftstick",
            ])
    }

    /// The database's line for hid-playstation's layout (version 0x8111: a:b0, b:b1, x:b3,
    /// y:b2, guide:b10, leftstick:b11, rightstick:b12) names each button as printed on it.
    @Test func lineOfTheDriverItCameThrough() throws {
        let line = try #require(
            SDLGameControllerDB.linuxText.split(separator: "\n").first { $0.hasPrefix("030000004c050000cc09000011810000,") })
        #expect(
            try Self.presses(try SDLGameControllerMapping(parsing: line)) == [
                "y", "b", "a", "x", "dpup", "dpright", "dpdown", "dpleft", "rightshoulder", "leftshoulder", "rightstick",
                "leftstick", "start", "back", "guide",
            ])
    }
}
