import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopToolSupport

#if canImport(Glibc)
import Glibc
#endif

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record a device, real or virtual, as evemu or libinput record writes it.",
        discussion: """
            Writes the device's description, then its events until Ctrl-C, --duration, or
            the device's removal. Times are relative to the first event.

            -o writes as a shell's `>` would: into a FIFO or a character device; a regular
            file is replaced only once the whole recording is written, so a failed write
            (a full disk) leaves no partial file and ends with status 74; a folder is
            refused.

            Examples:
              ringloop record /dev/input/event3 -o keyboard.evemu
              ringloop record /dev/input/event5 --duration 10
              ringloop record /dev/input/event5 --format libinput -o touchpad.yml
            """
    )

    /// The formats a recording is written in.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case evemu, libinput
    }

    @Argument(help: "The device node (none: the list of devices).", completion: .file())
    var device: String?

    @Option(name: .shortAndLong, help: "Output file (default: standard output).", completion: .file())
    var output: String?

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Option(help: "evemu (evemu-record's text) or libinput (libinput record's YAML).")
    var format: Format = .evemu

    func validate() throws {
        try OptionRange.duration(duration)
    }

    func run() throws {
        try Failure.reporting("record") {
            guard let device else {
                throw Devices.noInputGiven("an evdev device node", otherwise: "ringloop replay makes one from a recording")
            }
            let characterDevice = try InputPath.requireNodeWithoutOpening(device, expected: "an evdev device node")
            // Opened before the signals are blocked: a FIFO waits here for its reader, and
            // Ctrl-C must still end the command. A folder is refused before recording.
            let file = try output.map { path throws(OutputFileError) in try OutputFile(path: path) }
            if let file, file.followedLink {
                printError("ringloop record: writing to \(file.target) (\(file.path) is a symbolic link to it)")
            }
            let loop = RingRunLoop.current
            let recorder: Recorder
            do throws(RecorderError) { recorder = try Recorder(nodePath: device, loop: loop) } catch {
                if case .notEvdev = error {
                    throw Failure.wrongKind(
                        path: device,
                        found: characterDevice ? "is a character device, not an evdev device" : "is not an evdev device node",
                        expected: "an evdev device node")
                }
                throw Failure(error)
            }
            let signals = try LoopSignalSource.ending(on: loop) { _ in loop.stop() }
            defer { signals.invalidate() }
            recorder.start { _ in loop.stop() }
            if let duration {
                loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in loop.stop() }, to: .common)
            }
            printError("ringloop record: recording \(recorder.description.name) (\(device)); Ctrl-C to stop")
            loop.run(mode: .default, until: .distantFuture)
            recorder.stop()
            switch recorder.end {
            case .removed: printError("ringloop record: \(device): the device was removed; the recording ends there")
            case .failed(let errno): throw Failure.ioError("\(device): error reading: \(errno)")
            default: break
            }
            let recording = recorder.recording
            let text =
                format == .libinput
                ? LibinputRecording.write([recording], nodes: [device]) : EvemuFormat.write(recording, kernel: kernelRelease())
            guard let file else {
                StandardOutput.write(text)
                return
            }
            try file.write(text)
            try file.commit()
            printError("ringloop record: \(recording.events.count) events written to \(output!)")
        }
    }
}
