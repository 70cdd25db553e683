import Foundation
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

extension CommandTests {
    /// Lines that describe the device (no comments, no event section).
    static func descriptionLines(_ text: String) -> [Substring] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.hasPrefix("E:") }
    }

    @Test(
        "describe of a hosted node prints what evemu-describe prints for it, and what the recording says",
        .enabled(if: FUSEHere.usable, FUSEHere.missing),
        arguments: ["devices/touchpad.evemu", "devices/keyboard.evemu"])
    func describeMatchesEvemu(recording: String) throws {
        let name = recording.split(separator: "/").last.map(String.init) ?? "device"
        let mount = "/tmp/ringloop-describe-\(getpid())-\(name)"
        let replay = try Spawned(
            ringloop, ["replay", recording, "--backend", "fuse", "--mount", mount, "--wait", "20", "--keep"],
            directory: repository)
        defer {
            replay.signal(SIGINT)
            _ = replay.finish()
        }
        #expect(replay.waitFor("\n"))
        let node = replay.output.split(separator: "\n").first.map(String.init) ?? ""
        #expect(node.hasPrefix(mount + "/event"), "\(node)")
        let ours = try runCommand(["describe", node], timeout: 30)
        #expect(ours.status == 0, "\(ours.error)")
        let evemu = try Spawned("/usr/bin/evemu-describe", [node])
        #expect(evemu.finish(timeout: .seconds(30)) == 0, "\(evemu.error)")
        #expect(Self.descriptionLines(ours.output) == Self.descriptionLines(evemu.output))
        let fromFile = try runCommand(["describe", recording])
        #expect(fromFile.status == 0, "\(fromFile.error)")
        #expect(Self.descriptionLines(fromFile.output) == Self.descriptionLines(ours.output))
        #expect(!ours.output.contains("\nE: "), "a description has no events")
        // A virtual node is a regular file that answers evdev's ioctls: monitor takes it
        // as a device (read as a recording, it waited for ever for the file's end).
        let monitor = try runCommand(["monitor", node, "--duration", "1"], timeout: 30)
        #expect(monitor.status == 0, "\(monitor.error)")
    }
}
