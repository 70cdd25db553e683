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
        arguments: ["devices/touchpad.evemu", "devices/keyboard.evemu", "devices/lid-switch.evemu", "devices/pen-tablet.evemu"])
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
        // Byte for byte, the comment block included (kernel, ids as %#04x, size in mm,
        // supported events with axis ranges and states, properties).
        #expect(ours.output == evemu.output)
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

extension CommandTests {
    @Test(
        "record --format libinput writes what libinput record writes: same devices and events, and libinput analyze reads both alike",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func recordLibinputFormat() throws {
        let mount = "/tmp/ringloop-libinput-format-\(getpid())"
        let ours = mount + "-ours.yml"
        let theirs = mount + "-libinput.yml"
        defer {
            unlink(ours)
            unlink(theirs)
        }
        let replay = try Spawned(
            ringloop,
            ["replay", "devices/touchpad.evemu", "--backend", "fuse", "--mount", mount, "--wait-for-readers", "2", "--wait", "60"],
            directory: repository)
        #expect(replay.waitFor("\n"))
        let node = replay.output.split(separator: "\n").first.map(String.init) ?? ""
        // The replay starts once both recorders read the node (60 s at most).
        let libinput = try Spawned("/usr/bin/libinput", ["record", "-o", theirs, node])
        let record = try runCommand(["record", node, "--format", "libinput", "-o", ours, "--duration", "6"], timeout: 60)
        #expect(record.status == 0, "\(record.error)")
        #expect(replay.finish(timeout: .seconds(60)) == 0)
        libinput.signal(SIGINT)
        #expect(libinput.finish(timeout: .seconds(30)) == 0, "\(libinput.error)")
        let original = try Recording.load(contentsOf: repository + "/devices/touchpad.evemu")
        let mine = try Recording.load(contentsOf: ours)
        let real = try Recording.load(contentsOf: theirs)
        #expect(mine.description == original.description)
        #expect(mine.description == real.description)
        let values = { (recording: Recording) in recording.events.map { [Int($0.type), Int($0.code), Int($0.value)] } }
        #expect(values(mine) == values(original))
        #expect(values(mine) == values(real))
        // libinput's own reader of recordings (Python, with python3-libevdev) prints the
        // same table for both files.
        let environment = ["PATH": "/usr/bin:/bin"]
        let analyzeOurs = try Spawned("/usr/bin/libinput", ["analyze", "recording", ours], environment: environment)
        let analyzeTheirs = try Spawned("/usr/bin/libinput", ["analyze", "recording", theirs], environment: environment)
        #expect(analyzeOurs.finish(timeout: .seconds(60)) == 0, "\(analyzeOurs.error)")
        #expect(analyzeTheirs.finish(timeout: .seconds(60)) == 0, "\(analyzeTheirs.error)")
        #expect(analyzeOurs.output.split(separator: "\n").count > 10)
        #expect(analyzeOurs.output == analyzeTheirs.output)
    }
}

extension CommandTests {
    @Test(
        "replay of several recordings hosts all their devices and replays them together",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func replaySeveral() throws {
        let mount = "/tmp/ringloop-replay-several-\(getpid())"
        let replay = try Spawned(
            ringloop,
            [
                "replay", "devices/keyboard.evemu", "devices/touchpad.evemu", "--backend", "fuse", "--mount", mount, "--wait-for-readers",
                "1", "--wait", "60",
            ],
            directory: repository)
        #expect(replay.waitFor("event1\n"), "\(replay.output)")
        let nodes = replay.output.split(separator: "\n").map(String.init)
        #expect(nodes == [mount + "/event0", mount + "/event1"])
        let records = try nodes.map { node in
            try Spawned(ringloop, ["record", node, "--duration", "20"], directory: repository)
        }
        #expect(replay.finish(timeout: .seconds(60)) == 0, "\(replay.error)")
        #expect(replay.error.contains("ringloop replay: 106 of 106 frames replayed"), "\(replay.error)")
        for (record, file) in zip(records, ["keyboard.evemu", "touchpad.evemu"]) {
            #expect(record.finish(timeout: .seconds(30)) == 0, "\(record.error)")
            let recorded = try EvemuFormat.parseAll(Array(record.output.utf8), file: file)
            let original = try Recording.load(contentsOf: repository + "/devices/" + file)
            #expect(recorded.first?.events.map(\.value) == original.events.map(\.value), "\(file)")
        }
    }
}
