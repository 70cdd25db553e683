import Foundation
import RingLoopTestSupport
import Testing

/// A recording made for these tests: the description of the bundled recording `base` and
/// `frames` (seconds, then the frame's events as type, code, value), each frame followed by
/// its report.
func testRecording(_ base: String, _ frames: [(Double, [(Int, Int, Int)])]) throws -> String {
    let text = try String(contentsOfFile: repository + "/devices/\(base).evemu", encoding: .utf8)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("E:") }.map(String.init)
    while lines.last?.isEmpty == true { lines.removeLast() }
    for (time, events) in frames {
        let stamp = String(format: "%.6f", time)
        for (type, code, value) in events {
            lines.append("E: \(stamp) \(String(format: "%04x", type)) \(String(format: "%04x", code)) \(String(format: "%04d", value))")
        }
        lines.append("E: \(stamp) 0000 0000 0000")
    }
    let path = "/tmp/ringloop-serve-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).evemu"
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// A keyboard recording made for these tests: `events` (seconds, code, value) on the
/// bundled keyboard, each its own frame.
func keyboardRecording(_ events: [(Double, Int, Int)]) throws -> String {
    try testRecording("keyboard", events.map { ($0.0, [(1, $0.1, $0.2)]) })
}

/// Phases of the contacts with tracking id `id` in a monitor's JSON output.
func touchPhases(_ output: String, id: Int) -> [String] {
    jsonLines(output, kind: "digitizer").flatMap { object in
        (object["contacts"] as? [[String: Any]] ?? []).filter { $0["id"] as? Int == id }.compactMap { $0["phase"] as? String }
    }
}

/// JSON lines of a command's output with `kind`.
func jsonLines(_ output: String, kind: String? = nil) -> [[String: Any]] {
    output.split(separator: "\n").compactMap { line in
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
        return kind == nil || object["kind"] as? String == kind ? object : nil
    }
}

/// Key events in a monitor's JSON output, as "KEY_A down".
func keyLines(_ output: String) -> [String] {
    jsonLines(output, kind: "key").map { "\($0["code"] as? String ?? "?") \($0["state"] as? String ?? "?")" }
}

@Suite("ringloop serve and monitor --server", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ServeCommandTests {
    static func uniqueName(_ base: String) -> String { "test.serve.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max))" }

    @Test(
        "two monitors as clients: keys and touches go to the focused one; a focus key (consumed by the server) moves the focus while a key is held and a touch is down, and the first gets the key-up and the touch cancelled"
    )
    func twoClientsAndAFocusKey() throws {
        let name = Self.uniqueName("focus")
        // KEY_A = 30, KEY_B = 48, KEY_F1 = 59.
        let recording = try keyboardRecording([(0.2, 30, 1), (0.6, 59, 1), (0.65, 59, 0), (1.0, 30, 0), (1.3, 48, 1), (1.35, 48, 0)])
        defer { unlink(recording) }
        // EV_ABS = 3: ABS_MT_SLOT 0x2f, ABS_MT_TRACKING_ID 0x39, ABS_MT_POSITION_X/Y 0x35/0x36, ABS_X/Y 0/1;
        // EV_KEY = 1: BTN_TOUCH 0x14a. A touch down across the focus key, one after it.
        func down(_ id: Int, _ x: Int, _ y: Int) -> [(Int, Int, Int)] {
            [(3, 0x2f, 0), (3, 0x39, id), (3, 0x35, x), (3, 0x36, y), (1, 0x14a, 1), (3, 0, x), (3, 1, y)]
        }
        let lift: [(Int, Int, Int)] = [(3, 0x2f, 0), (3, 0x39, -1), (1, 0x14a, 0)]
        let touches = try testRecording(
            "touchscreen-multitouch",
            [(0.2, down(100, 1600, 900)), (0.4, [(3, 0x35, 1620), (3, 0, 1620)]), (1.1, lift), (1.4, down(101, 800, 400)), (1.45, lift)])
        defer { unlink(touches) }
        let server = try Spawned(
            ringloop,
            ["serve", name, recording, touches, "--focus", "first", "--focus-key", "KEY_F1", "--wait-clients", "2", "--json"],
            directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let first = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(server.waitFor("\"attached\""))
        let second = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "attached").count == 2 })
        #expect(
            waitUntil(timeout: .seconds(30)) { keyLines(second.output) == ["KEY_B down", "KEY_B up"] }, "\(second.output)\n\(server.output)"
        )
        #expect(waitUntil(timeout: .seconds(30)) { touchPhases(second.output, id: 101) == ["began", "ended"] }, "\(second.output)")
        #expect(keyLines(first.output) == ["KEY_A down", "KEY_A up"], "\(first.output)")
        #expect(touchPhases(first.output, id: 100) == ["began", "moved", "cancelled"], "\(first.output)")
        #expect(touchPhases(first.output, id: 101).isEmpty && touchPhases(second.output, id: 100).isEmpty)
        #expect(jsonLines(server.output, kind: "focus").count >= 2, "\(server.output)")
        for client in [first, second] {
            #expect(!client.output.contains("KEY_F1"), "the server consumed the focus key")
            #expect(jsonLines(client.output, kind: "deviceAdded").count == 2)
            client.signal(SIGTERM)
            #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        }
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
        #expect(jsonLines(server.output, kind: "detached").count == 2)
    }

    @Test("the server killed mid-press: the client gets the key-up and the device's removal, and attaches again when the server comes back")
    func serverKilledMidPress() throws {
        let name = Self.uniqueName("killed")
        let recording = try keyboardRecording([(0.1, 30, 1), (600, 30, 0)])
        defer { unlink(recording) }
        var server = try Spawned(ringloop, ["serve", name, recording, "--json", "--wait-clients", "1"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down"] }, "\(client.output)\n\(client.error)")
        server.signal(SIGKILL)
        server.finish(timeout: .seconds(20))
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down", "KEY_A up"] }, "\(client.output)")
        #expect(waitUntil(timeout: .seconds(30)) { jsonLines(client.output, kind: "deviceRemoved").count == 1 })
        // A server of that name comes back (its replay presses the key again).
        server = try Spawned(ringloop, ["serve", name, recording, "--json", "--wait-clients", "1"], directory: repository)
        #expect(
            waitUntil(timeout: .seconds(30)) { jsonLines(client.output, kind: "deviceAdded").count == 2 },
            "\(client.output)\n\(client.error)")
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down", "KEY_A up", "KEY_A down"] })
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }

    @Test("a client killed mid-press is detached and frees what it held; the next client does not get the key-up")
    func clientKilledMidPress() throws {
        let name = Self.uniqueName("client")
        let recording = try keyboardRecording([(0.5, 30, 1), (8.0, 30, 0), (8.5, 48, 1), (8.6, 48, 0)])
        defer { unlink(recording) }
        let server = try Spawned(ringloop, ["serve", name, recording, "--json", "--wait-clients", "1"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let doomed = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(doomed.output) == ["KEY_A down"] }, "\(doomed.output)\n\(server.output)")
        doomed.signal(SIGKILL)
        doomed.finish(timeout: .seconds(20))
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "detached").count == 1 }, "\(server.output)")
        let next = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(next.output) == ["KEY_B down", "KEY_B up"] }, "\(next.output)")
        next.signal(SIGTERM)
        #expect(next.finish(timeout: .seconds(20)) == 0)
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }

    @Test("serve and monitor --server refuse what cannot work, saying what would")
    func refusals() throws {
        let bad = try runCommand(["serve", "x", "--focus", "sideways"])
        #expect(bad.status == 64 && bad.error.contains("newest, first, none"), "\(bad.error)")
        let key = try runCommand(["serve", "x", "--focus-key", "KEY_NOPE"])
        #expect(key.status == 64 && key.error.contains("not a key name"), "\(key.error)")
        let mixed = try runCommand(["monitor", "--server", "x", "devices/keyboard.evemu"])
        #expect(mixed.status == 64 && mixed.error.contains("give no devices"), "\(mixed.error)")
        let null = try runCommand(["serve", "x", "/dev/null"])
        #expect(null.status == 65, "\(null.error)")
        #expect(
            null.error == "ringloop serve: /dev/null: is a character device, not an evdev device; expected \(Self.accepted)\n",
            "\(null.error)")
        let two = try runCommand(["serve", "x", "devices", "devices/keyboard.evemu"])
        #expect(two.status == 64 && two.error.contains("a folder is served alone"), "\(two.error)")
        #expect(null.output.isEmpty && two.output.isEmpty)
    }

    static let accepted = "an evdev device node, a folder of them, or a recording"
}
