import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import Synchronization

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Host a recording as a virtual device and replay it.",
        discussion: """
            Prints the node's path first (so another program can open it), waits --wait
            seconds for readers, replays, and keeps the device until the replay ends or
            Ctrl-C.

            Examples:
              ringloop replay devices/keyboard.evemu
              ringloop replay devices/touchpad.evemu --speed 0.5 --backend fuse --mount /tmp/vdev
              ringloop replay capture.yml --asap
            """
    )

    @Argument(help: "The recording (.evemu, or libinput record YAML with one device).")
    var recording: String

    @Option(help: "Speed factor (2 = twice as fast).")
    var speed: Double?

    @Flag(help: "As fast as possible.")
    var asap = false

    @Option(help: "uinput or fuse (default: uinput where usable, else fuse).")
    var backend: String?

    @Option(help: "The FUSE folder to mount (default: /tmp/ringloop-replay-PID).")
    var mount: String?

    @Option(help: "Seconds to wait for readers before replaying.")
    var wait: Double = 1

    @Flag(help: "Keep the device after the replay until Ctrl-C.")
    var keep = false

    func validate() throws {
        if access(recording, F_OK) != 0 { throw ValidationError("\(recording): no such file") }
        if let speed, speed <= 0 { throw ValidationError("--speed must be positive, got \(speed)") }
        if speed != nil && asap { throw ValidationError("give --speed or --asap, not both") }
        if let backend, VirtualDeviceBackend(rawValue: backend) == nil {
            throw ValidationError("--backend must be uinput or fuse, got '\(backend)'")
        }
        guard wait >= 0 else { throw ValidationError("--wait must not be negative") }
    }

    func run() throws {
        let signals = SignalWatcher()
        let loaded: Recording
        do {
            loaded = try Recording.load(contentsOf: recording)
        } catch {
            printError("ringloop replay: \(error)")
            throw ExitCode(1)
        }
        guard let description = loaded.description else {
            printError("ringloop replay: \(recording) has events only; replay needs the device description (N:, I:, B: lines)")
            throw ExitCode(1)
        }
        let host: VirtualDeviceHost
        let device: any VirtualInputDevice
        do {
            host = try VirtualDeviceHost(
                backend: backend.flatMap(VirtualDeviceBackend.init(rawValue:)),
                folderPath: mount ?? "/tmp/ringloop-replay-\(getpid())")
            device = try host.create(description, forReplay: true)
        } catch {
            printError("ringloop replay: \(error)")
            throw ExitCode(1)
        }
        defer { host.close() }
        // Unbuffered, so a program reading our output learns the node at once.
        FileHandle.standardOutput.write(Data((device.nodePath + "\n").utf8))
        let loop = RingRunLoop.current
        let stop = Atomic<Bool>(false)
        signals.watch(on: loop) { _ in
            stop.store(true, ordering: .relaxed)
            loop.stop()
        }
        let replaySpeed: ReplaySpeed = asap ? .asFastAsPossible : speed.map { .scaled($0) } ?? .recorded
        let done = Atomic<Bool>(false)
        let frames = Atomic<Int>(0)
        let keep = self.keep
        let thread = Thread {
            if self.wait > 0 { usleep(UInt32(self.wait * 1_000_000)) }
            let sent = (try? Replay.play(loaded, to: device, speed: replaySpeed, shouldStop: { stop.load(ordering: .relaxed) })) ?? 0
            frames.store(sent, ordering: .relaxed)
            done.store(true, ordering: .releasing)
            if !keep {
                loop.perform(inModes: [.common]) { loop.stop() }
                loop.wakeUp()
            }
        }
        thread.start()
        let total = Replay.frames(of: loaded).count
        let progress = LoopTimer(after: .milliseconds(500), repeating: .milliseconds(500)) { _ in
            if !done.load(ordering: .acquiring) { printError("ringloop replay: replaying \(total) frames…") }
        }
        loop.add(progress, to: .common)
        loop.add(LoopSource {}, to: .default)
        loop.run(mode: .default, until: .distantFuture)
        stop.store(true, ordering: .relaxed)
        while !done.load(ordering: .acquiring) { usleep(1000) }
        printError("ringloop replay: \(frames.load(ordering: .relaxed)) of \(total) frames replayed")
    }
}
