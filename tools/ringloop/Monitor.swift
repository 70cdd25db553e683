import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopHID
import Synchronization

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print live HID events, one per line, with per-event latency.",
        discussion: """
            Arguments are evdev device nodes (/dev/input/event3), one folder of them, or
            recordings (evemu files or libinput record YAML). A folder is monitored alone:
            every eventN node in it and those added later (hotplug). Recordings are hosted
            as virtual devices and replayed: every device of a file, on the file's clock; a
            file of events only replays onto the device described in --description FILE.
            Anything else (/dev/null, a socket) is refused with the reason.
            Without arguments, every device in /dev/input. --json writes one JSON object
            per line (see README for the names). A summary follows on exit (on standard error
            with --json, so standard output stays JSON lines).
            --raw prints one device's evdev events as evtest does (its capability header,
            then a line per event; --json: {"kind":"raw",...} objects): a node, or a
            recording of one device, hosted and replayed.
            --gestures also recognizes gestures on touchscreens (UIKit's recognizers) and
            touchpads (libinput's), printed as they change state ({"kind":"gesture",...}),
            and on motion sensors shakes (gesture "shake") and orientation changes
            ({"kind":"orientation","orientation":...}).
            A pass of the loop longer than --stall-threshold milliseconds is a stall: it is
            reported on standard error and counted in the summary.

            Examples:
              ringloop monitor /dev/input/event3
              ringloop monitor devices/touchpad.evemu --json
              ringloop monitor taps.events --description touchpad.desc
              ringloop monitor --grab /dev/input/event5
              ringloop monitor --raw devices/keyboard.evemu
              ringloop monitor --gestures devices/gestures/touchscreen-pinch-out.evemu
              ringloop monitor --gestures --filter motion devices/motion/dualsense-shake.evemu
              ringloop monitor --server panel
            --server NAME attaches to an event server (ringloop serve NAME) as a client:
            it prints what the server sends this client (the focused one gets keys and
            touches), and attaches again when a server of that name comes back.
            """
    )

    @Argument(help: "Device nodes or recordings.")
    var inputs: [String] = []

    @Flag(help: "One JSON object per line.")
    var json = false

    @Flag(help: "Grab the devices (EVIOCGRAB): no other reader gets their events.")
    var grab = false

    @Flag(help: "One device's evdev events as evtest prints them, capability header first.")
    var raw = false

    @Option(help: "Print only these event kinds, comma-separated (key, button, pointerMotion, scroll, digitizer…).")
    var filter: String?

    @Option(help: "Print only the events of these device classes, comma-separated (keyboard, pointer, touchpad…).")
    var deviceClass: String?

    /// The parsed --filter and --device-class.
    func eventFilter() throws -> LiveView.Filter {
        LiveView.Filter(
            kinds: try filter.map { try LiveView.Filter.parse($0, "--filter", as: HIDEvent.Kind.self) },
            classes: try deviceClass.map { try LiveView.Filter.parse($0, "--device-class", as: HIDDeviceClass.self) })
    }

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Recognize gestures on touchscreens and touchpads, shakes and orientation on motion sensors, and print them.")
    var gestures = false

    @Option(help: "A loop pass longer than this many milliseconds is reported as a stall (1–60000).")
    var stallThreshold: Double = 100

    @Option(help: "Replay speed factor for recordings.")
    var speed: Double = 1

    @Option(help: "The device description (evemu or libinput record) for recordings of events only.")
    var description: String?

    @Option(help: "Attach to the event server NAME (ringloop serve) as its client instead of reading devices.")
    var server: String?

    @Flag(help: "With --server: ask for the focus on attaching.")
    var requestFocus = false

    func validate() throws {
        try validateServer()
        for input in inputs where access(input, F_OK) != 0 {
            throw ValidationError("\(input): no such file or device")
        }
        _ = try eventFilter()
        if raw, filter != nil || deviceClass != nil {
            throw ValidationError("--filter and --device-class choose HID events; --raw prints every evdev event")
        }
        try OptionRange.speed(speed)
        try OptionRange.duration(duration)
        guard stallThreshold.isFinite, stallThreshold >= 1, stallThreshold <= 60_000 else {
            throw ValidationError("--stall-threshold: \(stallThreshold) is not between 1 and 60000 milliseconds")
        }
        if raw, gestures { throw ValidationError("--gestures recognizes HID events; --raw prints evdev events") }
        if let description, access(description, R_OK) != 0 {
            throw ValidationError("--description \(description): no such file")
        }
    }

    /// What a monitor argument is.
    enum InputKind: Equatable {
        case node, folder, recording
    }

    /// Classifies `path`, or says why it cannot be monitored.
    static func kind(of path: String) throws(ValidationError) -> InputKind {
        var info = stat()
        guard stat(path, &info) == 0 else { throw ValidationError("\(path): \(String(cString: strerror(errno)))") }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .folder
        case S_IFREG:
            // A virtual device's node (a FUSE file) is a regular file that answers evdev's
            // ioctls; reading it as a recording would wait for its events for ever.
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw ValidationError("\(path): \(openFailure(errno))") }
            defer { close(fd) }
            return (try? InputDeviceDescription(fileDescriptor: fd)) == nil ? .recording : .node
        case S_IFCHR:
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw ValidationError("\(path): \(openFailure(errno))") }
            defer { close(fd) }
            do { _ = try InputDeviceDescription(fileDescriptor: fd) } catch {
                throw ValidationError("\(path): not an evdev device (\(error))")
            }
            return .node
        default:
            throw ValidationError("\(path): not an evdev device node, a folder of them, or a recording")
        }
    }

    func run() throws {
        let signals = SignalWatcher()
        if let server { return try monitorServer(server, signals: signals) }
        var kinds: [String: InputKind] = [:]
        for input in inputs {
            do { kinds[input] = try Self.kind(of: input) } catch {
                printError("ringloop monitor: \(error.message)")
                throw ExitCode(1)
            }
        }
        if raw { return try runRaw(kinds: kinds, signals: signals) }
        let folders = inputs.filter { kinds[$0] == .folder }
        if let folder = folders.first {
            guard inputs.count == 1 else {
                printError("ringloop monitor: a folder is monitored alone (every evdev node in it); got \(inputs.count) arguments")
                throw ExitCode(1)
            }
            try Self.monitorDirectory(
                folder, names: nil, json: json, grab: grab, quiet: false, duration: duration, signals: signals, hosted: nil,
                filter: try eventFilter(), watch: watchSettings)
            return
        }
        let nodes = inputs.filter { kinds[$0] == .node }
        let recordingPaths = inputs.filter { kinds[$0] == .recording }
        if recordingPaths.isEmpty {
            if nodes.isEmpty {
                try Self.monitorDirectory(
                    "/dev/input", names: nil, json: json, grab: grab, quiet: false, duration: duration, signals: signals, hosted: nil,
                    filter: try eventFilter(), watch: watchSettings)
            } else {
                let directories = Set(nodes.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
                guard directories.count == 1, let directory = directories.first else {
                    printError("ringloop monitor: devices must share one folder")
                    throw ExitCode(1)
                }
                try Self.monitorDirectory(
                    directory, names: Set(nodes.map { URL(fileURLWithPath: $0).lastPathComponent }), json: json, grab: grab,
                    quiet: false, duration: duration, signals: signals, hosted: nil,
                    filter: try eventFilter(), watch: watchSettings)
            }
            return
        }
        var files: [RecordingInput.File] = []
        for path in recordingPaths {
            files.append(try RecordingInput.load(path, description: description, command: "monitor"))
        }
        let host: VirtualDeviceHost
        do {
            host = try VirtualDeviceHost(folderPath: "/tmp/ringloop-monitor-\(getpid())")
        } catch {
            printError("ringloop monitor: \(error)")
            throw ExitCode(1)
        }
        defer { host.close() }
        var hosted: [[(recording: Recording, device: any VirtualInputDevice)]] = []
        for file in files {
            var devices: [(recording: Recording, device: any VirtualInputDevice)] = []
            for recording in file.recordings {
                do {
                    devices.append((recording, try host.create(recording.description!, bufferSize: 4096, forReplay: true)))
                } catch {
                    printError("ringloop monitor: \(error)")
                    throw ExitCode(1)
                }
            }
            hosted.append(devices)
        }
        let directory = host.backend == .fuse ? host.folderPath : "/dev/input"
        try Self.monitorDirectory(
            directory, names: Set(hosted.joined().map { URL(fileURLWithPath: $0.device.nodePath).lastPathComponent }),
            json: json, grab: grab, quiet: false, duration: duration, signals: signals, hosted: (hosted, speed),
            filter: try eventFilter(), watch: watchSettings)
    }

    /// What the monitor watches besides events: gestures, and stalls of its loop.
    struct WatchSettings {
        var gestures = false
        var stallThreshold: Duration = .milliseconds(100)
    }

    var watchSettings: WatchSettings {
        WatchSettings(gestures: gestures, stallThreshold: .microseconds(Int64(stallThreshold * 1000)))
    }

    /// Runs the chain on the main loop over `directory` until a signal, `duration`, or
    /// (with `hosted`) the end of every replay; prints the summary.
    static func monitorDirectory(
        _ directory: String, names: Set<String>?, json: Bool, grab: Bool, quiet: Bool, duration: Double?,
        signals: SignalWatcher, hosted: (files: [[(recording: Recording, device: any VirtualInputDevice)]], speed: Double)?,
        filter: LiveView.Filter = .all, watch: WatchSettings = WatchSettings()
    ) throws {
        let loop = RingRunLoop.main
        let system = HIDEventSystem(
            configuration: .init(deviceDirectory: directory, shape: .dedicatedThread, grabDevices: grab, nodeNames: names),
            loop: loop)
        let view = LiveView(json: json, quiet: quiet, filter: filter)
        view.attach(to: system)
        if watch.gestures { view.attachGestures(to: system) }
        let watchdog = LoopStallWatchdog(loop: loop, threshold: watch.stallThreshold) { report in
            printError("ringloop monitor: \(report)")
        }
        do {
            try system.start()
        } catch {
            printError("ringloop: \(error)")
            throw ExitCode(1)
        }
        let finished = LoopBound(false, loop: loop)
        signals.watch(on: loop) { _ in
            finished.value = true
            loop.stop()
        }
        if let duration {
            loop.add(
                LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in
                    finished.value = true
                    loop.stop()
                }, to: .common)
        }
        var replayThreads: [Thread] = []
        let replaysDone = Atomic<Int>(0)
        let stopReplays = Atomic<Bool>(false)
        let framesSent = Atomic<Int>(0)
        if let hosted {
            // Wait until every hosted device is attached, then replay them all at once: the
            // devices of one file on that file's clock, each file from its own start.
            let expected = hosted.files.reduce(0) { $0 + $1.count }
            while system.devices.count < expected && !finished.value {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            for devices in hosted.files {
                let pairs = UncheckedSendable(devices)
                let thread = Thread {
                    let speed: ReplaySpeed = hosted.speed == 1 ? .recorded : .scaled(hosted.speed)
                    _ = try? Replay.play(
                        pairs.value, timeline: .sharedClock, speed: speed,
                        progress: { _, _ in framesSent.add(1, ordering: .relaxed) },
                        shouldStop: { stopReplays.load(ordering: .relaxed) })
                    replaysDone.add(1, ordering: .releasing)
                }
                replayThreads.append(thread)
                thread.start()
            }
            let total = hosted.files.count
            let totalFrames = hosted.files.joined().reduce(0) { $0 + Replay.frames(of: $1.recording).count }
            if !quiet {
                // Progress on standard error, so standard output stays one event per line.
                let lastReported = LoopBound(-1, loop: loop)
                loop.add(
                    LoopTimer(after: .milliseconds(500), repeating: .milliseconds(500)) { timer in
                        let sent = framesSent.load(ordering: .relaxed)
                        if sent != lastReported.value {
                            lastReported.value = sent
                            printError("ringloop: replaying \(sent)/\(totalFrames) frames")
                        }
                        if sent >= totalFrames { timer.invalidate() }
                    }, to: .common)
            }
            let check = LoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { timer in
                guard replaysDone.load(ordering: .acquiring) == total else { return }
                timer.invalidate()
                // Let the last frames arrive, then remove the devices: clients see removal.
                loop.perform(after: .milliseconds(200), inModes: [.common]) {
                    for (_, device) in hosted.files.joined() { device.remove() }
                    loop.perform(after: .milliseconds(300), inModes: [.common]) { loop.stop() }
                    loop.wakeUp()
                }
            }
            loop.add(check, to: .common)
        }
        while !finished.value {
            let result = loop.run(mode: .default, until: .distantFuture)
            if result == .stopped || result == .finished { break }
        }
        stopReplays.store(true, ordering: .relaxed)
        while replaysDone.load(ordering: .acquiring) < replayThreads.count { usleep(1000) }
        system.stop()
        watchdog.stop()
        let summary = view.summary(
            systemDropped: system.statistics.dropped, stalls: (watchdog.stallCount, watch.stallThreshold))
        if json { printError(summary) } else { writeLine(summary) }
        for problem in system.problems { printError("ringloop: \(problem)") }
    }
}

extension Monitor {
    /// `--raw`: one node, or one recording of one device hosted and replayed.
    func runRaw(kinds: [String: InputKind], signals: SignalWatcher) throws {
        guard inputs.count == 1, let input = inputs.first, kinds[input] != .folder else {
            printError("ringloop monitor: --raw shows one device: give one device node or one recording of one device")
            throw ExitCode(1)
        }
        if kinds[input] == .node {
            return try RawView.run(node: input, json: json, grab: grab, duration: duration, signals: signals)
        }
        let file = try RecordingInput.load(input, description: description, command: "monitor")
        guard file.recordings.count == 1, let recording = file.recordings.first, let device = recording.description else {
            printError("ringloop monitor: --raw shows one device; \(input) has \(file.recordings.count)")
            throw ExitCode(1)
        }
        let host: VirtualDeviceHost
        let hosted: any VirtualInputDevice
        do {
            host = try VirtualDeviceHost(folderPath: "/tmp/ringloop-monitor-\(getpid())")
            hosted = try host.create(device, bufferSize: 4096, forReplay: true)
        } catch {
            printError("ringloop monitor: \(error)")
            throw ExitCode(1)
        }
        defer { host.close() }
        let finished = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)
        let pair = UncheckedSendable([(recording, hosted)])
        let speed: ReplaySpeed = self.speed == 1 ? .recorded : .scaled(self.speed)
        let replay = Thread {
            _ = try? Replay.play(
                pair.value, timeline: .sharedClock, speed: speed, progress: { _, _ in },
                shouldStop: { stop.load(ordering: .relaxed) })
            // Let the last frames reach the reader before it stops.
            usleep(200_000)
            finished.store(true, ordering: .releasing)
        }
        try RawView.run(
            node: hosted.nodePath, json: json, grab: grab, duration: duration, signals: signals,
            started: { replay.start() }, done: { finished.load(ordering: .acquiring) })
        stop.store(true, ordering: .relaxed)
        while replay.isExecuting { usleep(1000) }
        hosted.remove()
    }
}
