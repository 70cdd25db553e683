import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

/// One vocabulary of errors, help that reads as written, completions, and output an input
/// developer can diff: reproductions from the issue "A command that never destroys, never
/// lies".
extension CommandTests {
    @Test(
        "A missing path: one wording and status 66 in every subcommand, and no fallback",
        arguments: [
            ["monitor", "/nonexistent-input"], ["replay", "/nonexistent-input"], ["record", "/nonexistent-input"],
            ["describe", "/nonexistent-input"], ["demo", "--recordings", "/nonexistent-input"],
            ["serve", "test.vocabulary", "/nonexistent-input"],
            [
                "replay", "devices/real/evemu-devices/touchpads/SynPS2 Synaptics TouchPad.leftmove.events", "--description",
                "/nonexistent-input",
            ],
        ])
    func missingPath(_ arguments: [String]) throws {
        let result = try runCommand(arguments, timeout: 20)
        #expect(result.status == 66, "\(result.error)")
        #expect(result.error == "ringloop \(arguments[0]): /nonexistent-input: No such file or directory\n", "\(result.error)")
        #expect(result.output.isEmpty, "it went on anyway: \(result.output)")
    }

    @Test("demo --recordings that is not a folder of recordings is refused (status 65), never replaced by the bundled ones")
    func demoRecordingsRefused() throws {
        let fifo = "/tmp/ringloop-vocabulary-\(getpid())-fifo"
        let empty = "/tmp/ringloop-vocabulary-\(getpid())-empty"
        mkfifo(fifo, 0o600)
        mkdir(empty, 0o755)
        defer {
            unlink(fifo)
            rmdir(empty)
        }
        for (path, found) in [
            (fifo, "is a file"), ("/dev/zero", "is a character device, not an evdev device"), ("Package.swift", "is a file"),
            (empty, "is a folder with no .evemu recording"),
        ] {
            let result = try runCommand(["demo", "--recordings", path], timeout: 20)
            #expect(result.status == 65, "\(path): \(result.error)")
            #expect(result.error == "ringloop demo: \(path): \(found); expected a folder of .evemu recordings\n", "\(result.error)")
            #expect(result.output.isEmpty)
        }
    }

    @Test("--help's discussions are wrapped as written: the same text at 80 columns as at 200 (no orphaned lines), in ASCII")
    func helpWrapping() throws {
        let commands = [[], ["demo"], ["devices"], ["monitor"], ["describe"], ["record"], ["replay"], ["serve"], ["doctor"], ["rumble"]]
        for command in commands + [["calibrate"]] {
            let narrow = try runCommand(command + ["--help"], timeout: 20, environment: ["COLUMNS": "80"])
            let wide = try runCommand(command + ["--help"], timeout: 20, environment: ["COLUMNS": "200"])
            // The discussion: after the overview (wrapped by argument-parser, one sentence),
            // before USAGE.
            let text = { (output: String) in
                (output.components(separatedBy: "\nUSAGE:").first ?? "").components(separatedBy: "\n\n").dropFirst().joined(
                    separator: "\n\n")
            }
            #expect(text(narrow.output) == text(wide.output), "\(command) is re-wrapped at 80 columns")
            #expect(!text(narrow.output).isEmpty)
        }
        let dump = try runCommand(["--experimental-dump-help"], timeout: 20)
        let nonASCII = dump.output.unicodeScalars.filter { !$0.isASCII }
        #expect(nonASCII.isEmpty, "the man page drops these characters: \(String(String.UnicodeScalarView(nonASCII)))")
        #expect(!dump.output.contains("host-and-read") && !dump.output.contains("\"soak\""), "test fixtures in the command")
        let root = try runCommand(["--help"], timeout: 20)
        #expect(root.output.contains("Exit status: 0 done;") && root.output.contains("141 standard output closed"))
    }

    @Test("Completions complete paths and the values of enumerated options", arguments: ["bash", "zsh", "fish"])
    func completionValues(shell: String) throws {
        let result = try runCommand(["--generate-completion-script", shell])
        #expect(result.status == 0)
        let script = result.output
        for values in [["uinput", "fuse"], ["evemu", "libinput"], ["pointerMotion", "digitizer"], ["touchscreen", "gamepad"]] {
            for value in values { #expect(script.contains(value), "\(shell): no completion of \(value)") }
        }
        let fileCompletion =
            switch shell {
            case "bash": "-f"
            case "zsh": "_files"
            default: "-rF"
            }
        #expect(script.contains(fileCompletion), "\(shell): no path completion")
    }

    @Test("devices --json writes paths with their slashes as they are, and ids as four hex digits")
    func devicesJSON() throws {
        let mount = "/tmp/ringloop-devices-json-\(getpid())"
        let replay = try Spawned(
            ringloop, ["replay", "devices/keyboard.evemu", "--backend", "fuse", "--mount", mount, "--keep"], directory: repository)
        defer {
            replay.signal(SIGINT)
            replay.finish()
        }
        #expect(replay.waitFor("\n"))
        let result = try runCommand(["devices", "--directory", mount, "--json"], timeout: 20)
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("\"path\" : \"\(mount)/event0\""), "\(result.output)")
        #expect(!result.output.contains("\\/"))
        #expect(result.output.contains("\"bus\" : \"0x0011\""))
        let text = try runCommand(["devices", "--directory", mount], timeout: 20)
        #expect(text.output.contains("bus 0x0011 vendor 0x0001 product 0x0001 version 0xab41"), "\(text.output)")
    }
}
