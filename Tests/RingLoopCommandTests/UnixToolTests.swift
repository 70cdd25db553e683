import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// The command as a Unix tool: what it writes into, what it mounts on, a closed pipe, a
/// FIFO that never opens, thousands of devices. Each test is a reproduction from the
/// issue "A command that never destroys, never lies".
@Suite("The ringloop command as a Unix tool", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct UnixToolTests {
    static func scratch(_ name: String) -> String {
        let path = "/tmp/ringloop-unix-\(getpid())-\(name)"
        mkdir(path, 0o755)
        return path
    }

    static func fileType(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
    }

    @Test("describe -o /dev/full reports ENOSPC with status 74 and leaves /dev/full a character device")
    func describeToFull() throws {
        let result = try runCommand(["describe", "devices/keyboard.evemu", "-o", "/dev/full"], timeout: 20)
        #expect(result.status == 74)
        #expect(result.error == "ringloop describe: /dev/full: cannot write: No space left on device\n", "\(result.error)")
        #expect(Self.fileType("/dev/full") == S_IFCHR)
    }

    @Test("describe -o a FIFO writes into it; a link is followed, said, and stays a link")
    func describeIntoFIFOAndLink() throws {
        let folder = Self.scratch("describe")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/pipe"
        try #require(mkfifo(fifo, 0o600) == 0)
        let reader = try Spawned("/bin/cat", [fifo])
        let result = try runCommand(["describe", "devices/keyboard.evemu", "-o", fifo], timeout: 20)
        #expect(result.status == 0, "\(result.error)")
        #expect(reader.finish(timeout: .seconds(20)) == 0)
        #expect(reader.output.contains("N: AT Translated Set 2 keyboard"))
        #expect(Self.fileType(fifo) == S_IFIFO, "the FIFO was replaced")

        let target = folder + "/target.evemu"
        let link = folder + "/link.evemu"
        try "old\n".write(toFile: target, atomically: false, encoding: .utf8)
        symlink(target, link)
        let linked = try runCommand(["describe", "devices/keyboard.evemu", "-o", link], timeout: 20)
        #expect(linked.status == 0, "\(linked.error)")
        #expect(linked.error.contains("writing to \(target) (\(link) is a symbolic link to it)"), "\(linked.error)")
        #expect(Self.fileType(link) == S_IFLNK)
        #expect(try String(contentsOfFile: target, encoding: .utf8).contains("N: AT Translated Set 2 keyboard"))
    }

    /// `ringloop record` of `recording` replayed into a FUSE node, to `output`.
    static func recordReplayed(_ recording: String, to output: String) throws -> CommandResult {
        let mount = "/tmp/ringloop-unix-\(getpid())-recorded"
        let replay = try Spawned(
            ringloop, ["replay", recording, "--backend", "fuse", "--mount", mount, "--wait-for-readers", "1"],
            directory: repository)
        defer {
            replay.signal(SIGINT)
            replay.finish()
        }
        #expect(replay.waitFor("\n"))
        return try runCommand(["record", mount + "/event0", "-o", output, "--duration", "30"], timeout: 60)
    }

    @Test("record -o on a full disk: status 74 with the reason, and no file cut mid-line or left empty")
    func recordToFullDisk() throws {
        let folder = Self.scratch("full")
        defer { rmdir(folder) }
        try #require(mount("none", folder, "tmpfs", 0, "size=8k") == 0, "mount: errno \(errno)")
        defer { umount2(folder, Int32(MNT_DETACH)) }
        // More than the disk holds: it once failed but left a file cut mid-line.
        let large = try Self.recordReplayed("devices/touchpad.evemu", to: folder + "/large.evemu")
        #expect(large.status == 74, "\(large.error)")
        #expect(large.error.contains("ringloop record: \(folder)/large.evemu: cannot write: No space left on device"), "\(large.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty, "a partial recording was left")
        // A full disk and a small recording: it once exited 0 with "0 events written".
        let filler = open(folder + "/filler", O_CREAT | O_WRONLY, 0o600)
        var block = [UInt8](repeating: 0, count: 1024)
        while write(filler, &block, block.count) > 0 {}
        close(filler)
        defer { unlink(folder + "/filler") }
        let small = try Self.recordReplayed("devices/power-button.evemu", to: folder + "/small.evemu")
        #expect(small.status == 74, "\(small.error)")
        #expect(!small.error.contains("events written"), "\(small.error)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["filler"])
    }

    @Test("replay --mount refuses a mount point and leaves it mounted; a folder the user made stays after the replay")
    func mountPoints() throws {
        let tmpfs = Self.scratch("tmpfs")
        defer { rmdir(tmpfs) }
        try #require(mount("none", tmpfs, "tmpfs", 0, "size=1m") == 0)
        defer { umount2(tmpfs, Int32(MNT_DETACH)) }
        let refused = try runCommand(["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", tmpfs], timeout: 20)
        #expect(refused.status == 73, "\(refused.error)")
        #expect(refused.error.contains("\(tmpfs): is a mount point (tmpfs (none))"), "\(refused.error)")
        #expect(isMounted(tmpfs), "the tmpfs was detached")

        // Another replay's live folder: refused, and the first keeps serving.
        let live = "/tmp/ringloop-unix-\(getpid())-live"
        let first = try Spawned(
            ringloop, ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", live, "--keep"], directory: repository)
        defer {
            first.signal(SIGINT)
            first.finish()
        }
        #expect(first.waitFor("\n"))
        let second = try runCommand(["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", live], timeout: 20)
        #expect(second.status == 73 && second.error.contains("a folder of virtual devices of another process"), "\(second.error)")
        #expect(access(live + "/event0", F_OK) == 0, "the first replay's node is gone")

        // A folder that existed before the replay stays after it.
        let mine = Self.scratch("mine")
        defer { rmdir(mine) }
        let kept = try runCommand(["replay", "devices/power-button.evemu", "--backend", "fuse", "--mount", mine, "--asap", "--wait", "0"])
        #expect(kept.status == 0, "\(kept.error)")
        #expect(Self.fileType(mine) == S_IFDIR, "the user's folder was removed")
        #expect(!isMounted(mine))
    }

    @Test("monitor --json | head -1 and monitor --raw | head -1 end at once, with status 141, in a 25-minute replay gap")
    func closedPipe() throws {
        for raw in [[], ["--raw"]] {
            // The lid switch's two frames are 1.5 s apart; at 0.001× the gap is 25 minutes.
            let command =
                "set -o pipefail; '\(ringloop)' monitor \(raw.joined()) --json devices/lid-switch.evemu --speed 0.001 | head -1"
            let shell = try Spawned("/bin/bash", ["-c", command], directory: repository, environment: exitStatusEnvironment)
            // Timed from the line head takes (it closes the pipe then), not from the start:
            // a sanitized ringloop's start and its FUSE mount are no part of ending.
            #expect(shell.waitFor("\n", timeout: TestWait.bound), "\(raw): no line: \(shell.error)")
            let headClosed = MonotonicInstant.now
            #expect(shell.finish(timeout: .seconds(60)) == 141, "\(raw): \(shell.error)")
            let elapsed = MonotonicInstant.now - headClosed
            #expect(elapsed < .seconds(runningUnderSanitizer ? 30 : 10), "\(raw): it ended \(elapsed) after head's line")
            #expect(shell.output.split(separator: "\n").count == 1)
            // (A busy machine may delay an event: the chain's own warning, in the command's form, may be there.)
            let reported = shell.error.split(separator: "\n").filter {
                $0.hasPrefix("ringloop monitor:") && !$0.contains("after the kernel stamped it")
            }
            #expect(reported.isEmpty, "a closed pipe is not an error to report: \(shell.error)")
            #expect(!shell.error.contains("Summary"), "no summary after a closed pipe: \(shell.error)")
        }
        #expect(!isMounted("/tmp/ringloop-monitor-"), "a mount is left")
    }

    @Test("replay of a FIFO with no writer ends on SIGINT and SIGTERM")
    func fifoInterrupted() throws {
        let folder = Self.scratch("fifo")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for signal in [SIGINT, SIGTERM] {
            let fifo = folder + "/recording-\(signal)"
            try #require(mkfifo(fifo, 0o600) == 0)
            let child = try startRingloop(["replay", fifo, "--backend", "fuse"])
            // In open, waiting for a writer: the kernel names where it waits.
            let wchan = "/proc/\(child.pid)/wchan"
            #expect(waitUntil(timeout: .seconds(10)) { (try? String(contentsOfFile: wchan, encoding: .utf8)) == "wait_for_partner" })
            child.signal(signal)
            #expect(waitUntil(timeout: .seconds(5)) { child.exited }, "still waiting in open after signal \(signal)")
            #expect(child.killedBy(signal), "status \(String(describing: child.status))")
        }
        // With a writer, a FIFO is a recording like any other.
        let fifo = folder + "/written"
        try #require(mkfifo(fifo, 0o600) == 0)
        let writer = try Spawned("/bin/sh", ["-c", "cat devices/power-button.evemu > '\(fifo)'"], directory: repository)
        let replay = try runCommand(["replay", fifo, "--backend", "fuse", "--asap", "--wait", "0"])
        #expect(replay.status == 0, "\(replay.error)")
        #expect(replay.error.contains("2 of 2 frames replayed"), "\(replay.error)")
        #expect(writer.finish(timeout: .seconds(10)) == 0)
    }

    @Test("A recording of 3,000 devices is hosted and replayed whole")
    func thousandsOfDevices() throws {
        let one = try String(contentsOfFile: repository + "/devices/power-button.evemu", encoding: .utf8)
        let path = "/tmp/ringloop-unix-\(getpid())-3000.evemu"
        try String(repeating: one, count: 3000).write(toFile: path, atomically: false, encoding: .utf8)
        defer { unlink(path) }
        let result = try runCommand(["replay", path, "--backend", "fuse", "--asap", "--wait", "0"], timeout: 300)
        #expect(result.status == 0, "\(result.error)")
        #expect(Set(result.output.split(separator: "\n")).count == 3000)
        #expect(result.error.contains("6000 of 6000 frames replayed"), "\(result.error)")
        // Past the stated limit: refused, naming it.
        let over = "/tmp/ringloop-unix-\(getpid())-4097.evemu"
        try String(repeating: one, count: ReplaySession.maximumDevices + 1).write(toFile: over, atomically: false, encoding: .utf8)
        defer { unlink(over) }
        let refused = try runCommand(["replay", over, "--backend", "fuse"], timeout: 120)
        #expect(refused.status == 65 && refused.error.contains("a replay hosts at most 4096"), "\(refused.error)")
    }
}
