import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopHID
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Monitor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print live HID events, one per line, with per-event latency.",
        discussion: """
            Arguments are evdev device nodes (/dev/input/event3), one folder of them, or
            recordings (evemu files or libinput record YAML). A folder is monitored alone:
            every eventN node in it and those added later (hotplug). Recordings are hosted
            as virtual devices and replayed: every device of a file, on the file's clock;
            a file of events only replays onto the device described in --description FILE.
            Anything else (/dev/null, a socket) is refused with the reason.

            Without arguments, every device in /dev/input. --json writes one JSON object
            per line (docs/COMMANDS.md names the fields). A summary follows on exit (on
            standard error with --json, so standard output stays JSON lines).

            --raw prints one device's evdev events as evtest does (its capability header,
            then a line per event; --json: {"kind":"raw",...} objects): a node, or a
            recording of one device, hosted and replayed.

            --gestures also recognizes gestures on touchscreens (UIKit's recognizers) and
            touchpads (libinput's), printed as they change state ({"kind":"gesture",...}),
            and on motion sensors shakes (gesture "shake") and orientation changes
            ({"kind":"orientation","orientation":...}). --filter takes gesture and
            orientation too (and then recognizes them without --gestures).
            A pass of the loop longer than --stall-threshold milliseconds is a stall: it is
            reported on standard error and counted in the summary.

            --server NAME attaches to an event server (ringloop serve NAME) as a client:
            it prints what the server sends this client (the focused one gets keys and
            touches), and attaches again when a server of that name comes back; with
            --socket-dir DIR, the server of serve --socket-dir DIR. The pointer and the
            touchpads are the server's (ringloop serve --touchpad...): motion and
            scrolling are printed as the server made them, unless pointer options
            (--accel-profile...) are given here: then this client accelerates and scales
            them by these, once (from the device's unaccelerated motion and unscaled
            scrolling, which the server sends).

            Examples:
              ringloop monitor /dev/input/event3
              ringloop monitor devices/touchpad.evemu --json
              ringloop monitor taps.events --description touchpad.desc
              ringloop monitor --grab /dev/input/event5
              ringloop monitor --raw devices/keyboard.evemu
              ringloop monitor --gestures devices/gestures/touchscreen-pinch-out.evemu
              ringloop monitor --filter motion,gesture,orientation \\
                devices/motion/dualsense-shake.evemu
              ringloop monitor --server panel
            """
    )

    @Argument(help: "Device nodes or recordings.", completion: .file())
    var inputs: [String] = []

    @Flag(help: "One JSON object per line.")
    var json = false

    @Flag(help: "Grab the devices (EVIOCGRAB): no other reader gets their events.")
    var grab = false

    @Flag(help: "One device's evdev events as evtest prints them, capability header first.")
    var raw = false

    @Option(
        help: "Print only these event kinds, comma-separated (key, button, pointerMotion, scroll, digitizer..., gesture, orientation).",
        completion: .list(HIDEvent.Kind.allCases.map(\.rawValue) + LiveView.Filter.reportKinds))
    var filter: String?

    @Option(
        help: "Print only the events of these device classes, comma-separated (keyboard, pointer, touchpad...).",
        completion: .list(HIDDeviceClass.allCases.map(\.rawValue)))
    var deviceClass: String?

    /// The parsed --filter and --device-class.
    func eventFilter() throws -> LiveView.Filter {
        let parsed = try filter.map { try LiveView.Filter.parseKinds($0) }
        return LiveView.Filter(
            kinds: parsed?.kinds,
            classes: try deviceClass.map { try LiveView.Filter.parse($0, "--device-class", as: HIDDeviceClass.self) },
            reports: parsed?.reports)
    }

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Recognize gestures on touchscreens and touchpads, shakes and orientation on motion sensors, and print them.")
    var gestures = false

    @Option(help: "A loop pass longer than this many milliseconds is reported as a stall (1 to 60000).")
    var stallThreshold: Double = 100

    @Option(help: "Replay speed factor for recordings.")
    var speed: Double = 1

    @Option(help: "The device description (evemu or libinput record) for recordings of events only.", completion: .file())
    var description: String?

    @Option(help: "Attach to the event server NAME (ringloop serve) as its client instead of reading devices.")
    var server: String?

    @Flag(help: "With --server: ask for the focus on attaching.")
    var requestFocus = false

    @Option(help: "With --server: the folder of the server's socket (serve --socket-dir).", completion: .directory)
    var socketDir: String?

    @Option(
        help:
            "With --server: device classes whose every event to receive without the focus, where the server allows (keyboard, pointer...).",
        completion: .list(HIDDeviceClass.allCases.map(\.rawValue)))
    var observe: String?

    @Flag(
        help: """
            Print the standard gamepad's events (kind gamepad: SDL's control names, the value after the dead zone, \
            the raw value) for devices with an SDL mapping: the bundled SDL_GameControllerDB lines, \
            SDL_GAMECONTROLLERCONFIG_FILE and SDL_GAMECONTROLLERCONFIG.
            """)
    var gamepads = false

    @Option(
        help: "A gamecontrollerdb.txt-format file of SDL mappings added on top of the bundled ones (implies --gamepads).",
        completion: .file())
    var gamepadMappings: String?

    @OptionGroup(title: "Screens")
    var screenOptions: ScreenOptions

    @OptionGroup(title: "Pointer (relative devices: acceleration, scrolling, buttons; the cursor on --screen)")
    var pointerOptions: PointerOptions

    @OptionGroup(title: "Keymap (key events' keysym and text; the system's keymap where not given)")
    var keymapOptions: KeymapOptions

    @OptionGroup(title: "Touchpads as pointers (libinput's options)")
    var touchpadOptions: TouchpadOptions

    func validate() throws {
        try validateServer()
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
        if raw, touchpadOptions.isGiven { throw ValidationError("--touchpad and --tap make HID events; --raw prints evdev events") }
        if raw, gamepads || gamepadMappings != nil {
            throw ValidationError("--gamepads and --gamepad-mappings map HID events; --raw prints evdev events")
        }
    }

    /// What monitor takes, for the messages that name it.
    static let accepted = "an evdev device node, a folder of them, or a recording"

    func run() throws {
        try Failure.reporting("monitor") {
            if let server {
                // The server's keymap gives the keys their text; a keymap given here reads them again.
                var settings = try settings()
                // The server's pointer stage made the motion, scrolling and buttons. Pointer
                // options give this client a stage of its own, which makes them again from
                // what the server's devices reported (a mouse's counts, a touchpad's
                // unaccelerated deltas, the unscaled scrolling): accelerated and scaled
                // once, by these options. --screen alone leaves the cursor to the server
                // (and still maps absolute positions, from their raw values). The server's
                // touchpad stage made its touchpads pointers: one here would make the same
                // touches pointer events a second time.
                if !pointerOptions.isGiven { settings.pointer = nil }
                settings.touchpad = nil
                if keymapOptions.isGiven {
                    (settings.keymap, settings.composeTable) = try keymapOptions.keymapForReading(command: "monitor")
                }
                return try monitorServer(server, settings)
            }
            var kinds: [String: InputPath] = [:]
            for input in inputs { kinds[input] = try InputPath.require(input, [.node, .folder, .recording], expected: Self.accepted) }
            if raw { return try runRaw(kinds: kinds) }
            var settings = try self.settings()
            (settings.keymap, settings.composeTable) = try keymapOptions.keymapForReading(command: "monitor")
            if let folder = inputs.first(where: { kinds[$0] == .folder }) {
                guard inputs.count == 1 else {
                    throw Failure.usage("a folder is monitored alone (every evdev node in it); got \(inputs.count) arguments")
                }
                return try Self.monitor(.folder(folder, names: nil), settings)
            }
            let nodes = inputs.filter { kinds[$0] == .node }
            let recordingPaths = inputs.filter { kinds[$0] == .recording }
            if recordingPaths.isEmpty {
                guard !nodes.isEmpty else { return try Self.monitor(.folder("/dev/input", names: nil), settings) }
                let folders = Set(nodes.map(Self.folder(of:)))
                guard folders.count == 1, let folder = folders.first else {
                    throw Failure.usage("the device nodes must be in one folder; got \(folders.sorted().joined(separator: ", "))")
                }
                return try Self.monitor(.folder(folder, names: Set(nodes.map(Self.name(of:)))), settings)
            }
            // Read before any signal is blocked: a FIFO with no writer waits in open.
            let files = try recordingPaths.map { path throws(Failure) in
                try RecordingInput.load(path, description: description, command: "monitor").recordings
            }
            try Self.monitor(.recordings(files, speed: speed), settings)
        }
    }

    /// The folder part of a node's path (`.` for a bare name).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last part of a node's path.
    static func name(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// The settings of this run.
    func settings() throws(Failure) -> Settings {
        let filter: LiveView.Filter
        do { filter = try eventFilter() } catch { throw Failure(error) }
        // `--filter gesture` (or orientation) asks for the recognizers' reports: it
        // recognizes them as --gestures does.
        return Settings(
            json: json, grab: grab, quiet: false, duration: duration, filter: filter,
            gestures: gestures || !(filter.reports ?? []).isEmpty, stallThreshold: .microseconds(Int64(stallThreshold * 1000)),
            gamepadMappings: gamepads || gamepadMappings != nil ? try GamepadMappings.database(adding: gamepadMappings) : nil,
            screens: try screenOptions.resolver(command: "monitor"),
            pointer: try pointerOptions.settings(withScreens: screenOptions.isGiven, withTouchpads: touchpadOptions.isGiven),
            touchpad: touchpadOptions.settings)
    }

    /// What is monitored: a folder of nodes (some of them, by name), or recordings hosted
    /// as virtual devices and replayed.
    enum Source {
        case folder(String, names: Set<String>?)
        case recordings([[Recording]], speed: Double)
    }

    /// How events are shown, and what is watched besides them.
    struct Settings {
        var json = false
        var grab = false
        var quiet = false
        var duration: Double?
        var filter: LiveView.Filter = .all
        var gestures = false
        var stallThreshold: Duration = .milliseconds(100)
        /// The mappings of the standard gamepad's events, when they are printed.
        var gamepadMappings: SDLMappingDatabase?
        /// Where absolute devices' positions go (`--screen`, `--calibration`, `--device-config`).
        var screens: DeviceSettingsResolver?
        /// The pointer stage's settings (`--accel-profile`…; libinput's defaults with
        /// `--screen`), or `nil` for raw motion.
        var pointer: PointerSettings?
        /// Touchpads as pointers (`--touchpad`, `--tap`, `--dwt`…), or `nil`.
        var touchpad: TouchpadSettings?
        /// With recordings: a first line (the backend is added) and a label per file, each
        /// printed beside its devices' nodes before the chain starts (the demo's header).
        var announce: (title: String, labels: [String])?
        /// The command named in the FUSE folder's path (`/tmp/ringloop-NAME-PID`).
        var command = "monitor"
        /// The keymap key events are read with (keysym and text), or `nil`.
        var keymap: Keymap?
        /// The Compose table for its dead keys.
        var composeTable: ComposeTable?

        /// Gives `system` the stages these settings ask for (the gamepad layout, screens,
        /// the pointer, touchpads, the keymap: the same with devices and with a server) and
        /// returns the view that prints what comes out of them.
        func configure(_ system: HIDEventSystem) -> LiveView {
            let view = LiveView(json: json, quiet: quiet, filter: filter)
            if let gamepadMappings { system.addGamepadLayout(mappings: gamepadMappings) }
            view.screens = screens
            if let screens { system.setScreens(screens) }
            if let pointer { system.setPointer(pointer) }
            if let touchpad { system.setTouchpadSettings(touchpad) }
            // The keymap stage reads every key event (keysym, text, locks) before the view sees it.
            if let keymap {
                // A monitor watches keyboards; it sets their LEDs only when it grabs them.
                system.setKeymap(keymap, composeTable: composeTable, controlsLEDs: grab)
            }
            return view
        }
    }

    /// Runs the chain on the main loop until a signal, `duration`, a closed standard
    /// output, or (with recordings) the end of every replay; prints the summary.
    static func monitor(_ source: Source, _ settings: Settings) throws(Failure) {
        let loop = RingRunLoop.main
        let ended = LoopEnding(loop: loop)
        let end: @Sendable () -> Void = { ended.end() }
        // Before any thread starts (the FUSE server's, the event system's): all inherit
        // the blocked signals.
        let signals = try LoopSignalSource.ending(on: loop) { _ in end() }
        defer { signals.invalidate() }
        StandardOutput.whenClosed(end)
        let outputWatch = StandardOutput.watchForClose(on: loop)
        defer { outputWatch?.invalidate() }
        var session: ReplaySession?
        let directory: String
        var names: Set<String>?
        switch source {
        case .folder(let folder, let chosen):
            (directory, names) = (folder, chosen)
        case .recordings(let files, let speed):
            do {
                let hosted = try ReplaySession(
                    files: files,
                    configuration: .init(
                        folderPath: "/tmp/ringloop-\(settings.command)-\(getpid())", bufferSize: 4096,
                        speed: speed == 1 ? .recorded : .scaled(speed), settleTime: .milliseconds(200)))
                session = hosted
                directory = hosted.backend == .fuse ? hosted.folderPath : "/dev/input"
                names = Set(hosted.nodePaths.map(name(of:)))
                if let (title, labels) = settings.announce {
                    writeLine("\(title) as \(hosted.backend) virtual devices")
                    for (devices, label) in zip(hosted.devices, labels) {
                        for device in devices { writeLine("  \(device.nodePath)  ←  \(label)") }
                    }
                    writeLine("")
                }
            } catch {
                throw Failure(error)
            }
        }
        defer { session?.close() }
        let system = HIDEventSystem(
            configuration: .init(deviceDirectory: directory, shape: .dedicatedThread, grabDevices: settings.grab, nodeNames: names),
            loop: loop)
        let view = settings.configure(system)
        view.attach(to: system)
        if settings.gestures { view.attachGestures(to: system) }
        let watchdog = LoopStallWatchdog(loop: loop, threshold: settings.stallThreshold) { report in
            printError("ringloop monitor: \(report)")
        }
        do { try system.start() } catch {
            watchdog.stop()
            throw .unavailable("\(error)")
        }
        if case .folder(let folder, nil) = source, settings.command == "monitor" {
            // What it waits for, as evtest says what it scans: nothing else may print for a while.
            let count = system.devices.count
            printError(
                "ringloop monitor: watching \(folder) for evdev nodes: "
                    + (count == 0 ? "none yet; each prints as it appears" : "\(count) found, and each added later")
                    + "; Ctrl-C ends")
        }
        if let duration = settings.duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in end() }, to: .common)
        }
        if let session {
            // Every hosted device attached, then the replay: the devices of one file on that
            // file's clock, each file from its own start.
            let expected = session.devices.joined().count
            while system.devices.count < expected && !ended.hasEnded {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            let quiet = settings.quiet
            session.start(
                progress: { progress in
                    // On standard error, so standard output stays one event per line.
                    if !quiet { printError("ringloop monitor: replaying \(progress.framesSent)/\(progress.frameCount) frames") }
                },
                finished: { [watched = LoopBound(onLoopThread: system, loop: loop)] _ in
                    loop.perform(inModes: [.common]) { Self.endOnceRemoved(watched.value, hosted: session, loop: loop, end: end) }
                    loop.wakeUp()
                })
        }
        while !ended.hasEnded {
            let result = loop.run(mode: .default, until: .distantFuture)
            if result == .finished { break }
        }
        session?.cancel()
        let outcome = session?.wait()
        system.stop()
        watchdog.stop()
        // After a closed standard output, no summary: its reader has gone, and a program
        // SIGPIPE ended would say nothing more either.
        if StandardOutput.isOpen {
            let summary = view.summary(
                systemDropped: system.statistics.dropped, stalls: (watchdog.stallCount, settings.stallThreshold))
            if settings.json { printError(summary) } else { writeLine(summary) }
        }
        for problem in system.problems { printError("ringloop monitor: \(problem)") }
        // Joins the session's thread, which holds the session (a leak at exit otherwise).
        session?.close()
        if let failure = outcome?.failures.first { throw Failure(failure) }
    }
}

extension Monitor {
    /// After a replay: once its last frames have reached the handlers (a removed device's
    /// unread events are lost, as a kernel device's are), removes the hosted devices, and
    /// calls `end` once their removals have reached the handlers too (at most 10 s later,
    /// should one never come). Client loop thread.
    static func endOnceRemoved(
        _ system: HIDEventSystem, hosted session: ReplaySession, loop: RingRunLoop, end: @escaping @Sendable () -> Void
    ) {
        let hosted = Set(session.nodePaths)
        system.afterInputDelivered {
            let attached = { [unowned system] in system.devices.contains { hosted.contains($0.path) } }
            guard attached() else { return end() }
            system.addHandler(kinds: [.deviceRemoved]) { [unowned system] _ in
                if !attached() { system.afterInputDelivered(end) }
                return .pass
            }
            for device in session.devices.joined() { device.remove() }
            loop.perform(after: .seconds(10), inModes: [.common]) { end() }
        }
    }

    /// `--raw`: one node, or one recording of one device hosted and replayed.
    func runRaw(kinds: [String: InputPath]) throws(Failure) {
        guard inputs.count == 1, let input = inputs.first, kinds[input] != .folder else {
            throw .usage("--raw shows one device: give one device node or one recording of one device")
        }
        var recording: Recording?
        if kinds[input] == .recording {
            let file = try RecordingInput.load(input, description: description, command: "monitor")
            guard file.recordings.count == 1 else {
                throw .usage("--raw shows one device; \(input) has \(file.recordings.count)")
            }
            recording = file.recordings[0]
        }
        let loop = RingRunLoop.current
        let ended = LoopEnding(loop: loop)
        let end: @Sendable () -> Void = { ended.end() }
        let signals = try LoopSignalSource.ending(on: loop) { _ in end() }
        defer { signals.invalidate() }
        StandardOutput.whenClosed(end)
        let outputWatch = StandardOutput.watchForClose(on: loop)
        defer { outputWatch?.invalidate() }
        guard let recording else {
            return try RawView.run(node: input, json: json, grab: grab, duration: duration, loop: loop, end: end, ended: ended)
        }
        let session: ReplaySession
        do {
            session = try ReplaySession(
                files: [[recording]],
                configuration: .init(
                    folderPath: "/tmp/ringloop-monitor-\(getpid())", bufferSize: 4096,
                    speed: speed == 1 ? .recorded : .scaled(speed), settleTime: .milliseconds(200)))
        } catch {
            throw Failure(error)
        }
        defer { session.close() }
        // The replay starts once the reader has the node open; it ends the monitor.
        try RawView.run(
            node: session.nodePaths[0], json: json, grab: grab, duration: duration, loop: loop, end: end, ended: ended,
            started: { session.start(finished: { _ in end() }) }, hosted: true)
        session.cancel()
        if let failure = session.wait().failures.first { throw Failure(failure) }
    }
}
