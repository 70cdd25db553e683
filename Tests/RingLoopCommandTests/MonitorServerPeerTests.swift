import Foundation
import Glibc
import RingLoopEvdev
import RingLoopHID
import RingLoopTestSupport
import Testing

/// `ringloop monitor --server` against a server that sends what it likes: a server of the
/// user's own is trusted to be there, not to be right.
@Suite("ringloop monitor --server against what a server sends")
struct MonitorServerPeerTests {
    static func uniqueName(_ base: String) -> String { "test.monitor.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max))" }

    static func device(_ id: UInt32, _ name: String) -> HIDDeviceInfo {
        .describing(
            id: HIDDeviceID(rawValue: id), name: name, codes: [Evdev.EV_KEY: [Evdev.KEY_A, Evdev.KEY_B]], axes: [:],
            properties: [])
    }

    static func event(_ device: UInt32, _ payload: HIDEvent.Payload) -> HIDEvent {
        HIDEvent(device: HIDDeviceID(rawValue: device), timestamp: .now, payload: payload)
    }

    @Test("loss counts that add up past Int.max are summed without a trap")
    func hugeLossCounts() throws {
        let name = Self.uniqueName("dropped")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        let monitor = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.send([Self.event(0, .eventsDropped(count: .max))])
        try server.send([Self.event(0, .eventsDropped(count: 1))])
        // A device's addition after them says both were taken.
        try server.describe(Self.device(1, "Marker Keyboard"))
        try server.send([Self.event(1, .deviceAdded)])
        #expect(
            waitUntil(timeout: .seconds(30)) { jsonLines(monitor.output, kind: "deviceAdded").count == 1 },
            "\(monitor.output)\n\(monitor.error)")
        #expect(jsonLines(monitor.output, kind: "eventsDropped").map { $0["count"] as? Int } == [.max, 1])
        monitor.signal(SIGTERM)
        #expect(monitor.finish(timeout: .seconds(20)) == 0, "\(monitor.error)")
    }

    @Test("a device name with control characters is shown escaped: it cannot colour the terminal or forge a line")
    func controlCharactersInNames() throws {
        let name = Self.uniqueName("escape")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        let monitor = try Spawned(ringloop, ["monitor", "--server", name], directory: repository)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.describe(Self.device(1, "Evil\u{1B}[31m\nremoved"))
        try server.send([Self.event(1, .deviceAdded)])
        #expect(waitUntil(timeout: .seconds(30)) { monitor.output.contains("added") }, "\(monitor.output)\n\(monitor.error)")
        monitor.signal(SIGTERM)
        #expect(monitor.finish(timeout: .seconds(20)) == 0, "\(monitor.error)")
        #expect(monitor.output.contains("Evil\\u{1B}[31m\\u{A}removed"), "\(monitor.output)")
        #expect(!monitor.output.contains("\u{1B}"))
    }

    @Test("--json escapes a name's bidirectional override and other layout controls as the text view does: valid JSON, no raw U+202E")
    func layoutControlsInJSON() throws {
        let name = Self.uniqueName("bidi")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        let monitor = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.describe(Self.device(1, "Evil\u{202E}txt.exe\u{7F}\u{2028}"))
        try server.send([Self.event(1, .deviceAdded)])
        #expect(waitUntil(timeout: .seconds(30)) { jsonLines(monitor.output, kind: "deviceAdded").count == 1 }, "\(monitor.output)")
        monitor.signal(SIGTERM)
        #expect(monitor.finish(timeout: .seconds(20)) == 0, "\(monitor.error)")
        #expect(monitor.output.contains("Evil\\u202etxt.exe\\u007f\\u2028"), "\(monitor.output)")
        #expect(!monitor.output.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{7F}" || $0 == "\u{2028}" })
        #expect(jsonLines(monitor.output, kind: "deviceAdded").first?["device"] as? String == "Evil\u{202E}txt.exe\u{7F}\u{2028} [buttons]")
    }

    @Test("a device of a server that came back is named as that server describes it, not as the device its id had before")
    func namesAfterTheServerComesBack() throws {
        let name = Self.uniqueName("names")
        var server = try FakeEventServer(name: name)
        defer { server.stop() }
        let monitor = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.describe(Self.device(1, "Alpha Keyboard"))
        try server.send([Self.event(1, .deviceAdded)])
        #expect(waitUntil(timeout: .seconds(30)) { jsonLines(monitor.output, kind: "deviceAdded").count == 1 }, "\(monitor.output)")
        // The welcome gave the focus: the client says so, in order, before the device came.
        #expect(jsonLines(monitor.output).first?["kind"] as? String == "focusChanged", "\(monitor.output)")
        #expect(jsonLines(monitor.output, kind: "focusChanged").first?["focused"] as? Bool == true, "\(monitor.output)")
        // The server goes (the monitor removes its device) and another takes the name; its
        // devices are numbered from 1 again.
        server.stop()
        #expect(waitUntil(timeout: .seconds(30)) { jsonLines(monitor.output, kind: "deviceRemoved").count == 1 }, "\(monitor.output)")
        server = try FakeEventServer(name: name)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.describe(Self.device(1, "Beta Keypad"))
        try server.send([Self.event(1, .deviceAdded)])
        #expect(waitUntil(timeout: .seconds(30)) { jsonLines(monitor.output, kind: "deviceAdded").count == 2 }, "\(monitor.output)")
        // (Focus changes are the client's own, not a device's.)
        let names = jsonLines(monitor.output).filter { $0["kind"] as? String != "focusChanged" }.compactMap {
            $0["device"] as? String
        }
        #expect(names.first?.hasPrefix("Alpha Keyboard") == true && names.last?.hasPrefix("Beta Keypad") == true, "\(names)")
        monitor.signal(SIGTERM)
        #expect(monitor.finish(timeout: .seconds(20)) == 0, "\(monitor.error)")
    }

    @Test(
        "a long fast stream keeps the monitor's memory flat: the latency summary is a fixed-size histogram, not every sample",
        .disabled(if: runningUnderSanitizer))
    func memoryFlatOnALongStream() throws {
        let name = Self.uniqueName("stream")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        // --filter: no key is printed (the test reads the markers only); every event still
        // counts in the summary.
        let monitor = try Spawned(ringloop, ["monitor", "--server", name, "--json", "--filter", "switchChanged"], directory: repository)
        #expect(try server.waitForClient(), "\(monitor.error)")
        try server.describe(Self.device(1, "Fast Keyboard"))
        try server.send([Self.event(1, .deviceAdded)])
        let keys = (0..<256).flatMap { _ in
            [KeyEvent.State.down, .up].map { state in
                Self.event(1, .key(KeyEvent(usage: HIDUsage.forLinuxKey(30), code: 30, state: state)))
            }
        }
        /// Sends `batches` of 512 keys, then a marker device; waits until the monitor shows it.
        func stream(_ batches: Int, marker: UInt32) throws -> Int? {
            for _ in 0..<batches { try server.send(keys) }
            try server.describe(Self.device(marker, "Marker \(marker)"))
            try server.send([Self.event(marker, .deviceAdded)])
            guard waitUntil(timeout: .seconds(120), { jsonLines(monitor.output, kind: "deviceAdded").count == Int(marker) }) else {
                return nil
            }
            return EchoExampleTests.residentBytes(of: monitor.pid)
        }
        // 256 Ki events to warm up, then 2 Mi more (32 MB of samples if every one were kept).
        let warm = try #require(try stream(512, marker: 2), "\(monitor.output)\n\(monitor.error)")
        let after = try #require(try stream(4096, marker: 3), "\(monitor.output)\n\(monitor.error)")
        #expect(after - warm < 4 << 20, "the monitor grew from \(warm) to \(after) bytes over 2 Mi events")
        print("monitor --server resident memory: \(warm) bytes after 256 Ki events, \(after) after 2.25 Mi")
        monitor.signal(SIGTERM)
        #expect(monitor.finish(timeout: .seconds(20)) == 0, "\(monitor.error)")
        #expect(monitor.error.contains("(2359296 events)"), "\(monitor.error)")
    }
}
