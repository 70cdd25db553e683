import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The chain reading every node of a folder (`/dev/input`) on a loop thread of its own,
/// hotplug included, keeping every event it delivers by device.
final class ChainWatch: @unchecked Sendable {
    // @unchecked: `system` is made, used and stopped on `thread`'s loop only (through
    // `onLoop`); `rawEventsRead` reads an atomic; `state` is behind its lock.
    let thread: LoopThread
    private var system: HIDEventSystem?
    private let state = ThreadLock<State>(State())

    struct State {
        var events: [HIDDeviceID: [HIDEvent]] = [:]
        var paths: [HIDDeviceID: String] = [:]
        var infos: [HIDDeviceID: HIDDeviceInfo] = [:]
        var removed: Set<HIDDeviceID> = []
    }

    init(directory: String = "/dev/input", configuration: HIDEventSystem.Configuration? = nil) throws {
        thread = LoopThread(name: "kernel-chain")
        var failure: HIDError?
        onLoop {
            var settings = configuration ?? HIDEventSystem.Configuration()
            var folder = HIDEventSystem.DeviceFolder()
            if case .devices(let given) = settings.input { folder = given }
            folder.path = directory
            folder.openAttempts = 40
            settings.input = .devices(folder)
            // Under emulation a frame may well reach a handler 50 ms after its stamp.
            settings.lateThreshold = .seconds(5)
            let system = HIDEventSystem(configuration: settings, loop: self.thread.loop)
            system.addHandler { [unowned system] event in
                self.state.withLock { state in
                    if case .deviceAdded = event.payload, let info = system.device(event.device) {
                        state.paths[event.device] = info.path
                        state.infos[event.device] = info
                    }
                    if case .deviceRemoved = event.payload { state.removed.insert(event.device) }
                    state.events[event.device, default: []].append(event)
                }
                return .pass
            }
            do throws(HIDError) { try system.start() } catch { failure = error }
            self.system = system
        }
        if let failure { throw failure }
    }

    /// Runs `body` on the chain's loop and waits for it.
    func onLoop(_ body: @escaping () -> Void) {
        let box = UncheckedSendable(body)
        thread.loop.perform(inModes: [.common], waitUntilDone: true) { box.value() }
    }

    func stop() {
        onLoop {
            self.system?.stop()
            self.system = nil
        }
        thread.stopAndJoin()
    }

    /// Raw events the chain has read from every device so far.
    var rawEventsRead: Int { system?.rawEventsReadAnyThread ?? 0 }

    /// The newest device attached from `path`, if any.
    func device(atPath path: String) -> HIDDeviceID? {
        state.withLock { state in state.paths.filter { $0.value == path }.keys.max { $0.rawValue < $1.rawValue } }
    }

    func info(_ id: HIDDeviceID) -> HIDDeviceInfo? { state.withLock { $0.infos[id] } }

    /// Whether the chain has reported the device's removal.
    func wasRemoved(_ id: HIDDeviceID) -> Bool { state.withLock { $0.removed.contains(id) } }

    /// Events of the device so far, without copying them.
    func eventCount(of id: HIDDeviceID) -> Int { state.withLock { $0.events[id]?.count ?? 0 } }

    func events(of id: HIDDeviceID) -> [HIDEvent] { state.withLock { $0.events[id] ?? [] } }

    /// How each attached device is read.
    func readPath(of id: HIDDeviceID) -> DeviceReadPath? {
        var path: DeviceReadPath?
        onLoop { path = self.system?.readPaths[id] }
        return path
    }

    /// Sets an LED through the chain (as a compositor does).
    func setLED(_ code: UInt16, on: Bool, device: HIDDeviceID) -> HIDError? {
        var failure: HIDError?
        onLoop {
            do throws(HIDError) { try self.system?.setLED(code, on: on, device: device) } catch { failure = error }
        }
        return failure
    }

    /// Sets the chain's keymap (the keymap stage), or takes it away.
    func setKeymap(_ keymap: Keymap?) {
        onLoop { self.system?.setKeymap(keymap) }
    }

    /// Sets the chain's screens (the screen-mapping stage), or takes them away; where each
    /// attached device maps now, and why (udev's properties are read again).
    @discardableResult
    func setScreens(_ screens: DeviceSettingsResolver?) -> [ScreenMappingReport] {
        var reports: [ScreenMappingReport] = []
        onLoop { reports = self.system?.setScreens(screens) ?? [] }
        return reports
    }

    /// Where the device's positions map now (`nil`: no screen, or no screens set).
    func screenMapping(for id: HIDDeviceID) -> ScreenMapping? {
        var mapping: ScreenMapping?
        onLoop { mapping = self.system?.screenMapping(for: id) }
        return mapping
    }

    /// The nodes the chain holds until udev initializes them.
    var nodesWaitingForUdev: Set<String> { system?.nodesWaitingForUdev ?? [] }

    /// The newest device attached so far (0 for none): devices attached later have a
    /// greater id. Take it before creating a device whose node name may be reused.
    func mark() -> UInt32 { state.withLock { $0.paths.keys.map(\.rawValue).max() ?? 0 } }

    /// Waits until a device at `path` newer than `mark` is attached (at most `timeout`).
    func waitForDevice(atPath path: String, after mark: UInt32, timeout: Duration = .seconds(10)) -> HIDDeviceID? {
        var found: HIDDeviceID?
        _ = waitUntil(timeout) {
            found = self.device(atPath: path).flatMap { $0.rawValue > mark ? $0 : nil }
            return found != nil
        }
        return found
    }
}

/// Waits until `condition` holds, looking every `poll` (a millisecond unless told),
/// for at most `timeout`. Returns whether it held.
@discardableResult
func waitUntil(_ timeout: Duration, poll: Duration = .milliseconds(1), _ condition: () -> Bool) -> Bool {
    let deadline = MonotonicInstant.now + timeout
    let pause = useconds_t(milliseconds(poll) * 1000)
    while true {
        if condition() { return true }
        if MonotonicInstant.now >= deadline { return false }
        usleep(pause)
    }
}

/// A node read on a thread of its own the way `ringloop record` reads it (the
/// monotonic clock, every record until the device goes away), keeping every event.
final class NodeCapture: Sendable {
    let path: String
    private let fd: Int32
    private let events = ThreadLock<[InputEvent]>([])
    /// Set while the thread has taken records from the node and not yet kept them.
    private let reading = ReadingFlag()

    final class ReadingFlag: Sendable {
        let value = Atomic<Bool>(false)
    }
    private let thread: PosixThread

    init?(path: String, grab: Bool = false) {
        self.path = path
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.fd = fd
        let evdev = EvdevDevice(fileDescriptor: fd)
        _ = try? evdev.setClock(CLOCK_MONOTONIC)
        if grab { _ = try? evdev.grab() }
        let store = events
        let reading = self.reading
        thread = PosixThread.start(name: "kernel-capture") {
            var buffer = [UInt8](repeating: 0, count: InputEvent.size * 256)
            while true {
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 5000) < 0, errno == EINTR { continue }
                reading.value.store(true, ordering: .sequentiallyConsistent)
                defer { reading.value.store(false, ordering: .sequentiallyConsistent) }
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EAGAIN || errno == EINTR { continue }
                    return  // ENODEV: the device is gone
                }
                if count == 0 { return }
                let records = buffer.withUnsafeBytes { raw in
                    (0..<(count / InputEvent.size)).map { InputEvent(bytes: raw.baseAddress! + $0 * InputEvent.size) }
                }
                store.withLock { $0 += records }
            }
        }
    }

    /// Events read so far.
    var count: Int { events.withLock { $0.count } }

    /// Whether the node has nothing left for this reader (its thread has read all that
    /// was queued). `poll` does not consume.
    var isDrained: Bool {
        // The node first: once it is empty, the records are either kept or being kept.
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) == 0 && !reading.value.load(ordering: .sequentiallyConsistent)
    }
    var captured: [InputEvent] { events.withLock { $0 } }

    /// Waits for the reading thread, which ends when the device goes away, and closes.
    func finish() {
        thread.join()
        close(fd)
    }
}

/// What a kernel device's node should give for a recording: the recorded events through
/// the input core's filter (the model the FUSE nodes apply), `SYN_REPORT`s included, and
/// the frame the input core sends when the device goes away (key-ups for the keys still
/// down), which a reader may or may not read before the node answers `ENODEV`.
func expectedAtNode(_ recording: Recording) -> (events: [InputEvent], atRemoval: [InputEvent]) {
    guard let description = recording.description else { return ([], []) }
    var state = EvdevDeviceState(description: description, appliesFuzz: false)
    var out: [InputEvent] = []
    for event in recording.events {
        if let frame = state.feed(type: event.type, code: event.code, value: event.value) {
            out += frame.map { InputEvent(type: $0.0, code: $0.1, value: $0.2) }
            out.append(InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: state.frameEndValue))
        }
    }
    let released = (state.releaseKeys() ?? []).map { InputEvent(type: $0.0, code: $0.1, value: $0.2) }
    let end = InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: state.frameEndValue)
    return (out, released.isEmpty ? [] : released + [end])
}

/// The chain's events for a stream of raw events, decoded in memory (no kernel, no
/// node): what the chain must deliver when it reads the same events from a node.
func decodedInMemory(_ events: [InputEvent], info: HIDDeviceInfo, description: InputDeviceDescription) -> [PayloadKey] {
    var decoder = FrameDecoder(info: info)
    var out: [HIDEvent] = []
    // The state the device was created in, as the chain reads it when it attaches.
    decoder.attach(from: description.state, at: .now, into: &out)
    for event in events { decoder.feed(event, into: &out) }
    decoder.detach(at: .now, into: &out)
    return out.map { PayloadKey($0.payload) }
}

/// The chain's events as text, the device's addition left out.
func chainTexts(_ events: [HIDEvent]) -> [PayloadKey] {
    events.compactMap { event in
        if case .deviceAdded = event.payload { return nil }
        return PayloadKey(event.payload)
    }
}

/// A child process: this command (`/proc/self/exe`) or another `executable`, with
/// `arguments`, its standard output to `output`, standard error to `errors`.
/// `posix_spawn`, not Foundation's `Process`, which needs a socket pair and a run-loop
/// thread for nothing here.
final class ChildCommand {
    let pid: pid_t
    private var status: Int32?

    init?(
        _ arguments: [String], executable: String = "/proc/self/exe", output: String = "/dev/null",
        errors: String = "/dev/null"
    ) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        guard posix_spawn(&child, executable, &actions, nil, argv, environ) == 0 else { return nil }
        pid = child
    }

    /// Whether it still runs (reaps it when it has ended).
    var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
        status = Self.exitStatus(raw)
        return false
    }

    func interrupt() { if status == nil { kill(pid, SIGINT) } }

    /// Ends it at once (`SIGKILL`), when it did not end as asked.
    func forceEnd() { if status == nil { kill(pid, SIGKILL) } }

    /// Bytes it has read so far (`rchar` of `/proc/PID/io`): a reader's progress through
    /// a node, 24 bytes an event, once it has started.
    var bytesRead: Int {
        guard let text = fileText("/proc/\(pid)/io") else { return 0 }
        let line = text.split(separator: "\n").first { $0.hasPrefix("rchar:") }
        return line.flatMap { Int($0.dropFirst(6).trimmed) } ?? 0
    }

    /// Waits for it; its exit status (128 + the signal that ended it).
    func wait() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        status = Self.exitStatus(raw)
        return status!
    }

    private static func exitStatus(_ raw: Int32) -> Int32 { raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f) }
}
