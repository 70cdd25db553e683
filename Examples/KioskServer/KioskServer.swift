// kiosk-server: one touchscreen and one keyboard shared by two kiosk apps, as a device's
// system server shares them — an event server (HIDEventServer) owns the devices and gives
// keys and touches to the app in front; F1 (which the server consumes, as SpringBoard
// consumes the lock button) brings the next app to the front.
//
//   swift run kiosk-server [--recordings DIR]       # the demo: the server, two apps, scripted input
//   swift run kiosk-server serve --devices /dev/input [--name NAME]   # a server over real devices
//   swift run kiosk-server app TITLE [--name NAME]  # one kiosk app (a client)
//
// --socket-dir DIR puts the server's port (and each app's) in DIR as socket files instead of
// the abstract namespace, where any local user could take the name first: use it on any
// machine with other users (RingLoop's MessagePortNamespace.directory).
//
// The demo runs the server in this process, with a touchscreen and a keyboard described
// as the bundled recordings' devices and fed through pipes; it starts two apps, "Left"
// and "Right", as processes of their own, taps and types, presses F1, taps and types
// again, then ends the apps with SIGTERM. Each app prints what reaches its handlers.
//
// The server holds the keymap (the system's keyboard layout, as `ringloop keymap` shows
// it), as a Wayland compositor does: each key reaches the app in front with its text, so a
// German or French keyboard types what its keys say. The demo types its words as the keys
// that type them in that keymap.
import Glibc
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization
import SystemPackage

/// Writes a line at once (one write: lines of several processes do not interleave).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Ends the program with one line on standard error and `status` (sysexits: 64 usage,
/// 66 an input missing).
func fail(_ problem: String, status: Int32) -> Never {
    let bytes = Array("kiosk-server: \(problem)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

func usage(_ problem: String) -> Never {
    fail(
        "\(problem); usage: kiosk-server [--recordings DIR | serve --devices DIR | app TITLE] [--name NAME] [--socket-dir DIR]", status: 64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var serverName = "kiosk.\(getpid())"
var recordingsFolder = "devices"
var namespace = MessagePortNamespace.abstract
for option in ["--name", "--recordings", "--socket-dir"] {
    guard let index = arguments.firstIndex(of: option) else { continue }
    guard index + 1 < arguments.count else { usage("\(option) needs a value") }
    let value = arguments[index + 1]
    switch option {
    case "--name": serverName = value
    case "--recordings": recordingsFolder = value
    default:
        var status = stat()
        guard stat(value, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            fail("--socket-dir: \(value) is not a folder", status: 66)
        }
        // The apps' ports are made there too: readable and writable by the server's user
        // and the apps' (the folder's own permissions decide who reaches it).
        namespace = .directory(value, permissions: 0o666)
    }
    arguments.removeSubrange(index...(index + 1))
}

do {
    switch arguments.first {
    case nil: try runDemo(name: serverName, namespace: namespace, recordings: recordingsFolder)
    case "serve":
        guard arguments.count == 3, arguments[1] == "--devices" else { usage("serve needs --devices DIR") }
        try runServer(
            name: serverName, namespace: namespace, devices: .init(deviceDirectory: arguments[2], shape: .dedicatedThread),
            keymap: try Keymap(.init()), script: nil)
    case "app":
        guard arguments.count == 2 else { usage("app needs a TITLE") }
        try runApp(title: arguments[1], server: serverName, namespace: namespace)
    default: usage("unknown command '\(arguments[0])'")
    }
} catch {
    fail("\(error)", status: 1)
}

// MARK: The app

/// A kiosk app: types what it is sent, reports taps, says when it comes to the front.
func runApp(title: String, server: String, namespace: MessagePortNamespace) throws {
    let loop = RingRunLoop.current
    let signals = try loop.signals([SIGINT, SIGTERM])
    let system = HIDEventSystem(configuration: .init(server: server, namespace: namespace, clientName: title), loop: loop)
    let typed = LoopBound("", loop: loop)
    system.addHandler(kinds: [.key]) { event in
        // The text comes with the key, from the server's keymap.
        guard case .key(let key) = event.payload, key.state != .up, !key.text.isEmpty else { return .pass }
        let character = key.text.string
        typed.value += character
        say("\(title): typed \(character)")
        return .consumed
    }
    let tap = TapGestureRecognizer(taps: 1, fingers: 1)
    tap.surfaces = [.touchscreen]
    tap.addAction { event in
        guard event.state == .ended else { return }
        let location = event.values.location
        say("\(title): tap at (\(Int(location.x)), \(Int(location.y))) mm")
    }
    system.addGestureRecognizer(tap)
    // The focus as it comes and goes, in order with the keys and touches.
    system.onFocusChange { focused in say("\(title): \(focused ? "in front" : "in the back")") }
    try system.start()
    say("\(title): attached to \(server)")
    Task(executorPreference: loop) {
        for await _ in signals {
            loop.stop()
            break
        }
    }
    loop.run()
    system.stop()
    say("\(title): typed \"\(typed.value)\"")
}

// MARK: The server

/// The server: the devices, F1 to move the focus, a line per change among the apps;
/// `script` (the demo) runs once the server is up, on a thread of its own.
func runServer(
    name: String, namespace: MessagePortNamespace, devices: HIDEventSystem.Configuration, keymap: Keymap,
    streams: [HIDDeviceInfo] = [],
    script: ((HIDEventServer, [Int32]) -> Void)?
) throws {
    let loop = RingRunLoop.current
    let signals = try loop.signals([SIGINT, SIGTERM])
    let server = HIDEventServer(
        configuration: .init(name: name, namespace: namespace, devices: devices, focusOnAttach: .first), loop: loop)
    server.setKeymap(keymap, composeTable: try ComposeTable.forLocale())
    server.system.addHandler(usage: HIDUsage(page: 0x07, usage: 0x3a)) { [unowned server] event in  // F1
        if case .key(let key) = event.payload, key.state == .down { server.focusNext() }
        return .consumed
    }
    server.addClientObserver { [unowned server] change in
        switch change {
        case .attached(let client): say("server: \(client.name) attached")
        case .detached(let client): say("server: \(client.name) detached")
        case .focusChanged(_, let to):
            say("server: focus to \(to.flatMap { id in server.clients.first { $0.id == id }?.name } ?? "no one")")
        case .notResponding(let client): say("server: \(client.name) is not responding")
        case .responding(let client): say("server: \(client.name) responds again")
        }
    }
    try server.start()
    var writeEnds: [Int32] = []
    for device in streams {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw HIDError.configuration("pipe: errno \(errno)") }
        try server.system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: device)
        writeEnds.append(ends[1])
    }
    say("server: serving \(name)")
    Task(executorPreference: loop) {
        for await _ in signals {
            loop.stop()
            break
        }
    }
    if let script { script(server, writeEnds) }
    loop.run()
    server.stop()
    for fd in writeEnds { close(fd) }
}

// MARK: The demo

func runDemo(name: String, namespace: MessagePortNamespace, recordings: String) throws {
    for file in ["touchscreen-multitouch.evemu", "keyboard.evemu"] where access(recordings + "/" + file, R_OK) != 0 {
        fail("\(recordings)/\(file): No such file or directory (run from the package's folder, or give --recordings DIR)", status: 66)
    }
    let touchscreen = try description(of: recordings + "/touchscreen-multitouch.evemu")
    let keyboard = try description(of: recordings + "/keyboard.evemu")
    let keymap = try Keymap(.init())
    // The words as the keys that type them in the keymap (Shift and AltGr included).
    let strokes = try ["hi", "yo", "ok"].map { word in try keymap.keyStrokes(typing: word) }
    try runServer(
        name: name, namespace: namespace, devices: .init(deviceDirectory: "/tmp", nodeNames: []), keymap: keymap,
        streams: [touchscreen, keyboard]
    ) { server, ends in
        let loop = server.loop
        let apps = ["Left", "Right"].map { title -> Child in
            var arguments = ["app", title, "--name", name]
            if case .directory(let folder, _) = namespace { arguments += ["--socket-dir", folder] }
            let child = Child(arguments)
            // The first app attaches first, so it has the focus (focusOnAttach: .first).
            while server.clients.count < (title == "Left" ? 1 : 2) { _ = loop.run(mode: .default, for: .milliseconds(20)) }
            return child
        }
        let done = Atomic<Bool>(false)
        let (screen, keys) = (ends[0], ends[1])
        DemoThread {
            func pause() { usleep(60_000) }
            func tap(_ x: Int32, _ y: Int32) {
                send(screen, [(3, 0x2f, 0), (3, 0x39, 1), (3, 0x35, x), (3, 0x36, y), (1, 0x14a, 1), (3, 0, x), (3, 1, y)])
                usleep(50_000)
                send(screen, [(3, 0x39, -1), (1, 0x14a, 0)])
                pause()
            }
            func type(_ word: [KeyStroke]) {
                for stroke in word {
                    send(keys, [(1, stroke.code, stroke.isDown ? 1 : 0)])
                    if !stroke.isDown { pause() }
                }
            }
            func press(_ code: UInt16) {
                send(keys, [(1, code, 1)])
                send(keys, [(1, code, 0)])
                pause()
            }
            pause()
            tap(800, 450)
            type(strokes[0])
            press(Evdev.KEY_F1)
            tap(2400, 1350)
            type(strokes[1])
            press(Evdev.KEY_F1)
            type(strokes[2])
            usleep(300_000)
            done.store(true, ordering: .releasing)
        }
        let finish = LoopTimer(after: .milliseconds(50), repeating: .milliseconds(50)) { timer in
            guard done.load(ordering: .acquiring) else { return }
            timer.invalidate()
            for app in apps { app.terminate() }
            loop.stop()
        }
        loop.add(finish, to: .common)
    }
}

/// A recording's device, as the chain describes it.
func description(of path: String) throws -> HIDDeviceInfo {
    HIDDeviceInfo(description: try Recording.load(contentsOf: path).description!)
}

/// One frame: the events, then `SYN_REPORT`, stamped now, in one write.
func send(_ fd: Int32, _ events: [(UInt16, UInt16, Int32)]) {
    let now = MonotonicInstant.now.nanoseconds
    let (seconds, microseconds) = (Int64(now / 1_000_000_000), Int32(now % 1_000_000_000 / 1000))
    let frame = (events + [(Evdev.EV_SYN, Evdev.SYN_REPORT, 0)]).map {
        InputEvent(seconds: seconds, microseconds: microseconds, type: $0.0, code: $0.1, value: $0.2)
    }
    var bytes = [UInt8](repeating: 0, count: frame.count * InputEvent.size)
    bytes.withUnsafeMutableBytes { raw in
        for (index, event) in frame.enumerated() { event.store(to: raw.baseAddress! + index * InputEvent.size) }
    }
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}

/// An app process: this program again, with the default signal mask (the server's loop
/// blocks SIGINT and SIGTERM for its signal source).
final class Child: Sendable {
    let pid: pid_t

    init(_ arguments: [String]) {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = (["kiosk-server"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        guard posix_spawn(&child, "/proc/self/exe", nil, &attributes, argv, environ) == 0 else {
            say("kiosk-server: cannot start an app: errno \(errno)")
            exit(1)
        }
        pid = child
    }

    /// SIGTERM, then waits for it to end.
    func terminate() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// The demo's input, on a thread of its own (detached).
final class DemoThread: Sendable {
    @discardableResult
    init(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        pthread_create(
            &thread, nil,
            { pointer in
                Unmanaged<Box>.fromOpaque(pointer!).takeRetainedValue().body()
                return nil
            }, box)
        pthread_detach(thread)
    }
}
