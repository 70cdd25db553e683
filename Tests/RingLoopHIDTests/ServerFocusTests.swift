import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// An event server and its clients in one process (the server on a thread of its own, the
/// clients on the test's loop): the routing, focus and flow control rules, through the
/// same ports and wire format as between processes (the ports go through their mailboxes).
@Suite("The event server: focus and routing")
struct ServerFocusTests {
    static func uniqueName(_ base: String) -> String { "test.server.\(base).\(getpid()).\(UInt32.random(in: 0...UInt32.max))" }

    @Test(
        "the focus moves while a key is held and a touch is down: the old client gets the key-up and the touch cancelled, the new one starts clean"
    )
    func focusMovesWhileHeld() throws {
        let name = Self.uniqueName("focus")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard(), try ServerTestDevices.touchscreen()])
        defer { server.stop() }
        let (keyboard, screen) = (server.deviceIDs[0], server.deviceIDs[1])
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try RecordingClient(server: name, name: "first")
            let second = try RecordingClient(server: name, name: "second")
            #expect(runUntil(loop) { first.count(.deviceAdded) == 2 && second.count(.deviceAdded) == 2 })
            #expect(first.system.isFocused && !second.system.isFocused)
            #expect(first.system.devices.map(\.deviceClass).sorted { $0.rawValue < $1.rawValue } == [.keyboard, .touchscreen])

            server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
            server.write([TestFrames.touch(slot: 0, id: 5, x: 100, y: 100, first: true)], device: 1)
            #expect(runUntil(loop) { first.keys(Evdev.KEY_A) == ["down"] && first.phases(5) == ["began"] })

            let ids = try server.sync { server in server.clients.map(\.id) }
            try server.sync { server in server.focus(ids[1]) }
            #expect(runUntil(loop) { first.keys(Evdev.KEY_A) == ["down", "up"] && first.phases(5) == ["began", "cancelled"] })
            #expect(runUntil(loop) { second.system.isFocused && !first.system.isFocused })

            // The key is released and the touch moves and lifts: neither client hears of it
            // (the new one never saw them begin); a new touch and key go to the new one.
            server.write([TestFrames.touch(slot: 0, id: 5, x: 120, y: 110)], device: 1)
            server.write([TestFrames.key(Evdev.KEY_A, down: false)], device: 0)
            server.write([TestFrames.touch(slot: 1, id: 6, x: 300, y: 300)], device: 1)
            server.write([TestFrames.key(Evdev.KEY_B, down: true), TestFrames.key(Evdev.KEY_B, down: false)], device: 0)
            server.write([TestFrames.lift(slot: 0), TestFrames.lift(slot: 1, last: true)], device: 1)
            #expect(
                runUntil(loop) {
                    second.keys(Evdev.KEY_B) == ["down", "up"] && second.phases(6).first == "began" && second.phases(6).last == "ended"
                },
                "\(second.keys(Evdev.KEY_B)) \(second.phases(6))")
            #expect(second.keys(Evdev.KEY_A).isEmpty, "a key-up for a key the client never saw down")
            #expect(second.phases(5).isEmpty, "a touch that began in another client")
            #expect(first.keys(Evdev.KEY_B).isEmpty && first.phases(6).isEmpty)
            #expect(first.keys(Evdev.KEY_A) == ["down", "up"] && first.phases(5) == ["began", "cancelled"])
            for client in [first, second] {
                #expect(client.view(keyboard).held.isEmpty && client.view(screen).touches.isEmpty)
            }
            first.system.stop()
            second.system.stop()
        }
        let events = server.clientEvents.withLock { $0 }
        #expect(events.filter { if case .focusChanged = $0 { true } else { false } }.count >= 2)
    }

    @Test("a client that attaches while a key is held sees no key-up for it, and gets the switches that are on")
    func joinWhileHeld() throws {
        let name = Self.uniqueName("join")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard(), try ServerTestDevices.lid()],
            configure: { $0.focusOnAttach = .newest })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try RecordingClient(server: name, name: "first")
            #expect(runUntil(loop) { first.count(.deviceAdded) == 2 })
            server.write([TestFrames.key(Evdev.KEY_Q, down: true)], device: 0)
            server.write([TestFrames.switchFrame(Evdev.SW_LID, on: true)], device: 1)
            #expect(runUntil(loop) { first.keys(Evdev.KEY_Q) == ["down"] && first.view(server.deviceIDs[1]).switches == [Evdev.SW_LID] })
            let late = try RecordingClient(server: name, name: "late")
            #expect(runUntil(loop) { late.count(.deviceAdded) == 2 && late.system.isFocused })
            #expect(runUntil(loop) { late.view(server.deviceIDs[1]).switches == [Evdev.SW_LID] })
            // The newest client took the focus: the first lost the key.
            #expect(runUntil(loop) { first.keys(Evdev.KEY_Q) == ["down", "up"] })
            server.write([TestFrames.key(Evdev.KEY_Q, down: false), TestFrames.key(Evdev.KEY_W, down: true)], device: 0)
            #expect(runUntil(loop) { late.keys(Evdev.KEY_W) == ["down"] })
            #expect(late.keys(Evdev.KEY_Q).isEmpty)
            // A client that subscribed to no switches hears of none.
            let quiet = try RecordingClient(server: name, name: "quiet") { configuration in
                guard case .server(var attachment) = configuration.input else { return }
                attachment.subscribedKinds = []
                configuration.input = .server(attachment)
            }
            #expect(runUntil(loop) { quiet.count(.deviceAdded) == 2 })
            server.write([TestFrames.switchFrame(Evdev.SW_LID, on: false)], device: 1)
            #expect(runUntil(loop) { first.view(server.deviceIDs[1]).switches.isEmpty && late.view(server.deviceIDs[1]).switches.isEmpty })
            #expect(quiet.count(.switchChanged) == 0)
            for client in [first, late, quiet] { client.system.stop() }
        }
    }

    @Test("a device's removal reaches every client after its keys are released; a client's stop detaches it from the server")
    func removalAndDetach() throws {
        let name = Self.uniqueName("removal")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "only")
            #expect(runUntil(loop) { client.count(.deviceAdded) == 1 })
            server.write([TestFrames.key(Evdev.KEY_Z, down: true)], device: 0)
            #expect(runUntil(loop) { client.keys(Evdev.KEY_Z) == ["down"] })
            server.closeDevice(0)
            #expect(runUntil(loop) { client.count(.deviceRemoved) == 1 })
            #expect(client.keys(Evdev.KEY_Z) == ["down", "up"])
            #expect(client.system.devices.isEmpty)
            client.system.stop()
        }
        #expect(waitUntil { (try? server.sync { $0.clients.isEmpty }) == true })
    }
}

extension ServerFocusTests {
    @Test("a client hears its focus come and go in order with its events: the key-up of a held key before the loss")
    func focusInOrder() throws {
        let name = Self.uniqueName("focus-order")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try RecordingClient(server: name, name: "first")
            var changes: [Bool] = []
            first.system.onFocusChange { changes.append($0) }
            #expect(runUntil(loop) { first.count(.deviceAdded) == 1 })
            let second = try RecordingClient(server: name, name: "second")
            #expect(runUntil(loop) { second.count(.deviceAdded) == 1 })
            server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
            #expect(runUntil(loop) { first.keys(Evdev.KEY_A) == ["down"] })
            let ids = try server.sync { server in server.clients.map(\.id) }
            try server.sync { server in server.focus(ids[1]) }
            #expect(runUntil(loop) { first.count(.focusChanged) == 2 && second.count(.focusChanged) == 1 })
            let order = first.events.compactMap { event -> String? in
                switch event.payload {
                case .focusChanged(let focused): focused ? "gained" : "lost"
                case .key(let key): "\(key.codeName) \(key.state)"
                default: nil
                }
            }
            #expect(order == ["gained", "KEY_A down", "KEY_A up", "lost"], "\(order)")
            #expect(changes == [true, false], "the welcome's focus waits in the queue: a callback added after start hears it")
            #expect(second.events.contains { $0.payload == .focusChanged(isFocused: true) })
            first.system.stop()
            second.system.stop()
        }
    }
}
