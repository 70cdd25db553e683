import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopHID
import RingLoopToolSupport
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show input flowing through the whole chain: real devices if readable, else the bundled recordings.",
        discussion: """
            With readable devices in /dev/input, monitors them until Ctrl-C (or
            --duration). Otherwise hosts the recordings in devices/ as virtual devices
            (uinput where usable, else a FUSE folder), replays them at recorded speed
            through the whole chain (event-system thread -> client loop -> handlers),
            prints each HID event with its device-to-handler latency, and ends with a
            summary.

            Examples:
              ringloop demo
              ringloop demo --speed 4 --quiet
              ringloop demo --recordings ~/my-recordings
            """
    )

    @Option(help: "Folder of .evemu recordings (default: devices/ of this package).", completion: .directory)
    var recordings: String?

    @Option(help: "Replay speed factor (1 = recorded pace).")
    var speed: Double = 1

    @Option(help: "With real devices: stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Print only the summary.")
    var quiet = false

    @Flag(help: "Use the bundled recordings even when real devices are readable.")
    var recorded = false

    @OptionGroup(title: "Keymap (key events' keysym and text; the system's keymap where not given)")
    var keymapOptions: KeymapOptions

    func validate() throws {
        try OptionRange.speed(speed)
        try OptionRange.duration(duration)
    }

    func run() throws {
        try Failure.reporting("demo") {
            let realDevices = folderEntries("/dev/input").filter { $0.hasPrefix("event") && access("/dev/input/\($0)", R_OK) == 0 }
            var settings = Monitor.Settings(quiet: quiet, duration: duration)
            (settings.keymap, settings.composeTable) = try keymapOptions.keymapForReading(command: "demo")
            if !realDevices.isEmpty && !recorded && recordings == nil {
                writeLine("ringloop demo: monitoring \(realDevices.count) device(s) in /dev/input (Ctrl-C to stop)")
                settings.command = "demo"  // the line above says what it watches
                return try Monitor.monitor(.folder("/dev/input", names: nil), settings)
            }
            let folder = try Self.recordingsFolder(recordings)
            let files = folderEntries(folder).filter { $0.hasSuffix(".evemu") }.sorted()
            var loaded: [[Recording]] = []
            var labels: [String] = []
            for file in files {
                let recording: Recording
                do { recording = try Recording.load(contentsOf: folder + "/" + file) } catch { throw Failure(error) }
                guard recording.description != nil else { continue }
                loaded.append([recording])
                labels.append(file)
            }
            settings.duration = nil
            settings.command = "demo"
            settings.announce = ("ringloop demo: \(loaded.count) recordings from \(folder)", labels)
            try Monitor.monitor(.recordings(loaded, speed: speed), settings)
        }
    }

    /// The folder of recordings: `--recordings` if given (it must be a folder holding
    /// `.evemu` files: no guess is made in its place), else the bundled `devices/`.
    static func recordingsFolder(_ explicit: String?) throws(Failure) -> String {
        guard let explicit else {
            guard let bundled = bundledRecordingsFolder(nil) else {
                printError(
                    "ringloop demo: the bundled recordings are in the package's devices/; run from there or pass --recordings FOLDER")
                throw .missing(path: "devices")
            }
            return bundled
        }
        let kind: InputPath
        do { kind = try InputPath.classify(explicit) } catch {
            if case .wrongKind(let path, let found, _) = error {
                throw .wrongKind(path: path, found: found, expected: "a folder of .evemu recordings")
            }
            throw error
        }
        guard kind == .folder else {
            throw .wrongKind(
                path: explicit, found: kind == .node ? "is an evdev device node" : "is a file", expected: "a folder of .evemu recordings")
        }
        guard folderEntries(explicit).contains(where: { $0.hasSuffix(".evemu") }) else {
            throw .wrongKind(path: explicit, found: "is a folder with no .evemu recording", expected: "a folder of .evemu recordings")
        }
        return explicit
    }
}
