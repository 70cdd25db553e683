import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

/// The command's messages in the form every other one has: `ringloop CMD: …` on standard
/// error, sysexits statuses, 128 + the signal after an interrupted replay, nothing more
/// after a closed pipe, a first line saying what a waiting command waits for: the
/// reproductions of the issue "A newcomer's first hour".
extension CommandTests {
    @Test("monitor on an empty folder says first what it watches, as evtest says what it scans")
    func monitorSaysWhatItWatches() throws {
        let folder = "/tmp/ringloop-messages-\(getpid())-empty"
        mkdir(folder, 0o755)
        defer { rmdir(folder) }
        let monitor = try Spawned(ringloop, ["monitor", folder], directory: repository)
        #expect(
            monitor.waitFor(
                "ringloop monitor: watching \(folder) for evdev nodes: none yet; each prints as it appears; Ctrl-C ends\n",
                inError: true),
            "\(monitor.error)")
        monitor.signal(SIGINT)
        // Ctrl-C is how a monitor ends: status 0, its summary on standard output.
        #expect(monitor.finish(timeout: .seconds(30)) == 0, "\(monitor.error)")
        #expect(monitor.output.contains("events: 0 delivered"), "\(monitor.output)")
    }

    @Test("monitor --server for a server not there yet says so in the command's own form, not swift-log's")
    func serverNotThereYet() throws {
        let name = "test.messages.\(getpid())"
        let result = try runCommand(["monitor", "--server", name, "--duration", "0.5"], timeout: 30)
        #expect(result.status == 0, "\(result.error)")
        #expect(
            result.error.hasPrefix("ringloop monitor: event server '\(name)' is not there yet; attaching when it comes\n"),
            "\(result.error)")
        #expect(!result.error.contains("notice"), "\(result.error)")
    }

    @Test("replay --keep says when the replay has finished and the devices stay; Ctrl-C then ends it with status 0")
    func keepSaysItFinished() throws {
        let mount = "/tmp/ringloop-messages-\(getpid())-keep"
        let replay = try Spawned(
            ringloop, ["replay", "devices/power-button.evemu", "--backend", "fuse", "--mount", mount, "--wait", "0", "--keep"],
            directory: repository)
        #expect(
            replay.waitFor("ringloop replay: 2 of 2 frames replayed; the devices stay until Ctrl-C\n", inError: true), "\(replay.error)")
        #expect(!replay.exited)
        replay.signal(SIGINT)
        #expect(replay.finish(timeout: .seconds(30)) == 0, "\(replay.error)")
        #expect(replay.error.components(separatedBy: "frames replayed").count - 1 == 1, "said once: \(replay.error)")
    }

    @Test("An interrupted replay exits 130 (128 + SIGINT) after saying how far it got; SIGTERM gives 143")
    func interruptedReplay() throws {
        for (signal, status) in [(SIGINT, Int32(130)), (SIGTERM, 143)] {
            let mount = "/tmp/ringloop-messages-\(getpid())-interrupted"
            let replay = try Spawned(
                ringloop, ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", mount, "--wait", "0", "--speed", "0.1"],
                directory: repository)
            #expect(replay.waitFor("replaying: ", inError: true), "\(replay.error)")
            replay.signal(signal)
            #expect(replay.finish(timeout: .seconds(30)) == status, "\(replay.error)")
            #expect(replay.error.contains(" of 30 frames replayed\n"), "\(replay.error)")
            #expect(!replay.error.contains("30 of 30"), "\(replay.error)")
        }
    }

    @Test("monitor | head -1: status 141 and no summary once the reader has gone, in text and in JSON")
    func noSummaryAfterClosedPipe() throws {
        for json in [false, true] {
            let command =
                "'\(ringloop)' monitor \(json ? "--json " : "")devices/keyboard.evemu | head -1; echo \"status ${PIPESTATUS[0]}\" >&2"
            let shell = try Spawned("/bin/bash", ["-c", command], directory: repository)
            #expect(shell.finish(timeout: .seconds(60)) == 0)
            #expect(shell.error.hasSuffix("status 141\n"), "\(shell.error)")
            #expect(!shell.error.contains("Summary") && !shell.output.contains("Summary"), "\(shell.output)\(shell.error)")
            #expect(shell.output.split(separator: "\n").count == 1, "\(shell.output)")
        }
    }

    @Test("--filter gesture prints only the gestures (recognized without --gestures); --filter key hides them")
    func filterGesture() throws {
        let recording = "devices/gestures/touchscreen-double-tap.evemu"
        let gestures = try runCommand(["monitor", "--json", "--filter", "gesture", recording])
        #expect(gestures.status == 0, "\(gestures.error)")
        let kinds = try GestureCommandTests.objects(gestures.output).compactMap { $0["kind"] as? String }
        #expect(Set(kinds) == ["gesture", "deviceAdded", "deviceRemoved"], "\(kinds)")
        #expect(kinds.contains("gesture"))
        let keys = try runCommand(["monitor", "--json", "--gestures", "--filter", "digitizer", recording])
        #expect(keys.status == 0, "\(keys.error)")
        let keyKinds = Set(try GestureCommandTests.objects(keys.output).compactMap { $0["kind"] as? String })
        #expect(keyKinds == ["digitizer", "deviceAdded", "deviceRemoved"], "gesture lines follow --filter: \(keyKinds)")
        #expect(keys.error.contains("gestures: 1 recognized (doubleTap 1)"), "still counted: \(keys.error)")
        let wrong = try runCommand(["monitor", "--filter", "gestures", recording])
        #expect(wrong.status == 64)
        #expect(wrong.error.contains("gesture, orientation"), "\(wrong.error)")
    }

    @Test("describe -o into a folder that takes no new file says so, not 'No such file'")
    func describeIntoProc() throws {
        let result = try runCommand(["describe", "devices/keyboard.evemu", "-o", "/proc/version"])
        #expect(result.status == 73, "\(result.error)")
        #expect(
            result.error
                == "ringloop describe: /proc/version: cannot replace it: its folder takes no new file (No such file or directory);"
                + " give a path in a folder you can write\n")
    }

    @Test(
        "describe and record without a device say what to give and list the devices, as evtest offers them",
        arguments: ["describe", "record"])
    func noDeviceGiven(_ command: String) throws {
        let result = try runCommand([command])
        #expect(result.status == 64, "\(result.error)")
        #expect(result.error.hasPrefix("ringloop \(command): give an evdev device node"), "\(result.error)")
        // This machine: no /dev/input (the booted-kernel stage has one, with its nodes listed).
        if access("/dev/input", F_OK) != 0 {
            #expect(result.error.contains("no evdev device in /dev/input can be read here"), "\(result.error)")
        } else {
            #expect(result.error.contains("/dev/input/event") || result.error.contains("no evdev device"), "\(result.error)")
        }
        #expect(!result.error.contains("Missing expected argument"))
    }

    @Test("ringloop-bench --help names no subcommand: its children are its own")
    func benchUsage() throws {
        let result = try runCommand(["bench", "--help"])
        #expect(result.status == 0)
        #expect(
            result.output.contains("USAGE: ringloop-bench [--only <name>] [--quick] [--json] [--rounds <rounds>]\n"), "\(result.output)")
        #expect(!result.output.contains("<subcommand>"))
    }
}
