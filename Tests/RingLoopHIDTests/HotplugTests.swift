import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A chain on a fresh thread over an empty FUSE folder; `body` drives it.
func withChain<T>(
    shape: HIDEventSystem.Shape = .clientLoop, queueCapacity: Int = 1024,
    _ body: @escaping (FUSEDeviceFolder, HIDEventSystem, RingRunLoop, () -> [HIDEvent]) throws -> T
) throws -> T {
    try onFreshThreadWithDeviceFolder { path, folder, loop in
        let system = HIDEventSystem(
            configuration: .init(deviceDirectory: path, shape: shape, queueCapacity: queueCapacity), loop: loop)
        var events: [HIDEvent] = []
        system.addHandler { event in
            events.append(event)
            return .pass
        }
        try system.start()
        defer { system.stop() }
        return try body(folder, system, loop, { events })
    }
}

@Suite("Hotplug, removal and dropped events", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct HotplugTests {
    @Test("A keyboard removed with a key held: the client sees added, events, a release, removed", arguments: HIDEventSystem.Shape.allCases)
    func keyboardVanishes(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("keyboard")
        try withChain(shape: shape) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            #expect(system.devices.first?.deviceClass == .keyboard)
            try node.send([(1, 30, 1), (0, 0, 0)])  // KEY_A down, never released
            #expect(runUntil(loop) { events().contains { summary($0) == "key 30 down" } })
            node.remove()
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceRemoved } })
            let kinds = events().map(summary)
            #expect(kinds == ["deviceAdded", "key 30 down", "key 30 up", "deviceRemoved"])
            #expect(system.devices.isEmpty)
        }
    }

    @Test("A touchscreen removed mid-touch: live touches are cancelled")
    func touchscreenVanishes() throws {
        let recording = try loadRecording("touchscreen-multitouch")
        try withChain { folder, _, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            try node.send([(3, 0x2f, 0), (3, 0x39, 7), (3, 0x35, 100), (3, 0x36, 200), (1, 0x14a, 1), (3, 0, 100), (3, 1, 200), (0, 0, 0)])
            #expect(runUntil(loop) { events().contains { $0.kind == .digitizer } })
            node.remove()
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceRemoved } })
            let touches = events().filter { $0.kind == .digitizer }.map(summary)
            #expect(touches == ["touch 7:began:100,200", "touch 7:cancelled:100,200"])
        }
    }

    @Test("A device that appears while the system runs is attached, classified and read")
    func appearsMidRun() throws {
        let recording = try loadRecording("power-button")
        try withChain { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            try Replay.play(recording, to: node, speed: .asFastAsPossible)
            #expect(runUntil(loop) { events().filter { $0.kind == .key }.count == 2 })

            let keys = events().compactMap { event -> KeyEvent? in
                if case .key(let key) = event.payload { return key }
                return nil
            }
            #expect(keys.map(\.usage) == [HIDUsage(page: 0x01, usage: 0x81), HIDUsage(page: 0x01, usage: 0x81)])
            #expect(system.devices.first?.deviceClass == .buttons)
        }
    }

    @Test("SYN_DROPPED mid-gesture: afterwards no key is held that is up, no touch live that lifted")
    func synDroppedResync() throws {
        let touch = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try withChain { folder, _, loop, events in
            // Tiny reader buffers (16 events), so a burst overflows them.
            let screen = try folder.addDevice(touch.description!, bufferSize: 16)
            let keys = try folder.addDevice(keyboard.description!, bufferSize: 16)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            // Without the loop running: a key goes down, then a burst, then it goes up
            // and the finger lifts, all before the reader catches up.
            try keys.send([(1, 30, 1), (0, 0, 0)])
            try screen.send([(3, 0x2f, 0), (3, 0x39, 9), (3, 0x35, 10), (3, 0x36, 10), (1, 0x14a, 1), (0, 0, 0)])
            for step in 1...40 {
                try screen.send([(3, 0x35, Int32(10 + step)), (3, 0, Int32(10 + step)), (0, 0, 0)])
                try keys.send([(1, 48, 1), (0, 0, 0), (1, 48, 0), (0, 0, 0)])
            }
            try keys.send([(1, 30, 0), (0, 0, 0)])
            try screen.send([(3, 0x39, -1), (1, 0x14a, 0), (0, 0, 0)])
            #expect(screen.overflowCount > 0 && keys.overflowCount > 0, "the burst must overflow")
            // Replay what the client saw: held keys and live touches.
            func stillDown() -> (held: Set<UInt16>, live: Set<Int32>) {
                var held = Set<UInt16>()
                var live = Set<Int32>()
                for event in events() {
                    switch event.payload {
                    case .key(let key): if key.state == .up { held.remove(key.code) } else { held.insert(key.code) }
                    case .digitizer(let frame):
                        for contact in frame.contacts {
                            if contact.phase == .ended || contact.phase == .cancelled {
                                live.remove(contact.trackingID)
                            } else {
                                live.insert(contact.trackingID)
                            }
                        }
                    default: break
                    }
                }
                return (held, live)
            }
            // Until both losses are reported, the reader has taken everything the nodes
            // hold, and nothing is down; then until a pass handles nothing more: the view
            // at the end, not one that matched mid-burst.
            let nodes = [keys, screen]
            #expect(
                runUntil(loop) {
                    events().filter { $0.kind == .eventsDropped }.count >= 2
                        && nodes.allSatisfy { $0.unreadEventCounts.allSatisfy { $0 == 0 } }
                        && stillDown().held.isEmpty && stillDown().live.isEmpty
                })
            let limit = MonotonicInstant.now + TestWait.bound
            while loop.run(mode: .default, for: .zero, returnAfterSourceHandled: true) == .handledSource, MonotonicInstant.now < limit {}
            let (held, live) = stillDown()
            #expect(held.isEmpty, "stuck keys: \(held)")
            #expect(live.isEmpty, "ghost touches: \(live)")
        }
    }

    @Test("A full client queue reports what it dropped")
    func queueOverflow() throws {
        let recording = try loadRecording("mouse-hires-wheel")
        try withChain(queueCapacity: 8) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!, bufferSize: 16384, appliesFuzz: false)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            try Replay.play(recording, to: node, speed: .asFastAsPossible)
            #expect(runUntil(loop) { system.rawEventsRead >= recording.events.count })
            loop.run(mode: .default, for: .milliseconds(20))
            let drops = events().compactMap { event -> Int? in
                if case .eventsDropped(let count) = event.payload { return count }
                return nil
            }
            #expect(!drops.isEmpty && drops.allSatisfy { $0 > 0 })
            #expect(system.statistics.dropped == drops.reduce(0, +))
        }
    }
}

extension HotplugTests {
    @Test("Stopping the event system closes every device file at once", arguments: HIDEventSystem.Shape.allCases)
    func stopReleasesFiles(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("power-button")
        try onFreshThreadWithDeviceFolder { path, folder, loop in
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path, shape: shape), loop: loop)
            var added = false
            system.addHandler(kinds: [.deviceAdded]) { _ in
                added = true
                return .pass
            }
            try system.start()
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { added })
            #expect(node.clientCount == 1)
            system.stop()
            // The loop does not run again: the file must be released without it.
            #expect(waitUntil { node.clientCount == 0 }, "a device file stayed open after stop")
        }
    }
}
