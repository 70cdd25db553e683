import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import Synchronization

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Host recordings as virtual devices and replay them.",
        discussion: """
            Prints each device's node first, one per line (so another program can open
            them), waits --wait seconds for readers, replays, and keeps the devices until
            the replay ends or Ctrl-C. Every device of the file is hosted and replayed on
            the file's clock (a libinput record of several devices, an evemu file of
            several descriptions). A file of events only replays onto the device described
            in --description FILE, as evemu-play takes it. Several files replay together:
            every file starts at the same moment, each on its own clock.

            Examples:
              ringloop replay devices/keyboard.evemu
              ringloop replay devices/touchpad.evemu --speed 0.5 --backend fuse --mount /tmp/vdev
              ringloop replay capture.yml --asap
              ringloop replay "Touchpad.tap.events" --description "Touchpad.desc"
              ringloop replay devices/keyboard.evemu devices/touchpad.evemu
            """
    )

    @Argument(help: "The recordings (evemu, or libinput record YAML), replayed together.")
    var recordings: [String]

    @Option(help: "The device description (evemu or libinput record) for a recording of events only.")
    var description: String?

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
        guard !recordings.isEmpty else { throw ValidationError("give at least one recording to replay") }
        for recording in recordings where access(recording, F_OK) != 0 {
            throw ValidationError("\(recording): no such file")
        }
        try OptionRange.speed(speed)
        if speed != nil && asap { throw ValidationError("give --speed or --asap, not both") }
        if let backend, VirtualDeviceBackend(rawValue: backend) == nil {
            throw ValidationError("--backend must be uinput or fuse, got '\(backend)'")
        }
        try OptionRange.wait(wait)
        if let description, access(description, R_OK) != 0 {
            throw ValidationError("--description \(description): no such file")
        }
    }

    func run() throws {
        let signals = SignalWatcher()
        let files = try recordings.map { try RecordingInput.load($0, description: description, command: "replay") }
        let host: VirtualDeviceHost
        var groups: [[(recording: Recording, device: any VirtualInputDevice)]] = []
        do {
            host = try VirtualDeviceHost(
                backend: backend.flatMap(VirtualDeviceBackend.init(rawValue:)),
                folderPath: mount ?? "/tmp/ringloop-replay-\(getpid())")
        } catch {
            printError("ringloop replay: \(error)")
            throw ExitCode(1)
        }
        defer { host.close() }
        do {
            for file in files {
                var pairs: [(recording: Recording, device: any VirtualInputDevice)] = []
                for loaded in file.recordings {
                    pairs.append((loaded, try host.create(loaded.description!, forReplay: true)))
                }
                groups.append(pairs)
            }
        } catch {
            printError("ringloop replay: \(error)")
            throw ExitCode(1)
        }
        // Unbuffered, so a program reading our output learns the nodes at once.
        let pairs = groups.flatMap { $0 }
        FileHandle.standardOutput.write(Data(pairs.map { $0.device.nodePath + "\n" }.joined().utf8))
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
        let toPlay = UncheckedSendable(groups)
        let thread = Thread {
            // Wait for readers in slices, so a signal ends the command at any moment.
            let readersBy = MonotonicInstant.now + .milliseconds(Int(self.wait * 1000))
            while MonotonicInstant.now < readersBy, !stop.load(ordering: .relaxed) { usleep(20_000) }
            // One thread per file, started together: each file's devices on its clock.
            let finished = Atomic<Int>(0)
            for group in toPlay.value {
                let pairs = UncheckedSendable(group)
                Thread {
                    let sent =
                        (try? Replay.play(
                            pairs.value, timeline: .sharedClock, speed: replaySpeed,
                            shouldStop: { stop.load(ordering: .relaxed) })) ?? 0
                    frames.add(sent, ordering: .relaxed)
                    finished.add(1, ordering: .releasing)
                }.start()
            }
            while finished.load(ordering: .acquiring) < toPlay.value.count { usleep(1000) }
            done.store(true, ordering: .releasing)
            if !keep {
                // Readers get the last frames before the devices go: a removed evdev
                // device's unread events are lost (the kernel's read says ENODEV).
                loop.perform(after: .milliseconds(200), inModes: [.common]) { loop.stop() }
                loop.wakeUp()
            }
        }
        thread.start()
        let total = pairs.reduce(0) { $0 + Replay.frames(of: $1.recording).count }
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
