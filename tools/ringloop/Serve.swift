import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization

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
            next client (the server consumes it). --allow-uid and --allow-gid open the
            server to other users (default: only its own user).

            Examples:
              ringloop serve panel
              ringloop serve panel /dev/input/event3 /dev/input/event5 --focus-key KEY_F1
              ringloop serve panel devices/keyboard.evemu --wait-clients 2
            """
    )

    @Argument(help: "The server's port name.")
    var name: String

    @Argument(help: "Device nodes, a folder, or recordings.")
    var inputs: [String] = []

    @Option(help: "Who gets the focus as clients attach: newest, first or none.")
    var focus: String = HIDEventServer.FocusOnAttach.newest.rawValue

    @Option(help: "A key (KEY_F1…) that moves the focus to the next client; the server consumes it.")
    var focusKey: String?

    @Option(help: "Users (uids, comma-separated) allowed to attach besides the server's own.")
    var allowUid: String?

    @Option(help: "Groups (gids, comma-separated) whose members may attach.")
    var allowGid: String?

    @Option(help: "Replay recordings once this many clients are attached.")
    var waitClients: Int = 0

    @Option(help: "Replay speed factor for recordings.")
    var speed: Double = 1

    @Option(help: "The device description (evemu or libinput record) for recordings of events only.")
    var description: String?

    @Option(help: "Seconds without an acknowledgement after which a client is not responding.")
    var notResponding: Double = 5

    @Flag(help: "One JSON object per line.")
    var json = false

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    func validate() throws {
        guard !name.isEmpty, name.utf8.count <= LocalMessagePort.maximumNameLength else {
            throw ValidationError("the name must be 1 to \(LocalMessagePort.maximumNameLength) bytes")
        }
        for input in inputs where access(input, F_OK) != 0 { throw ValidationError("\(input): no such file or device") }
        guard HIDEventServer.FocusOnAttach(rawValue: focus) != nil else {
            throw ValidationError(
                "--focus: '\(focus)' is not one of \(HIDEventServer.FocusOnAttach.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let focusKey {
            guard let code = Evdev.code(named: focusKey), code.type == Evdev.EV_KEY else {
                throw ValidationError("--focus-key: '\(focusKey)' is not a key name (KEY_F1, KEY_TAB…)")
            }
        }
        _ = try Self.ids(allowUid, "--allow-uid")
        _ = try Self.ids(allowGid, "--allow-gid")
        guard (0...64).contains(waitClients) else { throw ValidationError("--wait-clients must be 0 to 64, got \(waitClients)") }
        try OptionRange.speed(speed)
        try OptionRange.duration(duration)
        guard notResponding.isFinite, notResponding >= 0.05, notResponding <= 3600 else {
            throw ValidationError("--not-responding must be 0.05 to 3600 seconds, got \(notResponding)")
        }
        if let description, access(description, R_OK) != 0 { throw ValidationError("--description \(description): no such file") }
    }

    static func ids(_ text: String?, _ option: String) throws -> Set<UInt32> {
        guard let text else { return [] }
        var ids = Set<UInt32>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let id = UInt32(part.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("\(option): '\(part)' is not a number (give uids or gids, comma-separated)")
            }
            ids.insert(id)
        }
        return ids
    }

    func run() throws {
        let signals = SignalWatcher()
        var kinds: [String: Monitor.InputKind] = [:]
        for input in inputs {
            do { kinds[input] = try Monitor.kind(of: input) } catch {
                printError("ringloop serve: \(error.message)")
                throw ExitCode(1)
            }
        }
        let folders = inputs.filter { kinds[$0] == .folder }
        let nodes = inputs.filter { kinds[$0] == .node }
        let recordingPaths = inputs.filter { kinds[$0] == .recording }
        guard folders.count <= 1, folders.isEmpty || inputs.count == 1 else {
            printError("ringloop serve: a folder is served alone (every evdev node in it)")
            throw ExitCode(1)
        }
        var host: VirtualDeviceHost?
        defer { host?.close() }
        var hosted: [[(recording: Recording, device: any VirtualInputDevice)]] = []
        var directory = folders.first ?? "/dev/input"
        var names: Set<String>?
        if !nodes.isEmpty {
            let directories = Set(nodes.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path })
            guard directories.count == 1, recordingPaths.isEmpty else {
                printError("ringloop serve: devices must share one folder (and not be mixed with recordings)")
                throw ExitCode(1)
            }
            directory = directories.first!
            names = Set(nodes.map { URL(fileURLWithPath: $0).lastPathComponent })
        }
        if !recordingPaths.isEmpty {
            let files = try recordingPaths.map { try RecordingInput.load($0, description: description, command: "serve") }
            do {
                let made = try VirtualDeviceHost(folderPath: "/tmp/ringloop-serve-\(getpid())")
                host = made
                for file in files {
                    hosted.append(try file.recordings.map { ($0, try made.create($0.description!, bufferSize: 4096, forReplay: true)) })
                }
                directory = made.backend == .fuse ? made.folderPath : "/dev/input"
            } catch {
                printError("ringloop serve: \(error)")
                throw ExitCode(1)
            }
            names = Set(hosted.joined().map { URL(fileURLWithPath: $0.device.nodePath).lastPathComponent })
        }
        let uids = try Self.ids(allowUid, "--allow-uid")
        let gids = try Self.ids(allowGid, "--allow-gid")
        let access: PeerPolicy = .users(uids.union([geteuid()]), groups: gids)
        let loop = RingRunLoop.main
        let server = HIDEventServer(
            configuration: .init(
                name: name, devices: .init(deviceDirectory: directory, shape: .dedicatedThread, nodeNames: names),
                clientAccess: access, observerAccess: access, focusRequestAccess: access,
                focusOnAttach: HIDEventServer.FocusOnAttach(rawValue: focus)!,
                notRespondingTimeout: .milliseconds(Int(notResponding * 1000))),
            loop: loop)
        let json = json
        server.addClientObserver { event in writeLine(Self.line(event, json: json)) }
        if let focusKey, let code = Evdev.code(named: focusKey)?.code {
            server.system.addHandler(kinds: [.key]) { [unowned server] event in
                guard case .key(let key) = event.payload, key.code == code else { return .pass }
                if key.state == .down { server.focusNext() }
                return .consumed
            }
        }
        do { try server.start() } catch {
            printError("ringloop serve: \(error)")
            throw ExitCode(1)
        }
        writeLine(json ? EventFormat.jsonLine(["kind": "serving", "name": name]) : "serving \(name)")
        let finished = LoopBound(false, loop: loop)
        signals.watch(on: loop) { _ in
            finished.value = true
            loop.stop()
        }
        if let duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in loop.stop() }, to: .common)
        }
        let stopReplays = Atomic<Bool>(false)
        let replaysDone = Atomic<Int>(0)
        var replayThreads = 0
        if !hosted.isEmpty {
            let expected = hosted.joined().count
            while (server.system.devices.count < expected || server.clients.count < waitClients) && !finished.value {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            let speed: ReplaySpeed = self.speed == 1 ? .recorded : .scaled(self.speed)
            for devices in hosted {
                let pairs = UncheckedSendable(devices)
                replayThreads += 1
                Thread {
                    _ = try? Replay.play(
                        pairs.value, timeline: .sharedClock, speed: speed, shouldStop: { stopReplays.load(ordering: .relaxed) })
                    replaysDone.add(1, ordering: .releasing)
                }.start()
            }
        }
        loop.add(LoopSource {}, to: .default)
        while !finished.value {
            let result = loop.run(mode: .default, until: .distantFuture)
            if result == .stopped || result == .finished { break }
        }
        stopReplays.store(true, ordering: .relaxed)
        while replaysDone.load(ordering: .acquiring) < replayThreads { usleep(1000) }
        server.stop()
        for problem in server.system.problems { printError("ringloop serve: \(problem)") }
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
            object = ["kind": "focus", "from": from.map { Int($0.rawValue) } ?? NSNull(), "to": to.map { Int($0.rawValue) } ?? NSNull()]
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
