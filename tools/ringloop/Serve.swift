import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve devices to client processes as an event server (HIDEventServer).",
        discussion: """
            Owns the devices and forwards their events to the processes attached to the
            port NAME (clients: `ringloop monitor --server NAME`, or any program with
            HIDEventSystem(configuration: .init(server: NAME))). Keys, touches and the
            other focus-bound events go to the client with the focus; switches to every
            client that asks; additions and removals to all. Arguments are as for
            monitor: evdev nodes, one folder of them, or recordings (hosted as virtual
            devices and replayed once, then kept until the server ends); none: every
            device in /dev/input.
            Prints one line per change among the clients (attached, detached, focus,
            not responding; --json: one object per line).
            --focus says who gets the focus as clients attach: newest (default), first,
            or none; --focus-key KEY (e.g. KEY_F1) makes that key move the focus to the
            next client (the server consumes it).

            Rights, each a separate grant by users (uids) and groups (gids,
            comma-separated); the server's own user holds them all, and a grant
            counts only for a user who may also attach:
              --allow-uid, --allow-gid      attach, and get keys, touches and the
                                            other focus-bound events only while
                                            focused (given by --focus-key)
              --focus-uid, --focus-gid      take the focus: by asking
                                            (--request-focus) and by --focus
              --observe-uid, --observe-gid  get every event of devices other than
                                            keyboards without the focus
              --observe-keyboards-uid, --observe-keyboards-gid
                                            get every keystroke without the focus
                                            (a keylogger's right)
            No client asks for outputs (LEDs, rumble): the protocol has no such
            request. Shares: at most --max-clients clients (64); a user other than
            the server's has at most --max-clients-per-user (16), and those users
            together one share fewer than all, so the server's own user always has
            room. Per client the server keeps at most 256 unacknowledged batches
            (then it counts, not sends) and one frame being gathered (512 events,
            16 KiB); it takes messages of at most 256 bytes from a client and no
            reply at all.
            --socket-dir DIR puts the server's socket in DIR (the file NAME.port)
            instead of Linux's abstract namespace, where any local user can bind
            the name first and keep the server from starting: use it on any
            machine with other users. The file is mode 0600 (0666 with --allow-uid
            or --allow-gid: the folder's own permissions and the grants decide);
            clients give the same --socket-dir and make their own ports there, so
            they need write permission on DIR.

            Examples:
              ringloop serve panel
              ringloop serve panel /dev/input/event3 /dev/input/event5 --focus-key KEY_F1
              ringloop serve panel devices/keyboard.evemu --wait-clients 2
            """
    )

    @Argument(help: "The server's port name.")
    var name: String

    @Argument(help: "Device nodes, a folder, or recordings.", completion: .file())
    var inputs: [String] = []

    @Option(help: "Who gets the focus as clients attach: newest, first or none.")
    var focus: String = HIDEventServer.FocusOnAttach.newest.rawValue

    @Option(help: "A key (KEY_F1, KEY_TAB...) that moves the focus to the next client; the server consumes it.")
    var focusKey: String?

    @Option(help: "Users (uids, comma-separated) allowed to attach besides the server's own; focus-bound events only while focused.")
    var allowUid: String?

    @Option(help: "Groups (gids, comma-separated) whose members may attach.")
    var allowGid: String?

    @Option(help: "Users allowed to take the focus (asking, or on attaching) besides the server's own.")
    var focusUid: String?

    @Option(help: "Groups whose members may take the focus.")
    var focusGid: String?

    @Option(help: "Users allowed to observe devices other than keyboards without the focus.")
    var observeUid: String?

    @Option(help: "Groups whose members may observe devices other than keyboards without the focus.")
    var observeGid: String?

    @Option(help: "Users allowed to observe keyboards without the focus (every keystroke).")
    var observeKeyboardsUid: String?

    @Option(help: "Groups whose members may observe keyboards without the focus (every keystroke).")
    var observeKeyboardsGid: String?

    @Option(help: "Clients at once (1 to 1024).")
    var maxClients: Int = 64

    @Option(help: "Clients at once of one user other than the server's (1 to --max-clients).")
    var maxClientsPerUser: Int = 16

    @Option(help: "A folder for the server's socket file (NAME.port) instead of the abstract namespace.", completion: .directory)
    var socketDir: String?

    @Option(help: "Replay recordings once this many clients are attached.")
    var waitClients: Int = 0

    @Option(help: "Replay speed factor for recordings.")
    var speed: Double = 1

    @Option(help: "The device description (evemu or libinput record) for recordings of events only.", completion: .file())
    var description: String?

    @Option(help: "Seconds without an acknowledgement after which a client is not responding.")
    var notResponding: Double = 5

    @Flag(help: "One JSON object per line.")
    var json = false

    @Flag(
        help: """
            Add the standard gamepad's events (kind gamepad, SDL's control names) beside the raw ones for devices \
            with an SDL mapping (bundled SDL_GameControllerDB lines, SDL_GAMECONTROLLERCONFIG_FILE, SDL_GAMECONTROLLERCONFIG); \
            clients get both.
            """)
    var gamepads = false

    @Option(
        help: "A gamecontrollerdb.txt-format file of SDL mappings added on top of the bundled ones (implies --gamepads).",
        completion: .file())
    var gamepadMappings: String?

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @OptionGroup(title: "Screens")
    var screenOptions: ScreenOptions

    @OptionGroup(title: "Pointer (relative devices: acceleration, scrolling, buttons; the cursor on --screen)")
    var pointerOptions: PointerOptions

    @OptionGroup(title: "Touchpads as pointers (libinput's options)")
    var touchpadOptions: TouchpadOptions

    @OptionGroup(title: "Keymap (the server's; clients get keysym and text with each key; the system's where not given)")
    var keymapOptions: KeymapOptions

    func validate() throws {
        guard !name.isEmpty, name.utf8.count <= LocalMessagePort.maximumNameLength else {
            throw ValidationError("the name must be 1 to \(LocalMessagePort.maximumNameLength) bytes")
        }
        guard HIDEventServer.FocusOnAttach(rawValue: focus) != nil else {
            throw ValidationError(
                "--focus: '\(focus)' is not one of \(HIDEventServer.FocusOnAttach.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let focusKey {
            guard let code = Evdev.code(named: focusKey), code.type == Evdev.EV_KEY else {
                throw ValidationError("--focus-key: '\(focusKey)' is not a key name (KEY_F1, KEY_TAB...)")
            }
        }
        _ = try grants()
        guard (1...1024).contains(maxClients) else { throw ValidationError("--max-clients must be 1 to 1024, got \(maxClients)") }
        guard (1...maxClients).contains(maxClientsPerUser) else {
            throw ValidationError("--max-clients-per-user must be 1 to --max-clients (\(maxClients)), got \(maxClientsPerUser)")
        }
        try Self.validateSocketFolder(socketDir)
        guard (0...64).contains(waitClients) else { throw ValidationError("--wait-clients must be 0 to 64, got \(waitClients)") }
        try OptionRange.speed(speed)
        try OptionRange.duration(duration)
        guard notResponding.isFinite, notResponding >= 0.05, notResponding <= 3600 else {
            throw ValidationError("--not-responding must be 0.05 to 3600 seconds, got \(notResponding)")
        }
    }

    static func ids(_ text: String?, _ option: String) throws -> Set<UInt32> {
        guard let text else { return [] }
        var ids = Set<UInt32>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let id = UInt32(String(part.filter { $0 != " " })) else {
                throw ValidationError("\(option): '\(part)' is not a number (give uids or gids, comma-separated)")
            }
            ids.insert(id)
        }
        return ids
    }

    /// `--socket-dir` names a folder.
    static func validateSocketFolder(_ folder: String?) throws {
        guard let folder else { return }
        var status = stat()
        guard stat(folder, &status) == 0 else {
            throw ValidationError("--socket-dir: \(folder): \(String(cString: strerror(errno))) (give an existing folder)")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw ValidationError("--socket-dir: \(folder) is not a folder") }
    }

    /// The grants: who may attach, take the focus, observe devices and observe keyboards
    /// (the server's own user holds each).
    func grants() throws -> (attach: PeerPolicy, focus: PeerPolicy, observe: PeerPolicy, observeKeyboards: PeerPolicy) {
        func policy(_ uids: String?, _ gids: String?, _ option: String) throws -> PeerPolicy {
            .users(
                try Self.ids(uids, "--\(option)-uid").union([geteuid()]), groups: try Self.ids(gids, "--\(option)-gid"))
        }
        return (
            try policy(allowUid, allowGid, "allow"), try policy(focusUid, focusGid, "focus"),
            try policy(observeUid, observeGid, "observe"), try policy(observeKeyboardsUid, observeKeyboardsGid, "observe-keyboards")
        )
    }

    /// What serve takes, for the messages that name it.
    static let accepted = "an evdev device node, a folder of them, or a recording"

    func run() throws {
        try Failure.reporting("serve") {
            var kinds: [String: InputPath] = [:]
            for input in inputs { kinds[input] = try InputPath.require(input, [.node, .folder, .recording], expected: Self.accepted) }
            let folders = inputs.filter { kinds[$0] == .folder }
            let nodes = inputs.filter { kinds[$0] == .node }
            let recordingPaths = inputs.filter { kinds[$0] == .recording }
            guard folders.isEmpty || inputs.count == 1 else {
                throw Failure.usage("a folder is served alone (every evdev node in it); got \(inputs.count) arguments")
            }
            var source = Monitor.Source.folder(folders.first ?? "/dev/input", names: nil)
            if !nodes.isEmpty {
                let directories = Set(nodes.map(Monitor.folder(of:)))
                guard directories.count == 1, let directory = directories.first, recordingPaths.isEmpty else {
                    throw Failure.usage("the device nodes must be in one folder, and not mixed with recordings")
                }
                source = .folder(directory, names: Set(nodes.map(Monitor.name(of:))))
            }
            if !recordingPaths.isEmpty {
                // Read before any signal is blocked: a FIFO with no writer waits in open.
                let files = try recordingPaths.map { path throws(Failure) in
                    try RecordingInput.load(path, description: description, command: "serve").recordings
                }
                source = .recordings(files, speed: speed)
            }
            try serve(source)
        }
    }

    /// Runs the server on the main loop until a signal, `--duration` or a closed standard
    /// output; recordings are replayed once, after `--wait-clients` clients attached, and
    /// their devices kept until the end.
    private func serve(_ source: Monitor.Source) throws(Failure) {
        let loop = RingRunLoop.main
        let ended = LoopEnding(loop: loop)
        let end: @Sendable () -> Void = { ended.end() }
        // With a settings file, SIGHUP reads it again (as daemons do) instead of ending.
        let screens = try screenOptions.settings(command: "serve")
        let reloads = screens?.store != nil
        let signals: LoopSignalSource
        do {
            signals = try LoopSignalSource(reloads ? endingSignals.subtracting([SIGHUP]) : endingSignals, on: loop) { _ in end() }
        } catch {
            throw .failed("cannot watch signals: \(String(cString: strerror(error.rawValue)))")
        }
        defer { signals.invalidate() }
        // Made before any thread starts, as the ending signals' source: every thread
        // inherits SIGHUP blocked, so it reaches this source rather than ending the process.
        var hangUp: LoopSignalSource?
        let reloader = screens.map { ScreenReloader(settings: $0) }
        if reloads, let reloader {
            do { hangUp = try LoopSignalSource([SIGHUP], on: loop) { _ in reloader.reload() } } catch {
                throw .failed("cannot watch SIGHUP: \(String(cString: strerror(error.rawValue)))")
            }
        }
        defer { hangUp?.invalidate() }
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
                        folderPath: "/tmp/ringloop-serve-\(getpid())", bufferSize: 4096,
                        speed: speed == 1 ? .recorded : .scaled(speed), settleTime: .milliseconds(200)))
                session = hosted
                directory = hosted.backend == .fuse ? hosted.folderPath : "/dev/input"
                names = Set(hosted.nodePaths.map(Monitor.name(of:)))
            } catch {
                throw Failure(error)
            }
        }
        defer {
            ReplayCommand.reportForceFeedback(of: session.map { Array($0.devices.joined()) } ?? [], command: "serve")
            session?.close()
        }
        let grants: (attach: PeerPolicy, focus: PeerPolicy, observe: PeerPolicy, observeKeyboards: PeerPolicy)
        do { grants = try self.grants() } catch { throw Failure(error) }
        let othersAllowed = allowUid != nil || allowGid != nil
        let namespace = socketDir.map { MessagePortNamespace.directory($0, permissions: othersAllowed ? 0o666 : 0o600) } ?? .abstract
        let server = HIDEventServer(
            configuration: .init(
                name: name, namespace: namespace, devices: .init(deviceDirectory: directory, shape: .dedicatedThread, nodeNames: names),
                clientAccess: grants.attach, observerAccess: grants.observe, keyboardObserverAccess: grants.observeKeyboards,
                focusRequestAccess: grants.focus, focusOnAttach: HIDEventServer.FocusOnAttach(rawValue: focus)!,
                notRespondingTimeout: .milliseconds(Int(notResponding * 1000)), maximumClients: maxClients,
                maximumClientsPerUser: maxClientsPerUser, screens: screens?.resolver),
            loop: loop)
        reloader?.server = server
        // The server holds the keymap: clients get keysym and text with each key event.
        let (keymap, composeTable) = try keymapOptions.keymapForReading(command: "serve")
        server.setKeymap(keymap, composeTable: composeTable)
        let json = json
        server.addClientObserver { event in writeLine(Self.line(event, json: json)) }
        if let focusKey, let code = Evdev.code(named: focusKey)?.code {
            server.system.addHandler(kinds: [.key]) { [unowned server] event in
                guard case .key(let key) = event.payload, key.code == code else { return .pass }
                if key.state == .down { server.focusNext() }
                return .consumed
            }
        }
        if let pointer = try pointerOptions.settings(withScreens: screens != nil, withTouchpads: touchpadOptions.isGiven) {
            server.system.setPointer(pointer)
        }
        if let touchpad = touchpadOptions.settings { server.system.setTouchpadSettings(touchpad) }
        if gamepads || gamepadMappings != nil {
            server.system.addGamepadLayout(mappings: try GamepadMappings.database(adding: gamepadMappings))
        }
        do { try server.start() } catch {
            throw .unavailable("\(error)")
        }
        writeLine(json ? EventFormat.jsonLine(["kind": "serving", "name": name]) : "serving \(name)")
        if let duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in end() }, to: .common)
        }
        if let session {
            let expected = session.devices.joined().count
            while (server.system.devices.count < expected || server.clients.count < waitClients) && !ended.hasEnded {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            // The devices stay after the replay, until the server ends.
            session.start()
        }
        while !ended.hasEnded {
            if loop.run(mode: .default, until: .distantFuture) == .finished { break }
        }
        session?.cancel()
        let outcome = session?.wait()
        server.stop()
        for problem in server.system.problems { printError("ringloop serve: \(problem)") }
        if let failure = outcome?.failures.first { throw Failure(failure) }
    }

    /// One line about a change among the clients.
    static func line(_ event: HIDServerClientEvent, json: Bool) -> String {
        func client(_ client: HIDServerClient) -> [String: Any] {
            ["id": Int(client.id.rawValue), "name": client.name, "pid": Int(client.credentials.pid), "uid": Int(client.credentials.uid)]
        }
        let object: [String: Any]
        let text: String
        switch event {
        case .attached(let info):
            object = ["kind": "attached", "client": client(info)]
            text = "attached \(info.id): \(info.name) (\(info.credentials))"
        case .detached(let info):
            object = ["kind": "detached", "client": client(info)]
            text = "detached \(info.id): \(info.name)"
        case .focusChanged(let from, let to):
            object = [
                "kind": "focus", "from": JSON.optional(from) { .int(Int($0.rawValue)) }, "to": JSON.optional(to) { .int(Int($0.rawValue)) },
            ]
            text = "focus \(from.map(\.description) ?? "none") → \(to.map(\.description) ?? "none")"
        case .notResponding(let info):
            object = ["kind": "notResponding", "client": client(info), "outstanding": info.outstandingBatches]
            text = "not responding \(info.id): \(info.name), \(info.outstandingBatches) batches unacknowledged"
        case .responding(let info):
            object = ["kind": "responding", "client": client(info)]
            text = "responding \(info.id): \(info.name)"
        }
        return json ? EventFormat.jsonLine(object) : text
    }
}

/// Reads the settings file again on `SIGHUP` and gives the server the new settings.
private final class ScreenReloader: @unchecked Sendable {
    // @unchecked: made, used and dropped on the main loop's thread, where the signal
    // source calls it.
    weak var server: HIDEventServer?
    var settings: ScreenSettings

    init(settings: ScreenSettings) { self.settings = settings }

    func reload() {
        let resolver = settings.reload()
        for report in server?.updateScreens(resolver) ?? [] { printError("ringloop serve: \(Format.shown(report.line))") }
    }
}
