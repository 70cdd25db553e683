import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

let devicesFolder: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/devices"
}()

func loadRecording(_ name: String) throws -> Recording {
    try Recording.load(contentsOf: devicesFolder + "/" + name + ".evemu")
}

/// A closure run on a new thread, joined.
final class ThreadBody: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }

    func runAndJoin() {
        var handle = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &handle, nil,
            { context in
                Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, context)
        pthread_join(handle, nil)
    }
}

final class ResultHolder<T>: @unchecked Sendable {
    // @unchecked: written by the thread, read after joining it.
    var result: Result<T, any Error>?
}

/// Runs `body` on a fresh thread (a fresh loop) and returns its result.
func onFreshThread<T>(_ body: @escaping () throws -> T) throws -> T {
    let holder = ResultHolder<T>()
    ThreadBody { holder.result = Result { try body() } }.runAndJoin()
    return try holder.result!.get()
}

/// Runs `body` on a fresh thread (a fresh loop) with an empty FUSE device folder mounted at a fresh
/// path under /tmp for its length (unmounted when `body` returns or throws); `body` gets the
/// folder's path, the folder and the thread's loop.
func onFreshThreadWithDeviceFolder<T>(
    _ body: @escaping (_ path: String, _ folder: FUSEDeviceFolder, _ loop: RingRunLoop) throws -> T
) throws -> T {
    try onFreshThread {
        let path = "/tmp/ringloop-hid-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        _ = MountLeakCheck.armed
        let folder = try FUSEDeviceFolder(path: path)
        defer { folder.close() }
        return try body(path, folder, RingRunLoop.current)
    }
}

/// Hosts `recording` on a FUSE node, runs the whole chain over it with `shape`, replays
/// every frame, then removes the device; returns every event the handler saw.
func runChain(
    _ recording: Recording, shape: HIDEventSystem.Shape, bufferSize: Int = 16384, coalesce: Bool = false,
    speed: ReplaySpeed = .asFastAsPossible, tracksInteractions: Bool = false, queueCapacity: Int = 1024,
    playsFirst: Bool = false, prepare: @escaping (HIDEventSystem, RingRunLoop) -> Void = { _, _ in }
) throws -> [HIDEvent] {
    try onFreshThreadWithDeviceFolder { path, folder, loop in
        let system = HIDEventSystem(
            configuration: .init(
                deviceDirectory: path, shape: shape, queueCapacity: queueCapacity, coalesceMotion: coalesce,
                tracksInteractions: tracksInteractions),
            loop: loop)
        var events: [HIDEvent] = []
        system.addHandler { event in
            events.append(event)
            return .pass
        }
        prepare(system, loop)
        try system.start()
        let node = try folder.addDevice(recording.description!, bufferSize: bufferSize, appliesFuzz: false)
        #expect(runUntil(loop) { events.contains { $0.kind == .deviceAdded } }, "device never attached")
        // With `playsFirst`, the whole recording waits in the device before the loop reads
        // any of it (its reads then carry many frames each, whatever the machine's load).
        if playsFirst { try Replay.play(recording, to: node, speed: speed) }
        // Otherwise replay from another thread while this loop runs, as a device and its
        // reader do.
        let finished = Atomic<Bool>(playsFirst)
        let failure = Mutex<VirtualDeviceError?>(nil)
        let player = LoopThread(name: "replay")
        let toPlay = UncheckedBox((recording, node))
        if !playsFirst {
            player.perform {
                do throws(VirtualDeviceError) {
                    try Replay.play(toPlay.value.0, to: toPlay.value.1, speed: speed)
                } catch {
                    failure.withLock { $0 = error }
                }
                finished.store(true, ordering: .releasing)
                loop.wakeUp()
            }
        }
        #expect(runUntil(loop, timeout: .seconds(120)) { finished.load(ordering: .acquiring) }, "the replay did not finish")
        player.stopAndJoin()
        if let error = failure.withLock({ $0 }) { throw error }
        let passing = RecordedExpectations(recording).eventsPassed
        #expect(
            runUntil(loop) { system.rawEventsRead >= passing },
            "\(recording.description!.name): \(system.rawEventsRead) of \(passing) events read")
        node.remove()
        #expect(runUntil(loop) { events.contains { $0.kind == .deviceRemoved } }, "removal never seen")
        system.stop()
        #expect(system.problems.isEmpty, "\(system.problems)")
        return events
    }
}

struct KeyRecord: Hashable { var code: UInt16; var state: KeyEvent.State }

@Suite("Input chain over the bundled recordings", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ChainTests {
    @Test("Keyboard: usages, states, modifiers and kernel repeats, nothing held at the end", arguments: HIDEventSystem.Shape.allCases)
    func keyboard(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("keyboard")
        let events = try runChain(recording, shape: shape)
        let keys = events.compactMap { event -> KeyEvent? in
            if case .key(let key) = event.payload { return key }
            return nil
        }
        let expected = recording.events.filter { $0.type == 1 }.map {
            KeyRecord(code: $0.code, state: $0.value == 2 ? .repeat : $0.value == 1 ? .down : .up)
        }
        #expect(keys.map { KeyRecord(code: $0.code, state: $0.state) } == expected)
        #expect(keys.first { $0.code == 35 }?.usage == HIDUsage(page: 0x07, usage: 0x0b), "KEY_H is keyboard usage 0x0B")
        #expect(keys.first { $0.code == 35 }?.modifiers == .leftShift, "H typed with Shift held")
        #expect(keys.filter { $0.state == .repeat }.count == 8)
        #expect(keys.last?.modifiers == [])
        #expect(events.last?.kind == .deviceRemoved)
    }

    @Test("Mouse: clicks, motion, and hi-res scroll totals counted once", arguments: HIDEventSystem.Shape.allCases)
    func mouse(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("mouse-hires-wheel")
        let events = try runChain(recording, shape: shape)
        var clicks = 0
        var rightClicks = 0
        var vertical = 0.0
        var horizontal = 0.0
        var dx: Int32 = 0
        for event in events {
            switch event.payload {
            case .button(let button) where button.isDown:
                if button.number == 1 { clicks += 1 } else if button.number == 2 { rightClicks += 1 }
            case .scroll(let scroll):
                vertical += scroll.vertical
                horizontal += scroll.horizontal
            case .pointerMotion(let motion): dx += motion.dx
            default: break
            }
        }
        #expect(clicks == 1 && rightClicks == 1)
        #expect(vertical == -2.0, "three notches down, one up")
        #expect(horizontal == 2.0)
        let recordedDX = recording.events.filter { $0.type == 2 && $0.code == 0 }.reduce(Int32(0)) { $0 + $1.value }
        #expect(dx == recordedDX)
    }

    @Test("Touchscreen: contacts, tracking ids and phases per frame; no live touch at the end", arguments: HIDEventSystem.Shape.allCases)
    func touchscreen(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let events = try runChain(recording, shape: shape)
        var live = Set<Int32>()
        var began = 0
        var ended = 0
        var maximumFingers = 0
        var errors: [String] = []
        for event in events {
            guard case .digitizer(let frame) = event.payload else { continue }
            maximumFingers = max(maximumFingers, frame.fingerCount)
            for contact in frame.contacts {
                switch contact.phase {
                case .began:
                    if live.contains(contact.trackingID) { errors.append("began twice \(contact.trackingID)") }
                    live.insert(contact.trackingID)
                    began += 1
                case .moved, .stationary:
                    if !live.contains(contact.trackingID) { errors.append("moved before began \(contact.trackingID)") }
                case .ended, .cancelled:
                    if live.remove(contact.trackingID) == nil { errors.append("ended unknown \(contact.trackingID)") }
                    ended += 1
                }
                #expect(contact.millimetresX != nil, "the screen reports a resolution")
            }
        }
        let recordedIDs = recording.events.filter { $0.type == 3 && $0.code == 0x39 && $0.value >= 0 }.count
        #expect(errors.isEmpty, "\(errors.prefix(5))")
        #expect(began == recordedIDs, "one began per tracking id")
        #expect(ended == began)
        #expect(live.isEmpty, "no ghost touch")
        #expect(maximumFingers == 3, "the three-finger swipe")
    }

    @Test("Both shapes deliver identical streams", arguments: ["keyboard", "mouse-hires-wheel", "touchpad", "pen-tablet", "gamepad"])
    func shapesAgree(name: String) throws {
        let recording = try loadRecording(name)
        let direct = try runChain(recording, shape: .clientLoop).map(summary)
        let threaded = try runChain(recording, shape: .dedicatedThread).map(summary)
        #expect(direct == threaded)
        #expect(direct.count > 3)
    }
}

/// A comparable summary of an event (kind and the fields that identify it).
func summary(_ event: HIDEvent) -> String {
    switch event.payload {
    case .key(let key): "key \(key.code) \(key.state)"
    case .button(let button): "button \(button.number) \(button.isDown)"
    case .pointerMotion(let motion): "motion \(motion.dx) \(motion.dy)"
    case .scroll(let scroll): "scroll \(scroll.vertical) \(scroll.horizontal)"
    case .digitizer(let frame): "touch " + frame.contacts.map { "\($0.trackingID):\($0.phase):\($0.x),\($0.y)" }.joined(separator: " ")
    case .pen(let pen): "pen \(pen.tool) \(pen.inProximity) \(pen.touching) \(pen.x) \(pen.y) \(pen.barrelButtons)"
    case .gamepadButton(let button): "pad \(button.code) \(button.isDown)"
    case .gamepadAxis(let axis): "axis \(axis.code) \(axis.value)"
    default: "\(event.kind)"
    }
}

/// Replays a client's view of touches: live ids at the end, and any protocol violation.
func touchLedger(_ events: [HIDEvent]) -> (began: Int, ended: Int, live: Set<Int32>, errors: [String], maxFingers: Int) {
    var live = Set<Int32>()
    var began = 0
    var ended = 0
    var errors: [String] = []
    var maxFingers = 0
    for event in events {
        guard case .digitizer(let frame) = event.payload else { continue }
        maxFingers = max(maxFingers, frame.fingerCount)
        for contact in frame.contacts {
            switch contact.phase {
            case .began:
                if !live.insert(contact.trackingID).inserted { errors.append("began twice \(contact.trackingID)") }
                began += 1
            case .moved, .stationary:
                if !live.contains(contact.trackingID) { errors.append("moved before began \(contact.trackingID)") }
            case .ended, .cancelled:
                if live.remove(contact.trackingID) == nil { errors.append("ended unknown \(contact.trackingID)") }
                ended += 1
            }
        }
    }
    return (began, ended, live, errors, maxFingers)
}
