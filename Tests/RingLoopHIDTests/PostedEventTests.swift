import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopHID
import RingLoopTestSupport
import SystemPackage
import Testing

/// An app's own events put into its chain (`HIDEventSystem.post`, as
/// `IOHIDEventSystemClientDispatchEvent`), through the public API only.
@Suite("Events an app posts into its chain")
struct PostedEventTests {
    static func key(_ code: UInt16, _ state: KeyEvent.State, device: UInt32 = 9) -> HIDEvent {
        HIDEvent(
            device: HIDDeviceID(rawValue: device), timestamp: .now,
            payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: state)))
    }

    /// A system reading no device node (nothing in /tmp is named as one).
    static func system(_ configuration: HIDEventSystem.Configuration = .init(), loop: RingRunLoop) -> HIDEventSystem {
        var configuration = configuration
        var folder = HIDEventSystem.DeviceFolder(path: "/tmp", nodeNames: [])
        if case .devices(let given) = configuration.input { folder.shape = given.shape }
        configuration.input = .devices(folder)
        return HIDEventSystem(configuration: configuration, loop: loop)
    }

    @Test("posted events reach the handlers queued, in order, through the handlers' filters", arguments: HIDEventSystem.Shape.allCases)
    func order(shape: HIDEventSystem.Shape) throws {
        let motion = HIDEvent(device: HIDDeviceID(rawValue: 9), timestamp: .now, payload: .pointerMotion(PointerMotionEvent(dx: 3, dy: -1)))
        let posted = [Self.key(30, .down), motion, Self.key(30, .up)]
        let (all, keys, inPost) = try onFreshThread { () throws -> ([HIDEvent], [HIDEvent], Int) in
            let loop = RingRunLoop.current
            let system = Self.system(.init(shape: shape), loop: loop)
            var all: [HIDEvent] = []
            var keys: [HIDEvent] = []
            system.addHandler { event in
                all.append(event)
                return .pass
            }
            system.addHandler(kinds: [.key]) { event in
                keys.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            for event in posted { #expect(try system.post(event)) }
            // Queued: no handler runs inside post.
            let inPost = all.count
            #expect(runUntil(loop) { all.count == posted.count })
            return (all, keys, inPost)
        }
        #expect(inPost == 0)
        #expect(all == posted)
        #expect(keys == [posted[0], posted[2]])
    }

    @Test("a posted key repeats as a device's does, and its up stops the repeats")
    func keyRepeat() throws {
        let (all, upIndex) = try onFreshThread { () throws -> ([HIDEvent], Int) in
            let loop = RingRunLoop.current
            let system = Self.system(.init(keyRepeat: (delay: .milliseconds(20), interval: .milliseconds(10))), loop: loop)
            var all: [HIDEvent] = []
            system.addHandler { event in
                all.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            try system.post(Self.key(30, .down))
            let repeated = runUntil(loop) {
                all.contains { if case .key(let key) = $0.payload { key.state == .repeat } else { false } }
            }
            #expect(repeated, "no repeat of a posted key: \(all)")
            try system.post(Self.key(30, .up))
            #expect(runUntil(loop) { all.last.map { if case .key(let key) = $0.payload { key.state == .up } else { false } } ?? false })
            let upIndex = all.count - 1
            // Six repeat intervals with the key up: none may come.
            loop.run(mode: .default, for: .milliseconds(60))
            return (all, upIndex)
        }
        #expect(all.count == upIndex + 1, "events after the up: \(all[(upIndex + 1)...])")
        #expect(all.allSatisfy { if case .key(let key) = $0.payload { key.code == 30 } else { false } })
    }

    @Test(
        "a full queue drops a posted event, says so, and then delivers the difference it left",
        arguments: HIDEventSystem.Shape.allCases)
    func fullQueue(shape: HIDEventSystem.Shape) throws {
        let (results, all) = try onFreshThread { () throws -> ([Bool], [HIDEvent]) in
            let loop = RingRunLoop.current
            let system = Self.system(.init(shape: shape, queueCapacity: 4), loop: loop)
            var all: [HIDEvent] = []
            system.addHandler { event in
                all.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            // Six keys down while the loop does not run: the queue holds four.
            let results = try (UInt16(30)...35).map { try system.post(Self.key($0, .down)) }
            #expect(runUntil(loop) { all.contains { $0.kind == .eventsDropped } && all.count >= 7 })
            return (results, all)
        }
        #expect(results == [true, true, true, true, false, false])
        let downs = all.compactMap { if case .key(let key) = $0.payload, key.state == .down { key.code } else { nil } }
        // The four queued, then the loss, then the two dropped keys' state as a difference.
        #expect(downs.sorted() == Array(30...35), "\(all)")
        #expect(Array(downs.prefix(4)) == [30, 31, 32, 33])
        let dropped = try #require(all.firstIndex { $0.kind == .eventsDropped })
        #expect(dropped == 4)
        if case .eventsDropped(let count) = all[dropped].payload { #expect(count == 2) }
    }

    @Test("posting needs a started system and an input event; the errors say what would do")
    func refusals() throws {
        try onFreshThread { () throws -> Void in
            let loop = RingRunLoop.current
            let system = Self.system(loop: loop)
            let early = #expect(throws: HIDError.self) { try system.post(Self.key(30, .down)) }
            guard case .configuration(let message)? = early else {
                Issue.record("not a configuration error: \(String(describing: early))")
                return
            }
            #expect(message.contains("not started") && message.contains("start()"), "\(message)")
            try system.start()
            defer { system.stop() }
            for payload: HIDEvent.Payload in [.deviceAdded, .deviceRemoved, .eventsDropped(count: 1)] {
                let event = HIDEvent(device: HIDDeviceID(rawValue: 9), timestamp: .now, payload: payload)
                let refused = #expect(throws: HIDError.self) { try system.post(event) }
                guard case .configuration(let message)? = refused else {
                    Issue.record("\(event.kind): not a configuration error: \(String(describing: refused))")
                    continue
                }
                #expect(message.contains(event.kind.rawValue) && message.contains("post an input event"), "\(message)")
            }
        }
    }

    @Test("a handler that filters by class sees a posted event only under an attached device of that class")
    func classFilter() throws {
        let keyboard = HIDDeviceInfo.describing(
            name: "Posted Keyboard", codes: [Evdev.EV_KEY: Set((1...88).map(UInt16.init))], axes: [:], properties: [])
        let (byClass, all, keyboardID) = try onFreshThread { () throws -> ([HIDEvent], [HIDEvent], HIDDeviceID) in
            let loop = RingRunLoop.current
            let system = Self.system(loop: loop)
            var byClass: [HIDEvent] = []
            var all: [HIDEvent] = []
            system.addHandler(deviceClasses: [.keyboard]) { event in
                byClass.append(event)
                return .pass
            }
            system.addHandler { event in
                all.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            let id = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: keyboard)
            #expect(runUntil(loop) { all.contains { $0.kind == .deviceAdded } })
            try system.post(Self.key(30, .down, device: id.rawValue &+ 1000))
            try system.post(Self.key(30, .down, device: id.rawValue))
            #expect(runUntil(loop) { all.count == 3 })
            try system.post(Self.key(30, .up, device: id.rawValue))
            #expect(runUntil(loop) { all.count == 4 })
            return (byClass, all, id)
        }
        let keys = byClass.filter { $0.kind == .key }
        #expect(keys.count == 2 && keys.allSatisfy { $0.device == keyboardID }, "\(byClass)")
        #expect(all.filter { $0.kind == .key }.count == 3)
    }
}
