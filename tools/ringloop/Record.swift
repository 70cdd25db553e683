import ArgumentParser
import CLibEvdev
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import SystemPackage

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record a device, real or virtual, as evemu or libinput record writes it.",
        discussion: """
            Writes the device's description, then its events until Ctrl-C or --duration.
            Times are relative to the first event.

            Examples:
              ringloop record /dev/input/event3 -o keyboard.evemu
              ringloop record /dev/input/event5 --duration 10
              ringloop record /dev/input/event5 --format libinput -o touchpad.yml
            """
    )

    @Argument(help: "The device node.")
    var device: String

    @Option(name: .shortAndLong, help: "Output file (default: standard output).")
    var output: String?

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Option(help: "evemu (evemu-record's text) or libinput (libinput record's YAML).")
    var format = "evemu"

    func validate() throws {
        guard format == "evemu" || format == "libinput" else {
            throw ValidationError("--format must be evemu or libinput, got '\(format)'")
        }
        if access(device, F_OK) != 0 { throw ValidationError("\(device): no such device") }
        try OptionRange.duration(duration)
    }

    func run() throws {
        let signals = SignalWatcher()
        let fd = open(device, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            printError("ringloop record: \(device): cannot open: \(openFailure(errno))")
            throw ExitCode(1)
        }
        defer { close(fd) }
        // The clock first: switching it once events are queued drops them (the kernel
        // flushes the reader's buffer and queues SYN_DROPPED).
        var clock = CLOCK_MONOTONIC
        _ = ioctl(fd, UInt(ringloop_eviocsclockid()), &clock)
        let description: InputDeviceDescription
        do {
            description = try InputDeviceDescription(fileDescriptor: fd)
        } catch {
            printError("ringloop record: \(device): not an evdev device (\(error))")
            throw ExitCode(1)
        }
        let loop = RingRunLoop.current
        // What the source's callback builds, on this thread: the events (timestamps made
        // relative to the first), the first one's time, and a read buffer.
        struct Capture {
            var events: [InputEvent] = []
            var first: Int64?
            var buffer = [UInt8](repeating: 0, count: InputEvent.size * 256)
        }
        let capture = LoopBound(Capture(), loop: loop)
        // Reads until the node has nothing more (or is gone): at each wake-up, and once
        // more when a signal or the duration ends the recording, so events the kernel
        // had already queued for this reader are kept.
        @Sendable func drain() {
            while true {
                let count = capture.value.buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 {
                    if count < 0, errno == ENODEV { loop.stop() }
                    break
                }
                let events = capture.value.buffer.withUnsafeBytes { raw in
                    (0..<(count / InputEvent.size)).map { InputEvent(bytes: raw.baseAddress! + $0 * InputEvent.size) }
                }
                for var event in events {
                    let start = capture.value.first ?? event.timeMicroseconds
                    capture.value.first = start
                    let relative = event.timeMicroseconds - start
                    (event.seconds, event.microseconds) = (relative / 1_000_000, Int32(relative % 1_000_000))
                    capture.value.events.append(event)
                }
            }
        }
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { reported in
            drain()
            if !reported.isDisjoint(with: [.hangUp, .error]) { loop.stop() }
        }
        loop.add(source, to: .default)
        signals.watch(on: loop) { _ in loop.stop() }
        if let duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in loop.stop() }, to: .default)
        }
        printError("ringloop record: recording \(description.name) (\(device)); Ctrl-C to stop")
        loop.run(mode: .default, until: .distantFuture)
        source.invalidate()
        drain()
        let recording = Recording(
            description: description, events: capture.value.events, notes: ["Recorded by ringloop record from \(device)"])
        let text =
            format == "libinput"
            ? LibinputRecording.write([recording], nodes: [device]) : EvemuFormat.write(recording)
        if let output {
            do { try Recording.write(text, to: output) } catch {
                printError("ringloop record: \(error)")
                throw ExitCode(1)
            }
            printError("ringloop record: \(capture.value.events.count) events written to \(output)")
        } else {
            print(text, terminator: "")
        }
    }
}
