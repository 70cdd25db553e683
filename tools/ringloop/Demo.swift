import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopHID
import RingLoopToolSupport
import Synchronization

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show input flowing through the whole chain: real devices if readable, else the bundled recordings.",
        discussion: """
            With readable devices in /dev/input, monitors them until Ctrl-C (or --duration).
            Otherwise hosts the recordings in devices/ as virtual devices (uinput where
            usable, else a FUSE folder), replays them at recorded speed through the whole
            chain (event-system thread → client loop → handlers), prints each HID event
            with its device→handler latency, and ends with a summary.

            Examples:
              ringloop demo
              ringloop demo --speed 4 --quiet
              ringloop demo --recordings ~/my-recordings
            """
    )

    @Option(help: "Folder of .evemu recordings (default: devices/ of this package).")
    var recordings: String?

    @Option(help: "Replay speed factor (1 = recorded pace).")
    var speed: Double = 1

    @Option(help: "With real devices: stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Print only the summary.")
    var quiet = false

    @Flag(help: "Use the bundled recordings even when real devices are readable.")
    var recorded = false

    func validate() throws {
        try OptionRange.speed(speed)
        try OptionRange.duration(duration)
    }

    func run() throws {
        let signals = SignalWatcher()
        let realDevices =
            (try? FileManager.default.contentsOfDirectory(atPath: "/dev/input"))?
            .filter { $0.hasPrefix("event") && access("/dev/input/\($0)", R_OK) == 0 } ?? []
        if !realDevices.isEmpty && !recorded {
            writeLine("ringloop demo: monitoring \(realDevices.count) device(s) in /dev/input (Ctrl-C to stop)")
            try Monitor.monitorDirectory(
                "/dev/input", names: nil, json: false, grab: false, quiet: quiet, duration: duration, signals: signals,
                hosted: nil)
            return
        }
        guard let folder = bundledRecordingsFolder(recordings) else {
            printError("ringloop demo: no recordings found (looked for devices/ here and beside the package); pass --recordings DIR")
            throw ExitCode(1)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".evemu") }.sorted()
        var loaded: [(String, Recording)] = []
        for file in files {
            do {
                loaded.append((file, try Recording.load(contentsOf: folder + "/" + file)))
            } catch {
                printError("ringloop demo: \(error)")
                throw ExitCode(1)
            }
        }
        let host: VirtualDeviceHost
        do {
            host = try VirtualDeviceHost(folderPath: "/tmp/ringloop-demo-\(getpid())")
        } catch {
            printError("ringloop demo: \(error)")
            throw ExitCode(1)
        }
        defer { host.close() }
        var devices: [(String, Recording, any VirtualInputDevice)] = []
        for (file, recording) in loaded {
            guard let description = recording.description else { continue }
            do {
                devices.append((file, recording, try host.create(description, bufferSize: 4096, forReplay: true)))
            } catch {
                printError("ringloop demo: \(file): \(error)")
                throw ExitCode(1)
            }
        }
        writeLine("ringloop demo: \(devices.count) recordings from \(folder) as \(host.backend) virtual devices")
        for (file, _, device) in devices { writeLine("  \(device.nodePath)  ←  \(file)") }
        writeLine("")
        let directory = host.backend == .fuse ? host.folderPath : "/dev/input"
        let names = Set(devices.map { URL(fileURLWithPath: $0.2.nodePath).lastPathComponent })
        try Monitor.monitorDirectory(
            directory, names: names, json: false, grab: false, quiet: quiet, duration: nil, signals: signals,
            hosted: (devices.map { [(recording: $0.1, device: $0.2)] }, speed))
    }
}
