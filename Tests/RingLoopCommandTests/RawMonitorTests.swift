import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

/// evtest reading a virtual node: evtest first tries `EVIOCGRAB` and stops when that
/// fails, which it always does on a FUSE node (FUSE cannot carry the request's argument,
/// an int passed by value). This preloaded `ioctl` answers the grab probe with success
/// and passes every other request to the real one, so the real evtest prints the real
/// node's header and events.
enum EvtestOnVirtualNodes {
    /// The preload library, compiled once per version of its source into a folder every
    /// test run shares (one run's processes do not each leave a copy behind).
    static let library: String? = {
        let text = """
            #define _GNU_SOURCE
            #include <dlfcn.h>
            #include <linux/input.h>
            #include <stdarg.h>
            int ioctl(int fd, unsigned long request, ...) {
                va_list list;
                va_start(list, request);
                void *argument = va_arg(list, void *);
                va_end(list);
                static int (*real)(int, unsigned long, ...);
                if (!real) real = dlsym(RTLD_NEXT, "ioctl");
                if (request == EVIOCGRAB) return 0;
                return real(fd, request, argument);
            }
            """
        // FNV-1a of the source: the same name for the same source in every run.
        let digest = text.utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        let folder = "/tmp/ringloop-evtest"
        mkdir(folder, 0o700)
        // A library preloaded into evtest comes only from a folder of this user that no
        // one else may write (the name in /tmp is predictable).
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(),
            info.st_mode & 0o022 == 0
        else { return nil }
        let library = folder + "/grab-\(String(digest, radix: 16)).so"
        if access(library, R_OK) == 0 { return library }
        // Built under this process's names, then renamed into place: a run beside this
        // one sees either no library or a whole one.
        let source = folder + "/grab-\(getpid()).c"
        let building = folder + "/grab-\(getpid()).so"
        defer {
            unlink(source)
            unlink(building)
        }
        guard (try? text.write(toFile: source, atomically: true, encoding: .utf8)) != nil,
            let compiler = try? Spawned("/usr/bin/cc", ["-shared", "-fPIC", "-o", building, source, "-ldl"]),
            compiler.finish(timeout: .seconds(60)) == 0,
            rename(building, library) == 0
        else { return nil }
        return library
    }()
}

extension CommandTests {
    /// The lines evtest and `monitor --raw` print, without event times (two replays of
    /// one recording differ only there) and without evtest's complaint when the device goes.
    static func evtestLines(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            if line.hasPrefix("expected ") || line.hasPrefix("evtest: error") { return nil }
            guard line.hasPrefix("Event: time "), let comma = line.firstIndex(of: ",") else { return String(line) }
            return "Event:" + line[line.index(after: comma)...]
        }
    }

    @Test(
        "monitor --raw on a bundled recording prints what evtest prints for the same device",
        .enabled(if: FUSEHere.usable, FUSEHere.missing),
        arguments: ["keyboard.evemu", "touchpad.evemu", "touchpad-protocol-a.evemu", "lid-switch.evemu"])
    func rawMatchesEvtest(recording: String) throws {
        let library = try #require(
            EvtestOnVirtualNodes.library, "cc could not build the grab shim, or /tmp/ringloop-evtest is not this user's alone")
        let mount = "/tmp/ringloop-raw-\(getpid())-\(recording)"
        let ours = try runCommand(["monitor", "--raw", "devices/" + recording], timeout: 60)
        #expect(ours.status == 0, "\(ours.error)")
        let events = Self.evtestLines(ours.output).filter { $0.hasPrefix("Event:") }.count
        let replay = try Spawned(
            ringloop,
            ["replay", "devices/" + recording, "--backend", "fuse", "--mount", mount, "--wait-for-readers", "1", "--wait", "60", "--keep"],
            directory: repository)
        #expect(replay.waitFor("\n"))
        let node = replay.output.split(separator: "\n").first.map(String.init) ?? ""
        let evtest = try Spawned("/usr/bin/evtest", [node], environment: ["LD_PRELOAD": library])
        // The device stays until evtest has printed as many events as monitor did (or a
        // bound passes); removing it then ends evtest too.
        let deadline = MonotonicInstant.now.advanced(by: .seconds(60))
        while Self.evtestLines(evtest.output).filter({ $0.hasPrefix("Event:") }).count < events,
            MonotonicInstant.now < deadline, !evtest.exited
        {
            _ = evtest.wait(timeout: .milliseconds(50))
        }
        replay.signal(SIGINT)
        #expect(replay.finish(timeout: .seconds(60)) == 0, "\(replay.error)")
        #expect(evtest.wait(timeout: .seconds(30)) != nil, "evtest did not end with its device")
        _ = evtest.finish(timeout: .seconds(5))
        let expected = Self.evtestLines(evtest.output)
        #expect(expected.contains("Testing ... (interrupt to exit)") && expected.count > 10, "\(evtest.output)")
        #expect(Self.evtestLines(ours.output) == expected)
    }

    @Test("monitor --raw --json writes one raw object per event; --raw takes one device")
    func rawJSON() throws {
        let result = try runCommand(["monitor", "--raw", "--json", "devices/power-button.evemu"], timeout: 60)
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["kind"] as? String == "raw" && object["typeName"] is String && object["value"] is Int)
        }
        let two = try runCommand(["monitor", "--raw", "devices/keyboard.evemu", "devices/mouse-hires-wheel.evemu"])
        #expect(two.status == 64 && two.error.contains("--raw shows one device"), "\(two.error)")
    }
}

extension CommandTests {
    @Test(
        "monitor --raw --json: times on CLOCK_MONOTONIC and the device named as HID JSON names it",
        .enabled(if: FUSEHere.usable, FUSEHere.missing))
    func rawClockAndDevice() throws {
        let before = Double(MonotonicInstant.now.nanoseconds) / 1e9
        let raw = try runCommand(["monitor", "--raw", "--json", "devices/power-button.evemu"], timeout: 60)
        let hid = try runCommand(["monitor", "--json", "devices/power-button.evemu"], timeout: 60)
        let after = Double(MonotonicInstant.now.nanoseconds) / 1e9
        #expect(raw.status == 0 && hid.status == 0, "\(raw.error)\(hid.error)")
        let objects = { (text: String) in
            text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        let rawObjects = objects(raw.output)
        let key = try #require(objects(hid.output).first { $0["kind"] as? String == "key" })
        #expect(!rawObjects.isEmpty)
        for object in rawObjects {
            #expect(object["device"] as? String == key["device"] as? String, "\(object)")
            let time = try #require(object["time"] as? Double)
            #expect(time >= before && time <= after, "\(time) is not on CLOCK_MONOTONIC (\(before)…\(after))")
        }
    }

    @Test("monitor --raw of a node that is removed says so, as evtest does: status 1, and a deviceRemoved object in JSON")
    func rawRemoval() throws {
        for json in [false, true] {
            let mount = "/tmp/ringloop-raw-removal-\(getpid())-\(json)"
            let replay = try Spawned(
                ringloop, ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", mount, "--keep"], directory: repository)
            #expect(replay.waitFor("\n"))
            let node = mount + "/event0"
            let monitor = try Spawned(ringloop, ["monitor", "--raw", node] + (json ? ["--json"] : []), directory: repository)
            #expect(monitor.waitFor(json ? "\"kind\":\"raw\"" : "Testing ... (interrupt to exit)"), "\(monitor.error)")
            replay.signal(SIGINT)
            // Interrupted before its last frame: 128 + SIGINT, as the shell's convention says.
            #expect(replay.finish(timeout: .seconds(30)) == 130)
            #expect(monitor.finish(timeout: .seconds(30)) == 1, "\(monitor.error)")
            #expect(
                monitor.error.contains("ringloop monitor: \(node): error reading: No such device (the device was removed)"),
                "\(monitor.error)")
            if json {
                let last = monitor.output.split(separator: "\n").last.map(String.init) ?? ""
                #expect(last.contains("\"kind\":\"deviceRemoved\""), "\(last)")
            }
        }
    }
}
