import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// The built `ringloop` beside the test bundle.
let ringloop = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    .appendingPathComponent("ringloop").path

/// The test fixtures' program beside it (`host-and-read`, `soak`).
let ringloopFixtures = URL(fileURLWithPath: ringloop).deletingLastPathComponent().appendingPathComponent("ringloop-fixtures").path

/// The built `ringloop-bench` beside it.
let ringloopBench = URL(fileURLWithPath: ringloop).deletingLastPathComponent().appendingPathComponent("ringloop-bench").path

let repository: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path
}()

struct CommandResult {
    var status: Int32
    var output: String
    var error: String
}

/// Runs `ringloop arguments…` from the repository root, with a time limit (`bench …`
/// runs `ringloop-bench …`, `soak …` and `host-and-read …` the fixtures' program).
func runCommand(_ arguments: [String], timeout: TimeInterval = 60, environment: [String: String] = [:]) throws -> CommandResult {
    let (program, rest) =
        switch arguments.first {
        case "bench": (ringloopBench, Array(arguments.dropFirst()))
        case "soak", "host-and-read": (ringloopFixtures, arguments)
        default: (ringloop, arguments)
        }
    let child = try Spawned(program, rest, directory: repository, environment: environment)
    if child.wait(timeout: .milliseconds(Int(timeout * 1000))) == nil {
        Issue.record("\(program) \(rest.joined(separator: " ")) did not finish within \(timeout) s")
    }
    let status = child.finish(timeout: .zero)
    return CommandResult(status: status, output: child.output, error: child.error)
}

let bundled =
    (try? FileManager.default.contentsOfDirectory(atPath: repository + "/devices"))?
    .filter { $0.hasSuffix(".evemu") }.sorted() ?? []

@Suite("The ringloop command", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct CommandTests {
    @Test("demo exits 0 and its summary matches the bundled recordings")
    func demo() throws {
        let result = try runCommand(["demo", "--quiet", "--speed", "4"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("\(bundled.count) recordings"))
        #expect(result.output.contains("devices: \(bundled.count) added, \(bundled.count) removed"))
        #expect(result.output.contains("drops: 0 (none)"))
        #expect(result.output.contains("device→handler latency: p50"))
        // Per device: the keyboard's key events are the recording's EV_KEY events.
        let keyboard = try Recording.load(contentsOf: repository + "/devices/keyboard.evemu")
        let keyEvents = keyboard.events.filter { $0.type == 1 }.count
        let line = result.output.split(separator: "\n").first { $0.contains("AT Translated Set 2 keyboard") }
        #expect(line?.contains("key \(keyEvents)") == true, "\(line ?? "no keyboard line")")
    }

    @Test("monitor --json writes valid JSON lines with the fixed names", arguments: bundled)
    func monitorJSON(_ file: String) throws {
        let result = try runCommand(["monitor", "devices/" + file, "--json", "--speed", "8"])
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n")
        #expect(lines.count >= 3, "added, events, removed")
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect(object["kind"] is String && object["device"] is String && object["time"] is Double, "\(line)")
            switch object["kind"] as? String {
            case "key":
                #expect(object["code"] is String && object["state"] is String, "\(line)")
                #expect(object.keys.contains("usagePage") && object.keys.contains("usage"))
                #expect((object["code"] as? String)?.hasPrefix("KEY_") == true)
            case "digitizer":
                let contacts = try #require(object["contacts"] as? [[String: Any]])
                for contact in contacts {
                    for key in ["id", "slot", "phase", "x", "y"] { #expect(contact[key] != nil, "\(key) in \(line)") }
                }
            case "scroll":
                for key in ["vertical", "horizontal", "unscaledVertical", "unscaledHorizontal"] {
                    #expect(object[key] is Double, "\(key) in \(line)")
                }
            default: break
            }
        }
        #expect(result.error.contains("Summary"))
    }

    @Test("record of a replayed virtual device round-trips the description")
    func recordRoundTrip() throws {
        let mount = "/tmp/ringloop-cmdtest-\(getpid())"
        let replay = try Spawned(
            ringloop,
            [
                "replay", "devices/touchpad.evemu", "--backend", "fuse", "--mount", mount, "--wait-for-readers", "1", "--wait", "60",
                "--keep",
            ],
            directory: repository)
        defer {
            replay.signal(SIGINT)
            replay.finish()
        }
        // The node path comes first.
        #expect(replay.waitFor("\n"))
        let node = replay.output.split(separator: "\n").first.map(String.init) ?? ""
        #expect(node.hasPrefix(mount + "/event"), "\(node)")
        let out = mount + "-recorded.evemu"
        let record = try runCommand(["record", node, "-o", out, "--duration", "7"])
        #expect(record.status == 0, "\(record.error)")
        let original = try Recording.load(contentsOf: repository + "/devices/touchpad.evemu")
        let recorded = try Recording.load(contentsOf: out)
        #expect(recorded.description == original.description)
        // Replayed and recorded: the same events (times differ).
        #expect(recorded.events.map { [$0.type, $0.code] } == original.events.map { [$0.type, $0.code] })
        #expect(recorded.events.map(\.value) == original.events.map(\.value))
        unlink(out)
        // Interrupting the replay unmounts the folder.
        replay.signal(SIGINT)
        #expect(replay.finish() == 0)
        #expect(access(node, F_OK) != 0, "the node is gone after Ctrl-C")
    }

    @Test(
        "Errors are one line and the documented status",
        arguments: [
            (["replay", "/nonexistent.evemu"], 66, "ringloop replay: /nonexistent.evemu: No such file or directory"),
            (["monitor", "/nonexistent.evemu"], 66, "ringloop monitor: /nonexistent.evemu: No such file or directory"),
            (
                ["record", "/dev/null"], 65,
                "ringloop record: /dev/null: is a character device, not an evdev device; expected an evdev device node"
            ),
            (["replay", "Package.swift"], 65, "ringloop replay: Package.swift:"),
            (["replay", "devices/keyboard.evemu", "--backend", "carrier-pigeon"], 64, "Please provide one of 'uinput' and 'fuse'"),
            (["replay", "devices/keyboard.evemu", "--speed", "0"], 64, "--speed must be between 0.001 and 1000"),
            (["bench", "--only", "nothing"], 64, "no benchmark starts with 'nothing'"),
            (["monitor", "/dev/null"], 65, "ringloop monitor: /dev/null: is a character device, not an evdev device; expected"),
            (["monitor", "/tmp", "devices/keyboard.evemu"], 64, "ringloop monitor: a folder is monitored alone"),
            (["devices", "--directory", "Package.swift"], 65, "ringloop devices: Package.swift: is not a folder"),
            (["describe", "/dev/null"], 65, "ringloop describe: /dev/null: is a character device, not an evdev device"),
            (["monitor", "--filter", "keys", "devices/keyboard.evemu"], 64, "--filter: 'keys' is not one of key, button"),
            (["monitor", "--device-class", "mouse", "devices/keyboard.evemu"], 64, "'mouse' is not one of keyboard, pointer"),
            (["monitor", "--raw", "--filter", "key", "devices/keyboard.evemu"], 64, "--raw prints every evdev event"),
            (["describe", "/tmp"], 65, "ringloop describe: /tmp: is a folder; expected an evdev device node or a recording"),
            (["replay", "devices"], 65, "ringloop replay: devices: is a folder; expected a recording"),
            (["replay", "/dev/zero"], 65, "ringloop replay: /dev/zero: is a character device, not an evdev device; expected a recording"),
            (["describe", "devices/keyboard.evemu", "-o", "/tmp"], 73, "ringloop describe: /tmp: is a folder; give a file name in it"),
        ] as [([String], Int32, String)])
    func errors(arguments: [String], status: Int32, message: String) throws {
        let result = try runCommand(arguments, timeout: 20)
        #expect(result.status == status, "\(result.error)")
        #expect(result.error.contains(message), "stderr: \(result.error)")
        #expect(!result.error.contains("Fatal error") && !result.error.contains("Backtrace"))
    }

    @Test("Shell completions name every command and the options of monitor", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) throws {
        let result = try runCommand(["--generate-completion-script", shell])
        #expect(result.status == 0, "\(result.error)")
        for word in ["demo", "devices", "monitor", "describe", "record", "replay", "doctor", "raw", "json"] {
            #expect(result.output.contains(word), "\(shell) completion lacks \(word)")
        }
    }

    @Test("--version prints the version CHANGELOG.md's newest entry names, for both commands")
    func version() throws {
        let changelog = try String(contentsOfFile: repository + "/CHANGELOG.md", encoding: .utf8)
        let newest = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") })
        let version = try #require(newest.dropFirst(3).split(separator: " ").first.map(String.init))
        for command in [["--version"], ["bench", "--version"]] {
            let result = try runCommand(command, timeout: 20)
            #expect(result.status == 0)
            #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == version)
        }
        #expect(RingLoopVersion.string == version, "the library's RingLoopVersion")
    }

    @Test("devices where there are none lists none, says so on standard error, and exits 0")
    func noDevices() throws {
        for arguments in [["devices", "--directory", "/nonexistent-input"], ["devices", "--directory", "/tmp"]] {
            let text = try runCommand(arguments, timeout: 20)
            #expect(text.status == 0)
            #expect(text.output.isEmpty)
            #expect(text.error.contains("no input devices"))
            let json = try runCommand(arguments + ["--json"], timeout: 20)
            #expect(json.status == 0)
            #expect(json.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
        }
    }

    @Test("monitor of a folder runs the chain on that folder and ends with its summary")
    func monitorFolder() throws {
        let result = try runCommand(["monitor", "/tmp", "--duration", "0.2"], timeout: 20)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("devices: 0 added"))
    }

    @Test("A malformed recording names its line")
    func malformedRecording() throws {
        let path = "/tmp/ringloop-bad-\(getpid()).evemu"
        try "N: Broken\nI: 0003 0001 0001 0001\nB: 00 0b\nE: 0.000001 0001 001e one\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let result = try runCommand(["replay", path], timeout: 20)
        #expect(result.status == 65)
        #expect(result.error.contains("\(path):4:"), "stderr: \(result.error)")
    }

    @Test("An events-only recording needs --description, and the error names the option and the description beside it")
    func eventsOnlyNeedsDescription() throws {
        let events = "devices/real/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.leftmove.events"
        let refused = try runCommand(["replay", events, "--asap", "--wait", "0"])
        #expect(refused.status == 64)
        #expect(refused.error.contains("has events only; give the device's description with --description FILE"), "\(refused.error)")
        #expect(refused.error.contains("SynPS2 Synaptics TouchPad.desc"), "\(refused.error)")
        let replayed = try runCommand([
            "replay", events, "--description", "devices/real/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.desc",
            "--asap", "--wait", "0", "--backend", "fuse",
        ])
        #expect(replayed.status == 0, "\(replayed.error)")
        let frames = try Recording.load(
            description: repository + "/devices/real/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.desc",
            events: repository + "/" + events)
        let count = Replay.frames(of: frames).count
        #expect(replayed.error.contains("\(count) of \(count) frames replayed"), "\(replayed.error)")
    }

    @Test("A file of two devices is hosted and replayed whole: monitor sees both, on the file's clock")
    func twoDevicesInOneFile() throws {
        let keyboard = try String(contentsOfFile: repository + "/devices/power-button.evemu", encoding: .utf8)
        let lid = try String(contentsOfFile: repository + "/devices/lid-switch.evemu", encoding: .utf8)
        let path = "/tmp/ringloop-two-\(getpid()).evemu"
        try (keyboard + lid).write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let result = try runCommand(["monitor", path, "--json"])
        #expect(result.status == 0, "\(result.error)")
        let objects = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let added = objects.filter { $0["kind"] as? String == "deviceAdded" }.compactMap { $0["device"] as? String }
        #expect(added.count == 2, "\(added)")
        #expect(objects.contains { $0["kind"] as? String == "switchChanged" })
        #expect(objects.contains { $0["kind"] as? String == "key" })
    }

    @Test("A tablet pad's strip comes out of monitor --json as axis objects")
    func axisObjects() throws {
        let result = try runCommand([
            "monitor", "devices/real/evemu-devices/tablets/Wacom Intuos3 4x6 Pad.strip.events", "--json", "--speed", "4",
        ])
        #expect(result.status == 0, "\(result.error)")
        let axes = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["kind"] as? String == "axis" }
        let strip = axes.filter { $0["code"] as? String == "ABS_RX" }
        #expect(!strip.isEmpty)
        for axis in axes {
            #expect(axis["source"] as? String == "absolute" && axis["value"] is Int, "\(axis)")
            #expect(axis["normalized"] is Double || axis["normalized"] is NSNull, "\(axis)")
        }
        #expect(strip.allSatisfy { $0["normalized"] is Double }, "the strip has a range, so a normalized value")
    }

    @Test(
        "Every command has --help with an example",
        arguments: ["demo", "devices", "monitor", "describe", "record", "replay", "doctor", "bench"])
    func help(command: String) throws {
        let result = try runCommand([command, "--help"], timeout: 20)
        #expect(result.status == 0)
        #expect(result.output.contains("Example"), "\(command) --help has no example")
    }

    /// The counting malloc replaces malloc for a whole process: only the benchmark has it.
    @Test("Only ringloop-bench links the counting malloc; ringloop does not")
    func countingMallocOnlyInBench() throws {
        func mentions(_ path: String) throws -> Bool {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return data.range(of: Data("ringloop_malloc_count".utf8)) != nil
        }
        #expect(try mentions(ringloopBench))
        #expect(try !mentions(ringloop))
    }
}

extension CommandTests {
    @Test("bench --quick --json on tiny sizes has the documented shape (never the figures)")
    func benchShape() throws {
        try HeavyTests.oneAtATime {
            // Under AddressSanitizer the benchmark's Foundation side leaks inside Foundation
            // itself: swift-corelibs-foundation's `Timer` keeps itself alive through its
            // CFRunLoopTimer's context (retained, never released), so every Foundation timer
            // leaks, and `Process.run` leaks 32 bytes. Those are the baseline being measured,
            // not this package's code, whose leaks the rest of the suite checks.
            let underAddressSanitizer = dlsym(nil, "__asan_init") != nil
            let result = try runCommand(
                ["bench", "--quick", "--json", "--scale", "0.001"], timeout: 180,
                environment: underAddressSanitizer ? ["ASAN_OPTIONS": "detect_leaks=0"] : [:])
            #expect(result.status == 0, "\(result.error)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any])
            let machine = try #require(object["machine"] as? [String: Any])
            #expect(machine["cores"] != nil && machine["kernel"] != nil)
            let results = try #require(object["results"] as? [[String: Any]])
            for entry in results {
                #expect(entry["name"] is String && entry["unit"] is String && entry["ours"] is Double, "\(entry)")
                #expect(
                    entry.keys.contains("foundation") && entry.keys.contains("ratio") && entry.keys.contains("peers"),
                    "\(entry)")
            }
            let names = Set(results.compactMap { $0["name"] as? String })
            for required in [
                "wake.busy.p50_us", "wake.busy.p99_us", "wake.idle.p50_us", "wake.idle.p99_us", "source0.per_s",
                "timer.lateness.p99_us", "timer.lateness.precise.p99_us", "timers.schedule.s", "timers.bytes_each",
                "idle.wakeups_per_s", "hid.decode.events_per_s", "hid.e2e.fuse.p99_us", "enter.per_pass.source0", "blocks.per_s",
                "executor.hop.per_s", "executor.jobs.per_s", "clock.sleep.lateness.p50_us", "clock.sleep.lateness.p99_us",
                "clock.sleep.lateness.precise.p99_us", "clock.sleepers.bytes_each", "io.echo.pingpong.p50_us",
                "io.echo.pingpong.p99_us", "io.echo.throughput.bytes_per_s", "ports.named.roundtrip.thread.p50_us",
                "ports.named.roundtrip.process.p50_us", "ports.named.roundtrip.thread.one_cpu.p50_us",
                "ports.named.roundtrip.process.one_cpu.p50_us", "gestures.ns_per_frame",
                "hid.e2e.pipe.p50_us", "hid.e2e.pipe.p99_us", "hid.e2e.pipe.thread.p99_us", "hid.e2e.pipe.thread.one_cpu.p99_us",
                "hid.syscalls_per_frame",
                "hid.scale.1.ns_per_event", "hid.scale.256.ns_per_event", "hid.scale.256.e2e.p99_us", "hid.scale.16x8khz.drops",
            ] {
                #expect(names.contains(required), "missing \(required)")
            }
            // Foundation's figure and the ratio are present where Foundation has the same thing.
            let wake = try #require(results.first { $0["name"] as? String == "wake.busy.p50_us" })
            #expect(wake["foundation"] is Double && wake["ratio"] is Double)
            // Other implementations sit in `peers`, by name (null where one is not built).
            let echo = try #require(results.first { $0["name"] as? String == "io.echo.pingpong.p50_us" })
            let echoPeers = try #require(echo["peers"] as? [String: Any])
            #expect(echoPeers.keys.contains("swift-nio") && echo["foundation"] is Double)
            let roundTrip = try #require(results.first { $0["name"] as? String == "ports.named.roundtrip.process.p50_us" })
            #expect((roundTrip["peers"] as? [String: Any])?["socketpair+poll"] is Double)
        }
    }

    @Test("monitor --filter and --device-class print only the chosen kinds and classes (arrivals and removals always)")
    func monitorFilters() throws {
        func kinds(_ arguments: [String]) throws -> [String] {
            let result = try runCommand(
                ["monitor", "devices/keyboard.evemu", "devices/mouse-hires-wheel.evemu", "--json", "--speed", "4"]
                    + arguments, timeout: 120)
            #expect(result.status == 0, "\(result.error)")
            return try result.output.split(separator: "\n").map { line in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return try #require(object["kind"] as? String)
            }
        }
        let keys = try kinds(["--filter", "key"])
        #expect(keys.contains("key"))
        #expect(Set(keys).isSubset(of: ["key", "deviceAdded", "deviceRemoved"]), "\(Set(keys))")
        let pointer = try kinds(["--device-class", "pointer"])
        #expect(pointer.contains("pointerMotion") && !pointer.contains("key"), "\(Set(pointer))")
    }
}
