import Dispatch
import Glibc
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// An event server on a thread of its own, with stream devices (pipes) the test writes
/// frames into.
final class ServerOnThread: @unchecked Sendable {
    // @unchecked: `server` is made, used and dropped on `thread` only (through `sync`);
    // `writeEnds` is set once in init.
    let thread = LoopThread(name: "hid-server")
    let name: String
    private var server: HIDEventServer?
    private(set) var writeEnds: [Int32] = []
    private(set) var deviceIDs: [HIDDeviceID] = []
    let clientEvents = ThreadLock<[HIDServerClientEvent]>([])

    init(
        name: String, devices: [HIDDeviceInfo], configure: @escaping @Sendable (inout HIDEventServer.Configuration) -> Void = { _ in },
        prepare: @escaping @Sendable (HIDEventServer) -> Void = { _ in }
    ) throws {
        self.name = name
        let events = clientEvents
        let made = try onThread { () throws -> [(Int32, HIDDeviceID)] in
            var configuration = HIDEventServer.Configuration(
                name: name, devices: .init(deviceDirectory: "/tmp", nodeNames: []), focusOnAttach: .first,
                notRespondingTimeout: .seconds(60))
            configure(&configuration)
            let server = HIDEventServer(configuration: configuration, loop: .current)
            server.addClientObserver { event in events.withLock { $0.append(event) } }
            prepare(server)
            try server.start()
            self.server = server
            var made: [(Int32, HIDDeviceID)] = []
            for device in devices {
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { throw HIDError.configuration("pipe: errno \(errno)") }
                let id = try server.system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: device)
                made.append((ends[1], id))
            }
            return made
        }
        writeEnds = made.map(\.0)
        deviceIDs = made.map(\.1)
    }

    /// Runs `body` on the server's thread and returns its result.
    func onThread<T>(_ body: @escaping () throws -> T) throws -> T {
        let result = ThreadLock<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(body)
        thread.perform {
            let outcome = Result { try box.value() }
            result.withLock { $0 = UncheckedBox(outcome).value }
            done.signal()
        }
        thread.loop.wakeUp()
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Runs `body` with the server, on its thread.
    func sync<T>(_ body: @escaping (HIDEventServer) throws -> T) throws -> T {
        try onThread { [unowned self] in try body(self.server!) }
    }

    /// Writes frames to device `index` (each frame stamped now).
    func write(_ frames: [[InputEvent]], device index: Int) {
        for frame in frames { writeFrames(stamped(frame), to: writeEnds[index]) }
    }

    /// Ends a device's stream: the server removes it.
    func closeDevice(_ index: Int) {
        close(writeEnds[index])
        writeEnds[index] = -1
    }

    func stop() {
        _ = try? onThread { [unowned self] in
            self.server?.stop()
            self.server = nil
        }
        thread.stopAndJoin()
        for fd in writeEnds where fd >= 0 { close(fd) }
        writeEnds = []
    }

    deinit { if !writeEnds.isEmpty { stop() } }
}

/// Events of a frame stamped with the current monotonic time.
func stamped(_ frame: [InputEvent]) -> [InputEvent] {
    let now = MonotonicInstant.now.nanoseconds
    return frame.map { event in
        var event = event
        event.seconds = Int64(now / 1_000_000_000)
        event.microseconds = Int32(now % 1_000_000_000 / 1000)
        return event
    }
}

/// Frames for tests, as a kernel driver would report them.
enum TestFrames {
    static let report = InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0)

    static func key(_ code: UInt16, down: Bool) -> [InputEvent] {
        [InputEvent(type: Evdev.EV_KEY, code: code, value: down ? 1 : 0), report]
    }

    /// A contact in `slot` with tracking id `id` (a new id begins a touch) at x, y.
    static func touch(slot: Int32, id: Int32, x: Int32, y: Int32, first: Bool = false) -> [InputEvent] {
        var events = [
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_SLOT, value: slot),
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_TRACKING_ID, value: id),
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_POSITION_X, value: x),
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_POSITION_Y, value: y),
        ]
        if first { events.append(InputEvent(type: Evdev.EV_KEY, code: Evdev.BTN_TOUCH, value: 1)) }
        return events + [report]
    }

    static func lift(slot: Int32, last: Bool = false) -> [InputEvent] {
        var events = [
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_SLOT, value: slot),
            InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_TRACKING_ID, value: -1),
        ]
        if last { events.append(InputEvent(type: Evdev.EV_KEY, code: Evdev.BTN_TOUCH, value: 0)) }
        return events + [report]
    }

    static func switchFrame(_ code: UInt16, on: Bool) -> [InputEvent] {
        [InputEvent(type: Evdev.EV_SW, code: code, value: on ? 1 : 0), report]
    }
}

/// A client on the calling thread's loop that keeps every event its handler saw.
final class RecordingClient {
    let system: HIDEventSystem
    var events: [HIDEvent] = []

    init(
        server: String, name: String, loop: RingRunLoop = .current, configure: (inout HIDEventSystem.Configuration) -> Void = { _ in }
    ) throws {
        var configuration = HIDEventSystem.Configuration(server: server, clientName: name)
        configure(&configuration)
        system = HIDEventSystem(configuration: configuration, loop: loop)
        system.addHandler { [unowned self] event in
            self.events.append(event)
            return .pass
        }
        try system.start()
    }

    /// What its handlers were told about `device`.
    func view(_ device: HIDDeviceID) -> HandlerView { HandlerView(events, device: device) }

    func count(_ kind: HIDEvent.Kind) -> Int { events.filter { $0.kind == kind }.count }

    /// Key events of a code, as "down"/"up" in order.
    func keys(_ code: UInt16) -> [String] {
        events.compactMap { event in
            guard case .key(let key) = event.payload, key.code == code else { return nil }
            return key.state.rawValue
        }
    }

    /// Phases of the contacts with tracking id `id`, in order.
    func phases(_ id: Int32) -> [String] {
        events.flatMap { event -> [String] in
            guard case .digitizer(let frame) = event.payload else { return [] }
            return frame.contacts.filter { $0.trackingID == id }.map(\.phase.rawValue)
        }
    }
}

/// The devices the server tests use: a full keyboard, a multitouch screen, a lid switch.
enum ServerTestDevices {
    static func keyboard() throws -> HIDDeviceInfo { deviceInfo(of: try loadRecording("keyboard")) }
    static func touchscreen() throws -> HIDDeviceInfo { deviceInfo(of: try loadRecording("touchscreen-multitouch")) }
    static func lid() throws -> HIDDeviceInfo { deviceInfo(of: try loadRecording("lid-switch")) }
}
