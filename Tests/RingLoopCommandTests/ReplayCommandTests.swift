import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

extension CommandTests {
    @Test(
        "replay --wait-for-readers starts when each node has its reader, saying first what it waits for and then only what changes",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func waitForReaders() throws {
        let mount = "/tmp/ringloop-readers-\(getpid())"
        let started = MonotonicInstant.now
        let replay = try Spawned(
            ringloop, ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", mount, "--wait-for-readers", "1"],
            directory: repository)
        #expect(replay.waitFor("\n"))
        // Nobody reads for a while: the replay waits, and says once what for.
        #expect(
            replay.waitFor(
                "ringloop replay: waiting for 1 reader of each node before the replay starts: 0 of 1 node has them\n", inError: true))
        _ = replay.wait(timeout: .milliseconds(2500))
        let elapsed = Double((MonotonicInstant.now - started).components.seconds)
        let reports = replay.error.components(separatedBy: "waiting for").count - 1
        #expect(reports == 1, "\(reports) lines in about \(elapsed) s: \(replay.error)")
        #expect(!replay.exited)
        let record = try runCommand(["record", mount + "/event0", "--duration", "30"], timeout: 60)
        #expect(record.status == 0, "\(record.error)")
        #expect(replay.finish(timeout: .seconds(30)) == 0, "\(replay.error)")
        let recorded = try EvemuFormat.parseAll(Array(record.output.utf8), file: "recorded")
        let original = try Recording.load(contentsOf: repository + "/devices/keyboard.evemu")
        #expect(recorded.first?.events.map(\.value) == original.events.map(\.value), "the reader got every event")
        #expect(replay.error.contains("30 of 30 frames replayed"), "\(replay.error)")
        // 2.6 s of frames: progress at most once a second (it was every half second).
        #expect(replay.error.components(separatedBy: "replaying: ").count - 1 <= 3, "\(replay.error)")
    }

    @Test("replay --wait-for-readers with --wait gives up when the readers do not come (status 75); uinput is refused")
    func readersNeverCome() throws {
        let late = try runCommand(
            ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--wait-for-readers", "1", "--wait", "0.3"], timeout: 30)
        #expect(late.status == 75, "\(late.error)")
        #expect(late.error.contains("0 of 1 nodes had 1 reader(s) when the wait for readers ended"), "\(late.error)")
        let uinput = try runCommand(["replay", "devices/keyboard.evemu", "--backend", "uinput", "--wait-for-readers", "1"], timeout: 30)
        #expect(uinput.status == 64 && uinput.error.contains("the kernel does not say who has a uinput node open"), "\(uinput.error)")
    }
}
