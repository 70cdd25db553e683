import Glibc
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopTestSupport
import Testing

/// libsdl2 itself (Debian's 2.26), built into a small probe (Tests/Tools/sdl-probe.c) and
/// pointed at the FUSE nodes of the real gamepads' recordings: SDL's Linux backend opens
/// them as it opens /dev/input nodes, so its GUID, name, numbering, mapping and game
/// controller events are the reference.
enum SDLProbe {
    /// The probe, compiled once per test run; `nil` (with the reason in `problem`) where
    /// libsdl2-dev or a C compiler is missing.
    static let path: String? = build()
    nonisolated(unsafe) static var problem = ""

    static let missing: Comment = "needs libsdl2-dev, pkg-config and a C compiler (tools/setup installs them)"

    private static func build() -> String? {
        var source = #filePath
        for _ in 0..<2 { source = String(source[..<source.lastIndex(of: "/")!]) }
        source += "/Tools/sdl-probe.c"
        let output = "/tmp/ringloop-sdl-probe-\(getpid())"
        let compiler = access("/usr/bin/cc", X_OK) == 0 ? "/usr/bin/cc" : "clang"
        let script = "\(compiler) -O1 -o '\(output)' '\(source)' $(pkg-config --cflags --libs sdl2)"
        guard let build = try? Spawned("/bin/sh", ["-c", script]) else { return nil }
        guard build.finish() == 0 else {
            problem = build.error
            return nil
        }
        return output
    }

    /// What SDL says of the device at `node` (without reading events).
    struct Report {
        var guid: String
        var name: String
        var mapping: String
        var buttons: Int
        var axes: Int
        var hats: Int
        /// SDL's mappings in its list's order (with `--dump-mappings`).
        var database: [String]
    }

    static func describe(_ node: String, arguments: [String] = []) throws -> Report {
        let probe = try Spawned(try #require(path), [node] + arguments)
        #expect(probe.finish(timeout: .seconds(30)) == 0, "sdl-probe: \(probe.error)")
        var fields: [String: String] = [:]
        var database: [String] = []
        for line in probe.output.split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            let value = String(line[line.index(after: space)...])
            if line[..<space] == "dbline" { database.append(value) } else { fields[String(line[..<space])] = value }
        }
        let counts = (fields["counts"] ?? "").split(separator: " ").compactMap { Int($0) }
        return Report(
            guid: fields["guid"] ?? "", name: fields["name"] ?? "", mapping: fields["mapping"] ?? "",
            buttons: counts.count == 3 ? counts[0] : -1, axes: counts.count == 3 ? counts[1] : -1,
            hats: counts.count == 3 ? counts[2] : -1, database: database)
    }
}

/// The gamepads recorded on hardware or by the kernel's own drivers.
let gamepadRecordings = [
    "kernel/dualshock4-usb-gamepad.evemu", "kernel/dualsense-usb-gamepad.evemu",
    "real/evemu-devices/joysticks/Microsoft X-Box 360 pad.desc",
    "real/evemu-devices/joysticks/Mad Catz Wired Xbox 360 Controller.events",
    "real/evemu-devices/joysticks/Sony PLAYSTATION(R)3 Controller.desc", "gamepad.evemu",
]

@Suite(.enabled(if: FUSEHere.usable, FUSEHere.missing), .enabled(if: SDLProbe.path != nil, SDLProbe.missing))
struct GamepadAgainstSDLTests {
    /// GUID, name and the counts of buttons, axes and hats: what SDL computes for the same
    /// node, byte for byte.
    @Test(arguments: gamepadRecordings)
    func identityAndNumberingAreSDLs(_ file: String) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/" + file)
        let description = try #require(recording.description)
        let device = HIDDeviceInfo(description: description)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let sdl = try SDLProbe.describe(node.path)
            #expect(device.sdlGUID.hexString == sdl.guid, "\(file)")
            #expect(device.sdlName == sdl.name, "\(file)")
            let layout = device.sdlLayout
            #expect([layout.buttons.count, layout.axes.count, layout.hats.count] == [sdl.buttons, sdl.axes, sdl.hats], "\(file)")
        }
    }

    /// SDL's naming rules (spaces, a manufacturer's long prefix, a name said twice) on the
    /// DualShock 4's node under names a cheap pad's firmware might give and ids SDL does
    /// not know: the name, and so the GUID's CRC, are SDL's.
    @Test(arguments: [
        "  HORI CO.,LTD.   Fighting  Commander  ", "Razer Razer Raiju Tournament Edition Wired",
        "Performance Designed Products Rock Candy Wired Controller", "Mad Catz Inc. Fightpad", "Unknown Gamepad",
        "NVIDIA Corporation NVIDIA Controller v01.04", "USB Gamepad ",
    ])
    func namesAreSDLs(_ name: String) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu")
        var description = try #require(recording.description)
        description.name = name
        description.vendor = 0x0e8f
        description.product = 0x7777
        let device = HIDDeviceInfo(description: description)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let sdl = try SDLProbe.describe(node.path)
            #expect(device.sdlName == sdl.name)
            #expect(device.sdlGUID.hexString == sdl.guid)
        }
    }

    /// SDL's own list of mappings (its built-in lines, then the bundled database's file
    /// loaded on top, replacing the built-in lines of the same GUIDs), taken in SDL's order
    /// into an ``SDLMappingDatabase``, gives each device the mapping SDL gives it: the
    /// look-up order (GUID and CRC, GUID, version-less, names) is SDL's.
    @Test(arguments: gamepadRecordings)
    func mappingIsTheOneSDLPicks(_ file: String) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/" + file)
        let description = try #require(recording.description)
        let device = HIDDeviceInfo(description: description)
        let databaseFile = "/tmp/ringloop-sdl-db-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
        _ = try Recording.write(SDLGameControllerDB.linuxText, to: databaseFile)
        defer { unlink(databaseFile) }
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            for arguments in [["--dump-mappings"], ["--mappings-file", databaseFile, "--dump-mappings"]] {
                let sdl = try SDLProbe.describe(node.path, arguments: arguments)
                #expect(sdl.database.count > 300, "\(file): SDL listed \(sdl.database.count) mappings")
                var database = SDLMappingDatabase(hints: [:])
                let problems = database.addMappings(
                    fromText: sdl.database.joined(separator: "\n"), source: "SDL's list", priority: .bundled, requirePlatform: false)
                #expect(problems.isEmpty, "\(problems.prefix(3))")
                let mine = try #require(database.match(for: device), "\(file)")
                let theirs = try SDLGameControllerMapping(parsing: sdl.mapping, source: "SDL")
                #expect(
                    mine.mapping.bindings == theirs.bindings,
                    "\(file) \(arguments): \(mine.kind) \(mine.mapping.line) vs SDL's \(sdl.mapping)")
            }
        }
    }

    /// Bindings of every form SDL knows.
    static let everyForm =
        "a:b1,b:b0,+leftx:b2,-leftx:b3,lefty:a1~,-righty:a4,rightx:+a3,lefttrigger:-a0,righttrigger:a5~,"
        + "dpup:-a1,dpdown:+a1,leftshoulder:h0.8,rightshoulder:h0.2,+righty:h0.4,start:b7,back:a2,guide:+a3,"

    /// SDL's automatic mapping (a gamepad-spec driver that no line knows): the DualShock 4's
    /// and the Xbox 360 pad's capabilities under ids and a name no line has get the mapping
    /// SDL generates. With Sony's vendor id, x and y are `BTN_WEST` and `BTN_NORTH` (the
    /// rule SDL means, and applies from 2.28); SDL 2.26 read the vendor from a joystick it
    /// had not finished making (0) and so gave Sony's pads `BTN_X`/`BTN_Y` too: those two
    /// bindings are expected swapped against it.
    @Test(arguments: [
        ("kernel/dualshock4-usb-gamepad.evemu", UInt16(0x054c)), ("kernel/dualshock4-usb-gamepad.evemu", 0x1d6b),
        ("real/evemu-devices/joysticks/Microsoft X-Box 360 pad.desc", 0x1d6b),
    ])
    func automaticMappingIsSDLs(_ file: String, vendor: UInt16) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/" + file)
        var description = try #require(recording.description)
        description.vendor = vendor
        description.product = 0x0f0f
        description.name = "RingLoop Test Pad"
        let device = HIDDeviceInfo(description: description)
        let mine = try #require(SDLMappingDatabase.bundled(hints: [:]).match(for: device))
        #expect(mine.kind == .automatic)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let sdl = try SDLProbe.describe(node.path)
            var theirs = try SDLGameControllerMapping(parsing: sdl.mapping, source: "SDL")
            if vendor == 0x054c {
                theirs.bindings = theirs.bindings.map { binding in
                    var swapped = binding
                    if binding.output == .button(.x) { swapped.output = .button(.y) }
                    if binding.output == .button(.y) { swapped.output = .button(.x) }
                    return swapped
                }
            }
            #expect(Set(mine.mapping.bindings) == Set(theirs.bindings), "\(file): \(mine.mapping.line) vs SDL's \(sdl.mapping)")
            #expect(mine.mapping.name == theirs.name)
        }
    }

    /// The recordings with events replayed to SDL and through ``GamepadLayout`` with the
    /// same mapping (the bundled database's pick, given to SDL for the device's GUID): the
    /// buttons go down and up in the same order, and every stick and trigger ends where
    /// SDL's ends (within one device unit: SDL holds back an axis's first small moves).
    ///
    /// Then the same with a mapping that uses every form of binding (half axes in and out,
    /// an inverted axis, axis → button, button → axis, hat → axis) on the Xbox 360 pad's and
    /// the DualShock 4's recordings.
    @Test(arguments: [
        ("kernel/dualshock4-usb-gamepad.evemu", nil), ("kernel/dualsense-usb-gamepad.evemu", nil),
        ("real/evemu-devices/joysticks/Mad Catz Wired Xbox 360 Controller.events", nil), ("gamepad.evemu", nil),
        ("gamepad.evemu", Self.everyForm), ("kernel/dualshock4-usb-gamepad.evemu", Self.everyForm),
        ("real/evemu-devices/joysticks/Mad Catz Wired Xbox 360 Controller.events", Self.everyForm),
    ])
    func eventsAreSDLs(_ file: String, bindings: String?) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/" + file)
        let description = try #require(recording.description)
        let device = HIDDeviceInfo(description: description)
        let match = try #require(SDLMappingDatabase.bundled(hints: [:]).match(for: device))
        let line =
            device.sdlGUID.withoutCRC.hexString + ","
            + (bindings.map { "Every Form," + $0 } ?? String(match.mapping.line.split(separator: ",", maxSplits: 1)[1]))
        let mapping = try SDLGameControllerMapping(parsing: line)
        var layout = GamepadLayout(device: device, mapping: mapping, deadZones: .none)
        var mine: [GamepadEvent] = []
        for event in recording.events {
            if event.type == Evdev.EV_KEY && event.value != 2 {
                layout.process(button: event.code, isDown: event.value != 0) { mine.append($0) }
            } else if event.type == Evdev.EV_ABS {
                layout.process(axis: event.code, value: event.value) { mine.append($0) }
            }
        }
        let myButtons = mine.filter { !$0.control.isAxis }.map { "\($0.control.name) \(Int($0.value))" }
        #expect(!myButtons.isEmpty, "\(file): the recording presses buttons")
        try withDeviceFolder { folder in
            // A buffer that holds the whole recording: a probe slowed down (a sanitizer, a
            // loaded machine) must not lose frames to an overflow the comparison would see.
            let node = try folder.addDevice(description, bufferSize: 1 << 16)
            let probe = try Spawned(
                try #require(SDLProbe.path), [node.path, "--mapping", line, "--events", "--seconds", "120"])
            #expect(probe.waitFor("ready"), "sdl-probe: \(probe.error)")
            try Replay.play(recording, to: node, speed: .scaled(8))
            func sdlButtons() -> [String] {
                var state: [String: Int] = [:]
                var list: [String] = []
                for line in probe.output.split(separator: "\n") where line.hasPrefix("button ") {
                    let parts = line.split(separator: " ")
                    guard parts.count == 3, let value = Int(parts[2]), state[String(parts[1])] != value else { continue }
                    state[String(parts[1])] = value
                    list.append("\(parts[1]) \(value)")
                }
                return list
            }
            // SDL holds a quick guide release back (SDL_MINIMUM_GUIDE_BUTTON_DELAY_MS, 250 ms):
            // the guide button's own order is compared apart from the others'.
            func split(_ list: [String]) -> [[String]] {
                [list.filter { !$0.hasPrefix("guide ") }, list.filter { $0.hasPrefix("guide ") }]
            }
            #expect(waitUntil { sdlButtons().count >= myButtons.count }, "\(file): SDL said \(probe.output) \(probe.error)")
            #expect(split(sdlButtons()) == split(myButtons), "\(file)")
            // The axes' last values (SDL's in its units).
            var myAxes: [String: Double] = [:]
            for event in mine where event.control.isAxis { myAxes[event.control.name] = event.value }
            func sdlAxes() -> [String: Double] {
                var values: [String: Double] = [:]
                for line in probe.output.split(separator: "\n") where line.hasPrefix("axis ") {
                    let parts = line.split(separator: " ")
                    if parts.count == 3, let value = Double(parts[2]) { values[String(parts[1])] = value / 32767 }
                }
                return values
            }
            func axesAgree() -> Bool {
                let theirs = sdlAxes()
                return myAxes.allSatisfy { abs((theirs[$0.key] ?? 0) - $0.value) <= 300.0 / 32767 }
            }
            #expect(waitUntil(axesAgree), "\(file): mine \(myAxes), SDL's \(sdlAxes())")
            node.remove()
            #expect(probe.finish(timeout: .seconds(30)) == 0)
        }
    }
}
