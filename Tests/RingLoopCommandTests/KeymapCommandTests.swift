import Foundation
import Glibc
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopTestSupport
import Testing

/// `ringloop keymap`, `type` and `monitor --layout`, against libxkbcommon read by its own
/// program (XKBReference).
@Suite("Keymap commands")
struct KeymapCommandTests {
    @Test("type --layout fr --output writes a recording that libxkbcommon with fr reads as the same text")
    func typeRoundTrip() throws {
        let path = "/tmp/ringloop-typed-\(getpid()).evemu"
        defer { unlink(path) }
        let text = "àéç@€"
        let result = try runCommand(["type", "--layout", "fr", "--output", path, text])
        #expect(result.status == 0, "\(result.error)")
        let recording = try Recording.load(contentsOf: path)
        let keys = recording.events.filter { $0.type == Evdev.EV_KEY }.map { (code: $0.code, value: $0.value) }
        let lines = try XKBReference.interpret(keys, configuration: KeyboardConfiguration(layout: "fr"), locale: "en_US.UTF-8")
        #expect(XKBReference.text(of: lines) == text)
        // evemu's own reader takes the file too.
        let described = try Spawned("/usr/bin/evemu-describe", [path])
        _ = described.finish()
        #expect(recording.description?.codes[Evdev.EV_KEY]?.contains(Evdev.KEY_RIGHTALT) == true)
    }

    @Test("type refuses an untypable character with its name and position, and writes nothing")
    func untypable() throws {
        let path = "/tmp/ringloop-untypable-\(getpid()).evemu"
        defer { unlink(path) }
        let result = try runCommand(["type", "--layout", "us", "--output", path, "ab中"])
        #expect(result.status == 65)
        #expect(result.error.contains("U+4E2D CJK UNIFIED IDEOGRAPH-4E2D") && result.error.contains("position 3"), "\(result.error)")
        #expect(access(path, F_OK) != 0)
    }

    @Test("keymap prints the RMLVO and where each came from; an unknown layout or option names the rules' list")
    func keymap() throws {
        let result = try runCommand(
            ["keymap", "--layout", "us,de", "--options", "grp:alt_shift_toggle"], environment: ["XKB_DEFAULT_MODEL": "pc104"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("layout   us,de  (given explicitly)"))
        #expect(result.output.contains("group 2  German"))
        // /etc/default/keyboard may name a model here; where it does not, the environment's.
        #expect(
            result.output.contains("model    pc104  (the environment's XKB_DEFAULT_MODEL)")
                || result.output.contains("/etc/default/keyboard"))
        for arguments in [["--layout", "zz"], ["--layout", "us", "--variant", "nope"], ["--layout", "us", "--options", "grp:nonsense"]] {
            let failed = try runCommand(["keymap"] + arguments)
            #expect(failed.status == 64 && failed.error.contains("/usr/share/X11/xkb/rules/evdev.lst"), "\(arguments): \(failed.error)")
        }
    }

    @Test(
        "without keymap data keymap fails naming xkb-data; monitor reads keys without text and says so",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func noKeymapData() throws {
        let missing = ["XKB_CONFIG_ROOT": "/nonexistent"]
        let keymap = try runCommand(["keymap"], environment: missing)
        #expect(keymap.status == 69 && keymap.error.contains("xkb-data") && !keymap.error.contains("xkbcommon: ERROR"), "\(keymap.error)")
        let monitor = try runCommand(["monitor", "--json", "--filter", "key", "devices/keyboard.evemu"], environment: missing)
        #expect(monitor.status == 0, "\(monitor.error)")
        #expect(monitor.error.contains("keys without keysym and text"), "\(monitor.error)")
        #expect(!jsonLines(monitor.output, kind: "key").isEmpty && !monitor.output.contains("\"keysym\""))
        // An explicit layout that cannot be had is an error.
        #expect(try runCommand(["monitor", "--layout", "de", "devices/keyboard.evemu"], environment: missing).status == 69)
    }

    @Test(
        "monitor --layout de on the keyboard recording prints the German text libxkbcommon gives",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func monitorGerman() throws {
        let result = try runCommand(["monitor", "--json", "--filter", "key", "--layout", "de", "devices/keyboard.evemu"])
        #expect(result.status == 0, "\(result.error)")
        let recording = try Recording.load(contentsOf: repository + "/devices/keyboard.evemu")
        let keys = recording.events.filter { $0.type == Evdev.EV_KEY && $0.code < 0x100 }.map { (code: $0.code, value: $0.value) }
        let expected = XKBReference.text(
            of: try XKBReference.interpret(keys, configuration: KeyboardConfiguration(layout: "de"), locale: "en_US.UTF-8"))
        // The texts of the printed key events, in order (JSON strings with only ASCII and \u escapes here).
        var printed = ""
        for line in result.output.split(separator: "\n") {
            guard let range = line.range(of: "\"text\":\"") else { continue }
            let rest = line[range.upperBound...]
            printed += rest[..<rest.firstIndex(of: "\"")!].replacingOccurrences(of: "\\r", with: "\r")
                .replacingOccurrences(of: "\\u0003", with: "\u{3}")
        }
        // "Hello aaaaaaaaa", Ctrl+C (U+0003 as xkbcommon gives it), Return.
        #expect(expected.hasPrefix("Hello a") && expected.hasSuffix("\u{3}\r"), "\(expected.debugDescription)")
        #expect(printed == expected, "\(printed.debugDescription) vs \(expected.debugDescription)")
    }
}

@Suite("Typing into a virtual keyboard", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct LiveTypingTests {
    @Test("type --backend fuse types into a FUSE keyboard once it is read; libxkbcommon with de reads the text")
    func typeIntoFUSEKeyboard() throws {
        let text = "Grüße @ €"
        let child = try Spawned(
            ringloop, ["type", "--layout", "de", "--backend", "fuse", "--wait-for-readers", "1", "--wait", "30", text],
            directory: repository)
        #expect(child.waitFor("/event", timeout: .seconds(30)), "\(child.error)")
        guard let node = child.output.split(separator: "\n").first.map(String.init) else { return }
        let fd = open(node, O_RDONLY | O_NONBLOCK)
        #expect(fd >= 0, "\(node): \(errno)")
        guard fd >= 0 else { return }
        defer { close(fd) }
        // Read until the device goes away (the command removes it after the last key).
        var keys: [(code: UInt16, value: Int32)] = []
        var buffer = [UInt8](repeating: 0, count: 24 * 64)
        let deadline = ContinuousClock.now + .seconds(60)
        reading: while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 200)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                break reading  // ENODEV: removed
            }
            if count == 0 { break }
            for offset in stride(from: 0, to: count - 23, by: 24) {
                // struct input_event on 64-bit Linux: timeval (16 bytes), type, code, value.
                let type = UInt16(buffer[offset + 16]) | UInt16(buffer[offset + 17]) << 8
                let code = UInt16(buffer[offset + 18]) | UInt16(buffer[offset + 19]) << 8
                let value = (0..<4).reduce(UInt32(0)) { $0 | UInt32(buffer[offset + 20 + $1]) << (8 * $1) }
                if type == Evdev.EV_KEY { keys.append((code, Int32(bitPattern: value))) }
            }
        }
        #expect(child.finish(timeout: .seconds(30)) == 0, "\(child.error)")
        let lines = try XKBReference.interpret(keys, configuration: KeyboardConfiguration(layout: "de"), locale: "en_US.UTF-8")
        #expect(XKBReference.text(of: lines) == text)
    }
}

@Suite("The event server's keymap", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ServeKeymapCommandTests {
    @Test("serve --layout de: a monitor --server client prints the German text the server's keymap gives")
    func serverHoldsTheKeymap() throws {
        let name = "test.serve.keymap.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        // KEY_Z = 44, KEY_Y = 21, KEY_LEFTSHIFT = 42: z y Z in de read "yzY".
        let recording = try keyboardRecording([
            (0.1, 44, 1), (0.15, 44, 0), (0.2, 21, 1), (0.25, 21, 0), (0.3, 42, 1), (0.35, 44, 1), (0.4, 44, 0), (0.45, 42, 0),
        ])
        defer { unlink(recording) }
        let server = try Spawned(
            ringloop, ["serve", name, recording, "--layout", "de", "--wait-clients", "1", "--json"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json", "--filter", "key"], directory: repository)
        func texts() -> String { jsonLines(client.output, kind: "key").compactMap { $0["text"] as? String }.joined() }
        #expect(waitUntil(timeout: .seconds(30)) { texts() == "yzY" }, "\(client.output)\n\(client.error)\n\(server.error)")
        #expect(jsonLines(client.output, kind: "key").first?["keysym"] as? String == "y")
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}
