import Foundation
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// Recordings of four touches at `ringloop calibrate`'s targets, made on the description of
/// a real touchscreen (devices/real/evemu/3m.prop, a 3M MicroTouch, protocol B, 0…32767)
/// through a known calibration matrix with noise, written by the project's evemu writer;
/// the command must recover the matrix.
@Suite("ringloop calibrate")
struct CalibrateCommandTests {
    /// The matrix the touches are placed through (a resistive panel's scale, skew and shift).
    static let truth: [Double] = [1.03, 0.02, -0.025, -0.015, 0.97, 0.035]

    /// Where a touch answering each target lands on the device (normalized), worked out by
    /// hand from libinput's definitions: the targets are (m, m), (1−m, m), (1−m, 1−m),
    /// (m, 1−m) of the screen as the app sees it; libinput's 90° matrix takes (x, y) to
    /// (1 − y, x), so the target before the rotation is (t.y, 1 − t.x); the device position
    /// p solves [a b; d e]·p + (c, f) = that target.
    static func devicePositions(rotation: Int, margin: Double, matrix: [Double]) -> [(Double, Double)] {
        let targets = [(margin, margin), (1 - margin, margin), (1 - margin, 1 - margin), (margin, 1 - margin)]
        let (a, b, c, d, e, f) = (matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5])
        return targets.map { target in
            let before: (Double, Double)
            switch rotation {
            case 90: before = (target.1, 1 - target.0)
            case 180: before = (1 - target.0, 1 - target.1)
            case 270: before = (1 - target.1, target.0)  // 270°: (x, y) → (y, 1 − x)
            default: before = target
            }
            let (u, v) = (before.0 - c, before.1 - f)
            let determinant = a * e - b * d
            return ((e * u - b * v) / determinant, (a * v - d * u) / determinant)
        }
    }

    /// Writes a recording of touches at device positions `positions` (normalized), each
    /// moved by up to `noise` (normalized) and held for a few frames, and returns its path.
    static func writeRecording(_ positions: [(Double, Double)], noise: Double, seed: UInt64, name: String) throws -> String {
        let real = try Recording.load(contentsOf: repository + "/devices/real/evemu/3m.prop")
        let description = try #require(real.description)
        let range = Double(description.absoluteAxes[Evdev.ABS_MT_POSITION_X]!.maximum)
        var random = SeededGenerator(state: seed)
        var events: [InputEvent] = []
        var time: Int64 = 10
        func frame(_ values: [(UInt16, UInt16, Int32)]) {
            for (type, code, value) in values + [(Evdev.EV_SYN, Evdev.SYN_REPORT, 0)] {
                events.append(
                    InputEvent(seconds: time / 1000, microseconds: Int32(time % 1000) * 1000, type: type, code: code, value: value))
            }
            time += 12
        }
        for (index, position) in positions.enumerated() {
            let x = Int32((position.0 + Double.random(in: -noise...noise, using: &random)) * range)
            let y = Int32((position.1 + Double.random(in: -noise...noise, using: &random)) * range)
            frame([
                (Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 0), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, Int32(index + 1)),
                (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, x), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, y),
                (Evdev.EV_KEY, Evdev.BTN_TOUCH, 1), (Evdev.EV_ABS, Evdev.ABS_X, x), (Evdev.EV_ABS, Evdev.ABS_Y, y),
            ])
            // The finger settles a little after touching down; the first touch-down is the answer.
            for step in 1...3 {
                frame([(Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, x + Int32(step * 40)), (Evdev.EV_ABS, Evdev.ABS_X, x + Int32(step * 40))])
            }
            frame([(Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, -1), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 0)])
            time += 600
        }
        let path = "/tmp/ringloop-calibrate-\(getpid())-\(name).evemu"
        try EvemuFormat.write(Recording(description: description, events: events)).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("the matrix of four noisy touches placed through a known matrix is recovered, at every rotation", arguments: [0, 90, 180, 270])
    func recoversTheMatrix(rotation: Int) throws {
        let screen = rotation % 180 == 0 ? "1920x1080@\(rotation)" : "1080x1920@\(rotation)"
        // Noise of up to 0.0005 of the range: about a pixel on 1920.
        let path = try Self.writeRecording(
            Self.devicePositions(rotation: rotation, margin: 0.1, matrix: Self.truth), noise: 0.0005, seed: UInt64(rotation + 1),
            name: "r\(rotation)")
        defer { unlink(path) }
        let result = try runCommand(["calibrate", "--from", path, "--screen", screen, "--json"])
        #expect(result.status == 0, "\(result.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
        let matrix = try #require(object["matrix"] as? [Double])
        #expect(matrix.count == 6)
        for (got, want) in zip(matrix, Self.truth) { #expect(abs(got - want) < 0.004, "\(matrix) against \(Self.truth)") }
        let residual = try #require(object["residual_px"] as? Double)
        #expect(residual < 5, "residual \(residual) px")
        // The text form prints the same matrix, a udev rule and the settings entry.
        let text = try runCommand(["calibrate", "--from", path, "--screen", screen])
        #expect(text.status == 0, "\(text.error)")
        #expect(text.output.contains("ENV{LIBINPUT_CALIBRATION_MATRIX}=\""))
        #expect(text.output.contains("[match name=\"3M-3M-MicroTouch-USB-controller Virtual Device\" vendor=0x0596 product=0x0502]"))
        let line = try #require(text.output.split(separator: "\n").first { $0.hasPrefix("  calibration = ") })
        let printed = line.dropFirst("  calibration = ".count).split(separator: " ").compactMap { Double($0) }
        #expect(printed.count == 6 && zip(printed, matrix).allSatisfy { abs($0 - $1) < 1e-5 }, "\(line)")
    }

    @Test("two touches at one place, a touch far from its target and too few touches are refused, naming the touch")
    func refusals() throws {
        var positions = Self.devicePositions(rotation: 0, margin: 0.1, matrix: Self.truth)
        let same = positions
        var doubled = same
        doubled[2] = doubled[1]
        let doubledPath = try Self.writeRecording(doubled, noise: 0, seed: 1, name: "doubled")
        defer { unlink(doubledPath) }
        let refused = try runCommand(["calibrate", "--from", doubledPath, "--screen", "800x480"])
        #expect(refused.status == 65)
        #expect(refused.error.contains("touches 2 (top-right) and 3 (bottom-right) are at the same place"), "\(refused.error)")
        // The bottom-right touch lands a tenth of the screen off.
        positions[2].0 -= 0.1
        let offPath = try Self.writeRecording(positions, noise: 0, seed: 2, name: "off")
        defer { unlink(offPath) }
        let off = try runCommand(["calibrate", "--from", offPath, "--screen", "800x480"])
        #expect(off.status == 65)
        #expect(off.error.contains("touch 3 (bottom-right) lands"), "\(off.error)")
        let fewPath = try Self.writeRecording(Array(same.prefix(3)), noise: 0, seed: 3, name: "few")
        defer { unlink(fewPath) }
        let few = try runCommand(["calibrate", "--from", fewPath, "--screen", "800x480"])
        #expect(few.status == 65 && few.error.contains("has 3 touches; a calibration takes 4"), "\(few.error)")
        let badScreen = try runCommand(["calibrate", "--from", fewPath, "--screen", "800x480@45"])
        #expect(badScreen.status == 64 && badScreen.error.contains("0, 90, 180 and 270"), "\(badScreen.error)")
    }

    @Test(
        "live: the touches replayed on a FUSE virtual touchscreen answer the targets announced one by one",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func live() throws {
        let path = try Self.writeRecording(
            Self.devicePositions(rotation: 90, margin: 0.1, matrix: Self.truth), noise: 0.0005, seed: 9, name: "live")
        defer { unlink(path) }
        let mount = "/tmp/ringloop-calibrate-live-\(getpid())"
        let replay = try Spawned(
            ringloop, ["replay", path, "--backend", "fuse", "--mount", mount, "--wait-for-readers", "1", "--wait", "30"],
            directory: repository)
        #expect(replay.waitFor("\n"))
        let result = try runCommand(["calibrate", mount + "/event0", "--screen", "1080x1920@90", "--json", "--timeout", "60"], timeout: 90)
        #expect(replay.finish(timeout: .seconds(30)) == 0, "\(replay.error)")
        #expect(result.status == 0, "\(result.error)")
        // Each target is announced once, in order, the next after each touch.
        let announced = result.error.split(separator: "\n").filter { $0.hasPrefix("touch target ") }
        #expect(
            announced.map { String($0.prefix(17)) } == ["touch target 1 of", "touch target 2 of", "touch target 3 of", "touch target 4 of"])
        #expect(announced.first?.contains("(top-left) at (108, 192) px of 1080x1920@90") == true, "\(announced)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], "\(result.output)")
        let matrix = try #require(object["matrix"] as? [Double])
        for (got, want) in zip(matrix, Self.truth) { #expect(abs(got - want) < 0.004, "\(matrix)") }
    }
}

@Suite("ringloop serve with screens", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ServeScreensCommandTests {
    @Test(
        "serve --device-config: a client gets screen locations; SIGHUP reads the file again, names its bad line, and the next touch maps by the new settings"
    )
    func reloadOnHangUp() throws {
        let name = ServeCommandTests.uniqueName("screens")
        let config = "/tmp/ringloop-serve-screens-\(getpid()).conf"
        defer { unlink(config) }
        try "version = 1\n[screen panel]\nsize = 1920x1080\n[match name=\"ELAN*\"]\nscreen = panel\n".write(
            toFile: config, atomically: true, encoding: .utf8)
        // The ELAN panel is 0…3200 × 0…1800: (800, 1350) is (0.25, 0.75) of it.
        func down(_ id: Int) -> [(Int, Int, Int)] {
            [(3, 0x2f, 0), (3, 0x39, id), (3, 0x35, 800), (3, 0x36, 1350), (1, 0x14a, 1), (3, 0, 800), (3, 1, 1350)]
        }
        let lift: [(Int, Int, Int)] = [(3, 0x2f, 0), (3, 0x39, -1), (1, 0x14a, 0)]
        let touches = try testRecording("touchscreen-multitouch", [(0.3, down(1)), (0.4, lift), (8.0, down(2)), (8.1, lift)])
        defer { unlink(touches) }
        let server = try Spawned(
            ringloop, ["serve", name, touches, "--device-config", config, "--wait-clients", "1", "--json"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        func location(_ id: Int) -> [Double]? {
            for object in jsonLines(client.output, kind: "digitizer") {
                for contact in object["contacts"] as? [[String: Any]] ?? [] where contact["id"] as? Int == id {
                    if let screen = contact["screen"] as? [String: Double], let x = screen["x"], let y = screen["y"] { return [x, y] }
                }
            }
            return nil
        }
        #expect(waitUntil(timeout: .seconds(30)) { location(1) != nil }, "\(client.output)\n\(server.error)")
        // Upright 1920x1080: (0.25, 0.75) → (480, 810).
        #expect(location(1) == [480, 810])
        // The new reading turns the panel 180° and has a matrix of three numbers: refused, named, the rest used.
        try "version = 1\n[screen panel]\nsize = 1920x1080\n[match name=\"ELAN*\"]\nscreen = panel\ncalibration = 1 0 0\nrotation = 180\n"
            .write(
                toFile: config, atomically: true, encoding: .utf8)
        server.signal(SIGHUP)
        #expect(server.waitFor("read \(config) again (1 problem)", inError: true), "\(server.error)")
        #expect(server.error.contains("\(config):6: calibration: a calibration matrix has 6 numbers"), "\(server.error)")
        // (The device's new mapping is said after the reading's line: wait for it, bounded.)
        #expect(
            waitUntil(timeout: .seconds(30)) {
                server.error.contains("ELAN Touchscreen → 1920x1080@180 (panel): screen from \(config):5, rotation from \(config):7")
            }, "\(server.error)")
        // 180°: (1 − 0.25, 1 − 0.75) → (1440, 270).
        #expect(waitUntil(timeout: .seconds(30)) { location(2) != nil }, "\(client.output)")
        #expect(location(2) == [1440, 270])
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}

@Suite("ringloop describe with settings")
struct DescribeSettingsTests {
    @Test("describe --device-config shows each setting with its file and line, and the screen, as comments the readers skip")
    func settingsAsComments() throws {
        let config = "/tmp/ringloop-describe-\(getpid()).conf"
        defer { unlink(config) }
        try
            "version = 1\n[screen main]\nsize = 1080x1920\nrotation = 90\n[match vendor=0x0596 class=touchscreen]\ncalibration = 1.02 0 -0.01 0 0.98 0.01\ntap = no\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let result = try runCommand(["describe", "devices/real/evemu/3m.prop", "--device-config", config])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("#   calibration = 1.02 0 -0.01 0 0.98 0.01 (from \(config):6)\n"), "\(result.output)")
        #expect(result.output.contains("#   tap = no (from \(config):7)\n"))
        #expect(result.output.contains("#   screen: main 1080x1920@90, screen: the only screen, calibration from \(config):6\n"))
        let original = try Recording.load(contentsOf: repository + "/devices/real/evemu/3m.prop")
        let described = try EvemuFormat.parse(result.output)
        #expect(described.description == original.description)
    }

    @Test("describe says a device left alone or given another class, with the line that did it, and a mount matrix with its source")
    func attachmentAndMountMatrix() throws {
        let config = "/tmp/ringloop-describe-attach-\(getpid()).conf"
        defer { unlink(config) }
        try
            "version = 1\n[match class=touchscreen]\nclass = touchpad\n[match class=keyboard]\nignore = yes\n[match class=motion]\nmount-matrix = 0, 1, 0; -1, 0, 0; 0, 0, 1\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let screen = try runCommand(["describe", "devices/real/evemu/3m.prop", "--device-config", config])
        #expect(screen.status == 0, "\(screen.error)")
        #expect(screen.output.contains("#   class = touchpad (from \(config):3)\n"), "\(screen.output)")
        #expect(screen.output.contains("#   attached as a touchpad, not a touchscreen (class from \(config):3)\n"))
        #expect(screen.output.contains("#   screen: none, a touchpad does not map to a screen\n"))
        let keyboard = try runCommand(["describe", "devices/keyboard.evemu", "--device-config", config])
        #expect(keyboard.output.contains("#   attached: no, ignored (from \(config):5)\n"), "\(keyboard.output)")
        let motion = try runCommand(["describe", "devices/motion/dualsense-rotation.evemu", "--device-config", config])
        #expect(motion.output.contains("#   mount-matrix = 0, 1, 0; -1, 0, 0; 0, 0, 1 (from \(config):7)\n"), "\(motion.output)")
        // Without options and without udev (a recording), nothing is added.
        let plain = try runCommand(["describe", "devices/keyboard.evemu"])
        #expect(!plain.output.contains("ringloop settings"))
    }

    @Test("doctor reads --device-config as the other commands do: a missing file is refused (66), a bad line is named and the rest used")
    func doctorSettingsFile() throws {
        let missing = try runCommand(["doctor", "--device-config", "/nonexistent/ringloop.conf"])
        #expect(missing.status == 66)
        #expect(missing.error.contains("ringloop doctor: /nonexistent/ringloop.conf: No such file or directory"), "\(missing.error)")
        let config = "/tmp/ringloop-doctor-\(getpid()).conf"
        defer { unlink(config) }
        try "version = 1\n[match class=pointer]\naccel-speed = 7\n".write(toFile: config, atomically: true, encoding: .utf8)
        let bad = try runCommand(["doctor", "--device-config", config, "--json"])
        #expect(bad.error.contains("ringloop doctor: \(config):3: "), "\(bad.error)")
        #expect(bad.output.contains("\"waitCore\""))
    }
}

@Suite("ringloop monitor --screen", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MonitorScreenCommandTests {
    @Test(
        "a touchscreen recording played with --screen 1080x1920@90 gives every contact a location equal to libinput's formula (Python), inside the rotated screen without a calibration",
        .enabled(if: access("/usr/bin/python3", X_OK) == 0, "python3"), arguments: ["1 0 0 0 1 0", "1.02 0.01 -0.01 -0.02 0.98 0.02"])
    func locationsMatchTheFormula(matrix: String) throws {
        let recording = "devices/touchscreen-multitouch.evemu"
        let result = try runCommand(
            ["monitor", recording, "--screen", "1080x1920@90", "--calibration", matrix, "--json", "--speed", "4"], timeout: 120)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("ELAN Touchscreen → 1080x1920@90 (screen): screen: the only screen, calibration from --calibration"))
        var points: [(x: Int, y: Int, screen: [Double])] = []
        for object in jsonLines(result.output, kind: "digitizer") {
            for contact in object["contacts"] as? [[String: Any]] ?? [] {
                let screen = try #require(contact["screen"] as? [String: Double], "\(contact)")
                points.append((try #require(contact["x"] as? Int), try #require(contact["y"] as? Int), [screen["x"]!, screen["y"]!]))
            }
        }
        #expect(points.count > 50, "\(points.count) contacts")
        // One file per case: the cases run at once.
        let pointsFile = "/tmp/ringloop-monitor-screen-\(getpid())-\(matrix.hashValue).points"
        defer { unlink(pointsFile) }
        try points.map { "mt \($0.x) \($0.y)\n" }.joined().write(toFile: pointsFile, atomically: true, encoding: .utf8)
        let python = try Spawned(
            "/usr/bin/python3",
            ["-c", libinputFormulaScript, repository + "/" + recording, pointsFile, "1080", "1920", "90"]
                + matrix.split(separator: " ").map(String.init))
        #expect(python.finish(timeout: .seconds(60)) == 0, "\(python.error)")
        let expected = python.output.split(separator: "\n").map { $0.split(separator: " ").map { Double($0)! } }
        try #require(expected.count == points.count)
        for (point, want) in zip(points, expected) {
            #expect(abs(point.screen[0] - want[0]) < 1e-6 && abs(point.screen[1] - want[1]) < 1e-6, "\(point) against \(want)")
            if matrix == "1 0 0 0 1 0" {
                // (A calibration that scales up may put an edge touch past the screen, as libinput does.)
                #expect((0...1080).contains(point.screen[0]) && (0...1920).contains(point.screen[1]), "\(point) outside the screen")
            }
        }
    }
}
