import ArgumentParser
import RingLoop
import RingLoopDevices
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Host recordings as virtual devices and replay them.",
        discussion: """
            Prints each device's node first, one per line (so another program can open
            them), then replays and keeps the devices until the replay ends or Ctrl-C.
            With --wait-for-readers N the replay starts once N readers read each node
            (FUSE nodes count the opens that have read or polled; --wait then bounds
            the wait); otherwise after --wait seconds. Progress goes to standard error
            at most once a second.

            Every device of a file is hosted and replayed on the file's clock (a libinput
            record of several devices, an evemu file of several descriptions); several
            files replay together, each from its own start. A file of events only replays
            onto the device described in --description FILE, as evemu-play takes it. A
            file may be a FIFO (`<(...)`); up to 4096 devices in all.

            A FUSE node whose device has FF_RUMBLE takes rumble effects (EVIOCSFF,
            EV_FF, EVIOCRMFF, as ringloop rumble sends them); what it was asked is
            printed at the end.

            --mount must name a folder where nothing is mounted; one that exists is left
            in place at the end, one made for the replay is removed.

            FUSE nodes and standard tools: evemu-record, evtest and libinput cannot grab a
            FUSE node (they pass EVIOCGRAB's argument by value, which FUSE cannot carry):
            read them with `ringloop record`, `ringloop monitor --raw` or `ringloop
            describe`, or use --backend uinput where /dev/uinput exists.

            Examples:
              ringloop replay devices/keyboard.evemu
              ringloop replay devices/touchpad.evemu --wait-for-readers 1 --backend fuse
              ringloop replay devices/touchpad.evemu --speed 0.5 --mount /tmp/vdev
              ringloop replay capture.yml --asap
              ringloop replay "Touchpad.tap.events" --description "Touchpad.desc"
            """
    )

    @Argument(help: "The recordings (evemu, or libinput record YAML), replayed together.", completion: .file())
    var recordings: [String]

    @Option(help: "The device description (evemu or libinput record) for a recording of events only.", completion: .file())
    var description: String?

    @Option(help: "Speed factor (2 = twice as fast).")
    var speed: Double?

    @Flag(help: "As fast as possible.")
    var asap = false

    @Option(help: "uinput or fuse (default: uinput where usable, else fuse).")
    var backend: VirtualDeviceBackend?

    @Option(help: "The FUSE folder to mount (default: /tmp/ringloop-replay-PID).", completion: .directory)
    var mount: String?

    @Option(help: "Start once this many readers read each node (FUSE nodes only).")
    var waitForReaders: Int?

    @Option(help: "Seconds to wait before replaying (default 1); with --wait-for-readers, the most to wait for them.")
    var wait: Double?

    @Flag(help: "Keep the devices after the replay until Ctrl-C.")
    var keep = false

    func validate() throws {
        guard !recordings.isEmpty else { throw ValidationError("give at least one recording to replay") }
        try OptionRange.speed(speed)
        if speed != nil && asap { throw ValidationError("give --speed or --asap, not both") }
        if let wait { try OptionRange.wait(wait) }
        if let waitForReaders, !(1...1024).contains(waitForReaders) {
            throw ValidationError("--wait-for-readers must be between 1 and 1024, got \(waitForReaders)")
        }
        if waitForReaders != nil, backend == .uinput {
            throw ValidationError(
                "--wait-for-readers counts the readers of FUSE nodes (opens that read or polled); the kernel does not say who has a uinput node open (use --wait SECONDS)"
            )
        }
    }

    func run() throws {
        try Failure.reporting("replay") {
            // Read before the signals are blocked: a FIFO with no writer waits in open, and
            // Ctrl-C must still end the command there.
            let files = try recordings.map { path throws(Failure) in
                try RecordingInput.load(path, description: description, command: "replay").recordings
            }
            let loop = RingRunLoop.current
            let session = ThreadLock<ReplaySession?>(nil)
            // A stop handed to the loop, so one asked for before it runs (a closed standard
            // output while the nodes are printed) is not lost.
            let stop: @Sendable () -> Void = {
                session.withLock { $0 }?.cancel()
                loop.perform(inModes: [.common]) { loop.stop() }
                loop.wakeUp()
            }
            // The signal that ended the command, 0 if none did.
            let endedBy = Atomic<Int32>(0)
            // Before the FUSE server's threads start: they inherit the blocked signals.
            let signals = try LoopSignalSource.ending(on: loop) { signal in
                endedBy.store(signal, ordering: .releasing)
                stop()
            }
            defer { signals.invalidate() }
            StandardOutput.whenClosed(stop)
            let devices = files.reduce(0) { $0 + $1.count }
            if backend != .fuse { DescriptorLimit.raise(toHold: devices) }
            let replay: ReplaySession
            do {
                replay = try ReplaySession(
                    files: files,
                    configuration: .init(
                        backend: waitForReaders != nil ? .fuse : backend, folderPath: mount,
                        speed: asap ? .asFastAsPossible : speed.map { .scaled($0) } ?? .recorded,
                        readers: waitForReaders ?? 0, readersTimeout: waitForReaders != nil ? wait.map(Self.duration) : nil,
                        startDelay: waitForReaders == nil ? Self.duration(wait ?? 1) : .zero,
                        settleTime: .milliseconds(200)))
            } catch {
                throw Failure(error)
            }
            session.withLock { $0 = replay }
            defer { replay.close() }
            // Unbuffered, so a program reading our output learns the nodes at once.
            StandardOutput.write(replay.nodePaths.map { $0 + "\n" }.joined())
            if replay.backend == .fuse {
                printError(
                    "ringloop replay: FUSE nodes: evemu-record, evtest and libinput cannot grab them (EVIOCGRAB fails);"
                        + " read them with ringloop record, monitor --raw or describe")
            }
            let keep = keep
            let readers = waitForReaders ?? 0
            // The last count of nodes with their readers that was said (-1: none yet): said
            // again only when it changes.
            let saidReady = Atomic<Int>(-1)
            let finishedAll = Atomic<Bool>(false)
            replay.start(
                progress: { progress in
                    switch progress.phase {
                    case .waitingForReaders(let ready, let nodes):
                        let said = saidReady.exchange(ready, ordering: .acquiringAndReleasing)
                        if said == -1 {
                            printError(
                                "ringloop replay: waiting for \(readers) reader\(readers == 1 ? "" : "s") of each node before the"
                                    + " replay starts: \(ready) of \(nodes) node\(nodes == 1 ? " has" : "s have") them")
                        } else if said != ready {
                            printError("ringloop replay: \(ready) of \(nodes) node\(nodes == 1 ? " has" : "s have") their readers")
                        }
                    case .replaying:
                        printError("ringloop replay: replaying: \(progress.framesSent) of \(progress.frameCount) frames")
                    }
                },
                finished: { outcome in
                    let complete = outcome.failures.isEmpty && !outcome.cancelled
                    finishedAll.store(complete, ordering: .releasing)
                    if keep && complete {
                        printError(
                            "ringloop replay: \(outcome.framesSent) of \(outcome.frameCount) frames replayed;"
                                + " the devices stay until Ctrl-C")
                    } else {
                        stop()
                    }
                })
            // Something in the default mode, so the loop runs until stopped.
            let keepAlive = LoopSource {}
            loop.add(keepAlive, to: .default)
            loop.run(mode: .default, until: .distantFuture)
            keepAlive.invalidate()
            replay.cancel()
            let outcome = replay.wait()
            let finished = finishedAll.load(ordering: .acquiring)
            // After a closed standard output, no summary (as a program SIGPIPE ended); with
            // --keep, the line was said when the replay ended.
            if StandardOutput.isOpen && !(keep && finished) {
                printError("ringloop replay: \(outcome.framesSent) of \(outcome.frameCount) frames replayed")
            }
            Self.reportForceFeedback(of: replay.devices.joined(), command: "replay")
            if let failure = outcome.failures.first { throw Failure(failure) }
            // Interrupted before the end: 128 + the signal, as the shell's convention says;
            // a --keep replay that had ended was only waiting for it.
            let signal = endedBy.load(ordering: .acquiring)
            if signal != 0 && !finished { throw Failure.interrupted(signal: signal) }
        }
    }

    static func duration(_ seconds: Double) -> Duration { .milliseconds(Int64(seconds * 1000)) }
}

extension VirtualDeviceBackend: ExpressibleByArgument {}

/// The process's limit on open descriptors.
enum DescriptorLimit {
    /// Raises the soft limit toward the hard one so `devices` uinput devices (a descriptor
    /// each) fit, with room for the rest; says so on standard error if the hard limit is
    /// too low.
    static func raise(toHold devices: Int) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = rlim_t(devices + 256)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        if limit.rlim_cur < wanted {
            printError("ringloop replay: \(devices) uinput devices need \(wanted) descriptors; the limit is \(limit.rlim_max)")
        }
    }
}

extension ReplayCommand {
    /// Prints, on standard error, what programs asked the hosted devices' force feedback to
    /// do (a test rig's check of an app's rumble): one line a device that was asked.
    static func reportForceFeedback(of devices: some Sequence<any VirtualInputDevice>, command: String) {
        for node in devices {
            // One reading of the log: each takes the node's lock and copies it.
            let requests = node.forceFeedbackRequests
            guard !requests.isEmpty else { continue }
            printError("ringloop \(command): \(node.nodePath) force feedback: " + requests.map(\.description).joined(separator: "; "))
        }
    }
}
