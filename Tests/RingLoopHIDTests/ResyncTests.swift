import CLibEvdev
import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// What handlers were told, replayed: keys and buttons held, touches live, switches on.
struct HandlerView: Equatable, CustomStringConvertible {
    var held = Set<UInt16>()
    var touches = Set<Int32>()
    var switches = Set<UInt16>()
    var removed = false

    init(_ events: [HIDEvent], device: HIDDeviceID? = nil) {
        for event in events where device == nil || event.device == device {
            switch event.payload {
            case .key(let key) where key.state != .repeat: if key.state == .up { held.remove(key.code) } else { held.insert(key.code) }
            case .button(let button): if button.isDown { held.insert(button.code) } else { held.remove(button.code) }
            case .digitizer(let frame):
                for contact in frame.contacts {
                    if contact.phase == .ended || contact.phase == .cancelled {
                        touches.remove(contact.trackingID)
                    } else {
                        touches.insert(contact.trackingID)
                    }
                }
            case .switchChanged(let change): if change.isOn { switches.insert(change.code) } else { switches.remove(change.code) }
            case .deviceRemoved: removed = true
            default: break
            }
        }
    }

    /// What the device itself reports now, read through libevdev on a fresh descriptor.
    init(node path: String, keys: ClosedRange<UInt16> = 1...0x2ff) {
        let fd = open(path, O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        var device: OpaquePointer?
        guard fd >= 0, libevdev_new_from_fd(fd, &device) == 0 else { return }
        defer { libevdev_free(device) }
        for code in keys where libevdev_get_event_value(device, 1, UInt32(code)) == 1 && !(0x140...0x14f).contains(code) {
            held.insert(code)
        }
        let slots = libevdev_get_num_slots(device)
        if slots > 0 {
            for slot in 0..<slots {
                let id = libevdev_get_slot_value(device, UInt32(slot), 0x39)
                if id >= 0 { touches.insert(id) }
            }
        }
        for code in UInt16(0)...0x10 where libevdev_get_event_value(device, 5, UInt32(code)) == 1 { switches.insert(code) }
    }

    var description: String { "held \(held.sorted()), touches \(touches.sorted()), switches \(switches.sorted())" }
}

@Suite("Resync is a difference, in both shapes", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ResyncTests {
    static let keyboard = try! loadRecording("keyboard")
    static let touchscreen = try! loadRecording("touchscreen-multitouch")

    /// The burst of a chord and a gesture whose middle is lost: 'a' goes down before it and
    /// up inside it, 'd' goes down inside it and stays; touch 9 begins before and lifts
    /// inside, touch 11 begins inside and stays.
    static func burst(keys: FUSEEvdevNode, screen: FUSEEvdevNode, steps: Int) throws {
        try keys.send([(1, 30, 1), (0, 0, 0)])
        try screen.send([(3, 0x2f, 0), (3, 0x39, 9), (3, 0x35, 100), (3, 0x36, 100), (1, 0x14a, 1), (0, 0, 0)])
        for step in 1...steps {
            try keys.send([(1, 48, 1), (0, 0, 0), (1, 48, 0), (0, 0, 0)])
            try screen.send([(3, 0x35, Int32(100 + step)), (3, 0, Int32(100 + step)), (0, 0, 0)])
        }
        try keys.send([(1, 30, 0), (0, 0, 0), (1, 32, 1), (0, 0, 0)])
        try screen.send([(3, 0x39, -1), (0, 0, 0), (3, 0x2f, 1), (3, 0x39, 11), (3, 0x35, 300), (3, 0x36, 300), (0, 0, 0)])
        for step in 1...steps {
            try keys.send([(1, 48, 1), (0, 0, 0), (1, 48, 0), (0, 0, 0)])
            try screen.send([(3, 0x35, Int32(300 + step)), (0, 0, 0)])
        }
    }

    /// Runs `loop` until the nodes have given out every event, then until the system has
    /// delivered all of it (``HIDEventSystem/afterInputDelivered(_:)``: on the event thread
    /// too, whose notice comes once it has read and pushed everything) and `settled`
    /// holds, then until a pass of the loop handles nothing more: what the handlers saw by
    /// then is what they see afterwards (a view that matched mid-burst could still change).
    /// By then the system has counted every event the nodes gave out.
    static func settle(_ loop: RingRunLoop, _ system: HIDEventSystem, _ nodes: [FUSEEvdevNode], _ settled: () -> Bool) -> Bool {
        let given = runUntil(loop) { nodes.allSatisfy { $0.unreadEventCounts.allSatisfy { $0 == 0 } } }
        var delivered = false
        system.afterInputDelivered { delivered = true }
        let handedOver = runUntil(loop) { delivered && settled() }
        let limit = MonotonicInstant.now + TestWait.bound
        while loop.run(mode: .default, for: .zero, returnAfterSourceHandled: true) == .handledSource, MonotonicInstant.now < limit {}
        let taken = nodes.reduce(0) { $0 + $1.eventsTaken }
        #expect(system.rawEventsRead == taken, "the system counted \(system.rawEventsRead) of the \(taken) events the nodes gave out")
        return given && handedOver
    }

    @Test(
        "A full queue or hand-off mid-chord and mid-gesture: afterwards the handlers' view is the device's",
        arguments: HIDEventSystem.Shape.allCases)
    func queueLoss(shape: HIDEventSystem.Shape) throws {
        try withChain(shape: shape, queueCapacity: 8) { folder, system, loop, events in
            let keys = try folder.addDevice(Self.keyboard.description!, bufferSize: 65536)
            let screen = try folder.addDevice(Self.touchscreen.description!, bufferSize: 65536)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            // The client loop does not run during the burst: the reader (or the event
            // thread) takes it all at once and the 8-event queue overflows.
            try Self.burst(keys: keys, screen: screen, steps: 30)
            let ids = Dictionary(uniqueKeysWithValues: system.devices.map { ($0.path, $0.id) })
            #expect(
                Self.settle(loop, system, [keys, screen]) {
                    system.statistics.dropped > 0 && HandlerView(events(), device: ids[keys.path]).held == [32]
                        && HandlerView(events(), device: ids[screen.path]).touches == [11]
                })
            #expect(events().contains { $0.kind == .eventsDropped }, "the queue must have overflowed")
            let keysView = HandlerView(events(), device: ids[keys.path])
            let screenView = HandlerView(events(), device: ids[screen.path])
            #expect(
                keysView.held == HandlerView(node: keys.path).held, "keys: handlers \(keysView), device \(HandlerView(node: keys.path))")
            #expect(keysView.held == [32])
            #expect(screenView.touches == HandlerView(node: screen.path).touches, "touches: handlers \(screenView)")
            #expect(screenView.touches == [11])
        }
    }

    @Test("SYN_DROPPED mid-chord and mid-gesture: afterwards the handlers' view is the device's", arguments: HIDEventSystem.Shape.allCases)
    func kernelLoss(shape: HIDEventSystem.Shape) throws {
        try withChain(shape: shape) { folder, system, loop, events in
            // 16-event reader buffers: the burst overflows them in the "kernel".
            let keys = try folder.addDevice(Self.keyboard.description!, bufferSize: 16)
            let screen = try folder.addDevice(Self.touchscreen.description!, bufferSize: 16)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            try Self.burst(keys: keys, screen: screen, steps: 30)
            // With the client loop reading, nothing reads during the burst: the buffers
            // overflow. The event-system thread reads as events come and may keep up;
            // either way the view must end as the device's.
            if shape == .clientLoop { #expect(keys.overflowCount > 0 && screen.overflowCount > 0) }
            let ids = Dictionary(uniqueKeysWithValues: system.devices.map { ($0.path, $0.id) })
            #expect(
                Self.settle(loop, system, [keys, screen]) {
                    HandlerView(events(), device: ids[keys.path]).held == [32]
                        && HandlerView(events(), device: ids[screen.path]).touches == [11]
                })
            let keysView = HandlerView(events(), device: ids[keys.path])
            let screenView = HandlerView(events(), device: ids[screen.path])
            #expect(keysView.held == [32], "\(keysView)")
            #expect(screenView.touches == [11], "\(screenView)")
        }
    }

    @Test("A device removed while the queue is full: its releases and its removal are never lost", arguments: HIDEventSystem.Shape.allCases)
    func removalDuringLoss(shape: HIDEventSystem.Shape) throws {
        try withChain(shape: shape, queueCapacity: 8) { folder, system, loop, events in
            let keys = try folder.addDevice(Self.keyboard.description!, bufferSize: 65536)
            let screen = try folder.addDevice(Self.touchscreen.description!, bufferSize: 65536)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            let ids = Dictionary(uniqueKeysWithValues: system.devices.map { ($0.path, $0.id) })
            try Self.burst(keys: keys, screen: screen, steps: 30)
            if shape == .dedicatedThread {
                // The event thread reads without the loop: the removal comes once it has
                // taken the whole burst in (on a loaded machine it could come first).
                let nodes = [keys, screen]
                #expect(waitUntil { nodes.allSatisfy { $0.unreadEventCounts.allSatisfy { $0 == 0 } } }, "the burst was never read")
            }
            keys.remove()
            screen.remove()
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceRemoved }.count == 2 }, "a removal was lost")
            loop.run(mode: .default, for: .milliseconds(50))
            // The event thread took the burst in and the hand-off overflowed; on the client
            // loop the burst was never read (a removed node answers ENODEV at once, as the
            // kernel's evdev does).
            if shape == .dedicatedThread { #expect(events().contains { $0.kind == .eventsDropped }) }
            for path in [keys.path, screen.path] {
                let view = HandlerView(events(), device: ids[path])
                #expect(view.removed)
                #expect(view.held.isEmpty && view.touches.isEmpty, "\(path): \(view) after removal")
                // The removal comes last for its device.
                #expect(events().last { $0.device == ids[path] }?.kind == .deviceRemoved)
            }
        }
    }
}

extension ResyncTests {
    static let mouse = try! loadRecording("mouse-hires-wheel")
    static let gamepad = try! loadRecording("gamepad")

    /// The codes a device's events say are held, counting only events of `kind`.
    static func held(_ events: [HIDEvent], device: HIDDeviceID?, kind: HIDEvent.Kind) -> Set<UInt16> {
        var held = Set<UInt16>()
        for event in events where event.device == device {
            switch event.payload {
            case .button(let button) where kind == .button:
                if button.isDown { held.insert(button.code) } else { held.remove(button.code) }
            case .gamepadButton(let button) where kind == .gamepadButton:
                if button.isDown { held.insert(button.code) } else { held.remove(button.code) }
            case .key(let key) where kind == .key && key.state != .repeat:
                if key.state == .up { held.remove(key.code) } else { held.insert(key.code) }
            default: break
            }
        }
        return held
    }

    @Test(
        "A full queue mid-drag and mid-press: a mouse's and a gamepad's buttons come back as the kinds they were delivered as",
        arguments: HIDEventSystem.Shape.allCases)
    func queueLossKeepsKinds(shape: HIDEventSystem.Shape) throws {
        try withChain(shape: shape, queueCapacity: 8) { folder, system, loop, events in
            let mouse = try folder.addDevice(Self.mouse.description!, bufferSize: 65536)
            let pad = try folder.addDevice(Self.gamepad.description!, bufferSize: 65536)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            // BTN_LEFT and BTN_SOUTH go down before the loss and up inside it; BTN_RIGHT and
            // BTN_EAST go down inside it and stay.
            try mouse.send([(1, 0x110, 1), (0, 0, 0)])
            try pad.send([(1, 0x130, 1), (0, 0, 0)])
            for step in 1...30 {
                try mouse.send([(2, 0, 1), (0, 0, 0)])
                try pad.send([(3, 0, Int32(step * 100)), (0, 0, 0)])
            }
            try mouse.send([(1, 0x110, 0), (0, 0, 0), (1, 0x111, 1), (0, 0, 0)])
            try pad.send([(1, 0x130, 0), (0, 0, 0), (1, 0x131, 1), (0, 0, 0)])
            for step in 1...30 {
                try mouse.send([(2, 0, 1), (0, 0, 0)])
                try pad.send([(3, 0, Int32(-step * 100)), (0, 0, 0)])
            }
            let ids = Dictionary(uniqueKeysWithValues: system.devices.map { ($0.path, $0.id) })
            #expect(
                Self.settle(loop, system, [mouse, pad]) {
                    system.statistics.dropped > 0 && Self.held(events(), device: ids[mouse.path], kind: .button) == [0x111]
                        && Self.held(events(), device: ids[pad.path], kind: .gamepadButton) == [0x131]
                })
            #expect(events().contains { $0.kind == .eventsDropped }, "the queue must have overflowed")
            let buttons = Self.held(events(), device: ids[mouse.path], kind: .button)
            #expect(buttons == HandlerView(node: mouse.path).held, "mouse: handlers \(buttons)")
            #expect(buttons == [0x111])
            let padButtons = Self.held(events(), device: ids[pad.path], kind: .gamepadButton)
            #expect(padButtons == HandlerView(node: pad.path).held, "gamepad: handlers \(padButtons)")
            #expect(padButtons == [0x131])
            for path in [mouse.path, pad.path] {
                #expect(!events().contains { $0.device == ids[path] && $0.kind == .key }, "\(path): a button came as a key")
            }
        }
    }
}
