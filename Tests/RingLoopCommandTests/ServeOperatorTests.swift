import Foundation
import Glibc
import RingLoopTestSupport
import Testing

/// What a process has cost so far, read from /proc.
enum ProcessCost {
    /// The CPU time (user and system, every thread) the process `pid` has used, in seconds:
    /// fields 14 and 15 of /proc/PID/stat, in clock ticks.
    static func cpuSeconds(of pid: pid_t) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command's name (which may hold spaces) come the fields from 3 on.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// `ringloop serve` as an operator runs it: what it costs while it waits.
@Suite("ringloop serve under an operator", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ServeOperatorTests {
    static func uniqueName(_ base: String) -> String { "test.operator.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max))" }

    @Test("a replay with a long gap between frames sleeps through it: under 2 % of a core while nothing is due")
    func replayGapCostsNoCPU() throws {
        let name = Self.uniqueName("gap")
        // KEY_A = 30 down at 0.3 s and up 6 s later: the server has nothing to do between.
        let recording = try keyboardRecording([(0.3, 30, 1), (6.3, 30, 0)])
        defer { unlink(recording) }
        let server = try Spawned(ringloop, ["serve", name, recording, "--json", "--wait-clients", "1"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json"], directory: repository)
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down"] }, "\(client.output)\n\(server.error)")
        let start = (cpu: try #require(ProcessCost.cpuSeconds(of: server.pid)), time: ContinuousClock.now)
        #expect(waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down", "KEY_A up"] }, "\(client.output)")
        let end = (cpu: try #require(ProcessCost.cpuSeconds(of: server.pid)), time: ContinuousClock.now)
        let elapsed = (end.time - start.time) / .seconds(1)
        let share = (end.cpu - start.cpu) / elapsed
        // The window runs from the client's sight of the key-down to its sight of the
        // key-up: a sanitized client that saw the first late shortens it, and a sanitizer's
        // own runtime threads cost the idle server a little CPU (5 % of a core allowed there).
        #expect(elapsed > (runningUnderSanitizer ? 2 : 4), "the gap was \(elapsed) s")
        #expect(
            share < (runningUnderSanitizer ? 0.05 : 0.02),
            "the server used \(end.cpu - start.cpu) s of CPU in \(elapsed) s (\(Int(share * 100)) % of a core)")
        print("serve across a \(elapsed) s gap: \(end.cpu - start.cpu) s of CPU")
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}

extension ServeOperatorTests {
    @Test("a server killed with SIGKILL is replaced at once: the new one waits for the dead one's name; a live holder still refuses")
    func restartAfterSIGKILL() throws {
        let name = Self.uniqueName("restart")
        let recording = try keyboardRecording([(0.1, 30, 1), (0.2, 30, 0)])
        defer { unlink(recording) }
        var server = try Spawned(ringloop, ["serve", name, recording, "--json"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        // A second server while the first lives: refused at once, with today's message.
        let second = try runCommand(["serve", name, recording])
        #expect(second.status == 69 && second.error.contains("a message port named '\(name)' exists already"), "\(second.error)")
        // Killed and started again at once, five times (the dead one is not even reaped
        // when the next starts: a zombie holds nothing, its ring's teardown holds the name).
        for round in 1...5 {
            server.signal(SIGKILL)
            let next = try Spawned(ringloop, ["serve", name, recording, "--json"], directory: repository)
            #expect(server.finish(timeout: .seconds(20)) == 128 + SIGKILL)
            server = next
            guard next.waitFor("\"serving\"") else {
                Issue.record("round \(round): the new server did not start: \(next.error)")
                break
            }
        }
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}

extension ServeOperatorTests {
    @Test("--socket-dir: a squatter on the abstract name does not keep the server from starting; its socket file is 0600 and goes with it")
    func socketFolder() throws {
        let name = Self.uniqueName("folder")
        let folder = "/tmp/ringloop-socket-dir-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o700) == 0)
        defer { rmdir(folder) }
        // Another process (here: this one) binds the abstract name first.
        let squatter = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
        defer { close(squatter) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let abstractName = Array("rlport:\(name)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in abstractName.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + abstractName.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(squatter, $0, length) } }
        #expect(bound == 0 && listen(squatter, 1) == 0)
        let squatted = try runCommand(["serve", name, "devices/keyboard.evemu"])
        #expect(squatted.status == 69 && squatted.error.contains("exists already"), "\(squatted.error)")

        let recording = try keyboardRecording([(0.3, 30, 1), (0.4, 30, 0)])
        defer { unlink(recording) }
        let server = try Spawned(
            ringloop, ["serve", name, recording, "--json", "--wait-clients", "1", "--socket-dir", folder], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        var status = stat()
        #expect(stat(folder + "/" + name + ".port", &status) == 0 && status.st_mode & 0o777 == 0o600)
        let client = try Spawned(ringloop, ["monitor", "--server", name, "--json", "--socket-dir", folder], directory: repository)
        #expect(
            waitUntil(timeout: .seconds(30)) { keyLines(client.output) == ["KEY_A down", "KEY_A up"] }, "\(client.output)\n\(client.error)")
        client.signal(SIGTERM)
        #expect(client.finish(timeout: .seconds(20)) == 0, "\(client.error)")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
        #expect(access(folder + "/" + name + ".port", F_OK) != 0, "the server removed its socket file")
        let notFolder = try runCommand(["serve", name, "--socket-dir", recording])
        #expect(notFolder.status == 64 && notFolder.error.contains("is not a folder"), "\(notFolder.error)")
    }
}

extension ServeOperatorTests {
    @Test("kiosk-server --socket-dir: the server and its two apps meet in the folder, and the apps get their keys")
    func kioskServerInAFolder() throws {
        let folder = "/tmp/ringloop-kiosk-dir-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o700) == 0)
        defer { rmdir(folder) }
        let run = try Spawned(
            ExampleTests.example("kiosk-server"), ["--recordings", repository + "/devices", "--socket-dir", folder], directory: "/tmp")
        #expect(run.finish(timeout: .seconds(90)) == 0, "\(run.output)\n\(run.error)")
        #expect(run.output.contains("Left: typed \"hiok\"") && run.output.contains("Right: typed \"yo\""), "\(run.output)")
        var entries: [String] = []
        if let directory = opendir(folder) {
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { entries.append(name) }
            }
            closedir(directory)
        }
        #expect(entries.isEmpty, "every port removed its socket file: \(entries)")
    }
}
