import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop
@testable import RingLoopHID

/// The event server and its clients against peers that do not play by the rules: found by
/// probing `ringloop serve` and `monitor --server` as a neighbour would.
@Suite("The event server against careless and hostile peers")
struct ServerHostilePeerTests {
    static func key(_ device: UInt32, _ code: UInt16, down: Bool) -> HIDEvent {
        HIDEvent(
            device: HIDDeviceID(rawValue: device), timestamp: .now,
            payload: .key(KeyEvent(usage: nil, code: code, state: down ? .down : .up, modifiers: [])))
    }

    static func lifecycle(_ device: UInt32, added: Bool) -> HIDEvent {
        HIDEvent(device: HIDDeviceID(rawValue: device), timestamp: .now, payload: added ? .deviceAdded : .deviceRemoved)
    }

    @Test("events of a device the server never described, or has removed, reach no handler of the client, which reports them")
    func undescribedDevices() throws {
        let name = ServerFocusTests.uniqueName("undescribed")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "client")
            #expect(try server.waitForClient())
            var keyboard = try ServerTestDevices.keyboard()
            keyboard.id = HIDDeviceID(rawValue: 1)
            var second = keyboard
            second.id = HIDDeviceID(rawValue: 2)
            try server.describe(keyboard)
            try server.send([Self.lifecycle(1, added: true)])
            try server.send([Self.key(777, Evdev.KEY_A, down: true)])
            try server.send([Self.lifecycle(555, added: false)])
            try server.send([Self.key(1, Evdev.KEY_B, down: true), Self.key(1, Evdev.KEY_B, down: false)])
            try server.send([Self.lifecycle(1, added: false)])
            try server.send([Self.key(1, Evdev.KEY_C, down: true)])
            // Messages of one sender arrive in order: once the second device is in, every
            // batch before it has been taken.
            try server.describe(second)
            try server.send([Self.lifecycle(2, added: true)])
            #expect(runUntil(loop) { client.events.contains { $0.kind == .deviceAdded && $0.device.rawValue == 2 } })
            // (The client's own focus change, made from the server's welcome, is no device's.)
            let seen = client.events.filter { $0.kind != .focusChanged }.map { event -> String in
                if case .key(let key) = event.payload { return "\(event.device.rawValue) key \(key.code) \(key.state)" }
                return "\(event.device.rawValue) \(event.kind.rawValue)"
            }
            #expect(
                seen == ["1 deviceAdded", "1 key \(Evdev.KEY_B) down", "1 key \(Evdev.KEY_B) up", "1 deviceRemoved", "2 deviceAdded"],
                "\(seen)")
            // Reported once (a server that keeps doing it cannot fill the client's problems),
            // counted every time.
            let reports = client.system.problems.map(\.description).filter { $0.contains("has not described") }
            #expect(reports.count == 1, "\(client.system.problems)")
            #expect((client.system.feed as? ServerDeviceFeed)?.unknownDeviceEvents == 3)
            client.system.stop()
        }
    }

    @Test(
        "a server sending a touchpad's motion or scrolling with huge finite amounts (1e20, 1e155, 1e308) is refused, reported once: the client's pointer stage, with a custom curve, does not trap and hands on only the ordinary motion"
    )
    func hugeAmounts() throws {
        let name = ServerFocusTests.uniqueName("huge")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        let curve = try CustomAccelerationCurve(step: 1, points: [0, 1, 3])
        let pointer = try PointerSettings(acceleration: PointerAcceleration(profile: .custom, curve: curve))
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "client") { $0.pointer = pointer }
            #expect(try server.waitForClient())
            var touchpad = deviceInfo(of: try touchpadRecording("SynPS2 Synaptics TouchPad.leftmove.events"))
            touchpad.id = HIDDeviceID(rawValue: 1)
            #expect(touchpad.deviceClass == .touchpad)
            try server.describe(touchpad)
            try server.send([Self.lifecycle(1, added: true)])
            func motion(_ dx: Double, _ dy: Double) -> HIDEvent {
                HIDEvent(
                    device: HIDDeviceID(rawValue: 1), timestamp: .now,
                    payload: .pointerMotion(PointerMotionEvent(dx: 0, dy: 0, unacceleratedDX: dx, unacceleratedDY: dy)))
            }
            let hostile = [
                motion(1e20, 0), motion(-1e155, 1e155), motion(1e308, 1e308),
                HIDEvent(
                    device: HIDDeviceID(rawValue: 1), timestamp: .now,
                    payload: .scroll(ScrollEvent(vertical: 0, unscaledVertical: 1e308, unscaledHorizontal: -1e20))),
            ]
            for event in hostile { try server.send([event]) }
            try server.send([motion(3, -4)])
            #expect(runUntil(loop) { client.count(.pointerMotion) >= 1 })
            let motions = client.events.compactMap { event -> PointerMotionEvent? in
                guard case .pointerMotion(let motion) = event.payload else { return nil }
                return motion
            }
            #expect(motions.map(\.unacceleratedDX) == [3], "\(motions)")
            #expect(motions.allSatisfy { $0.acceleratedDX.isFinite && $0.acceleratedDY.isFinite }, "\(motions)")
            #expect(client.count(.scroll) == 0)
            let feed = try #require(client.system.feed as? ServerDeviceFeed)
            #expect(feed.protocolViolations == hostile.count)
            let reports = client.system.problems.map(\.description).filter { $0.contains("breaks the protocol") }
            #expect(reports.count == 1, "\(client.system.problems)")
            #expect(reports.first?.contains("motion unaccelerated dx is beyond ±1000000") == true, "\(reports)")
            client.system.stop()
        }
    }

    @Test("a server that describes more devices than a client keeps is refused past the limit, reported once")
    func tooManyDevices() throws {
        let name = ServerFocusTests.uniqueName("devices")
        let server = try FakeEventServer(name: name)
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "client")
            #expect(try server.waitForClient())
            let keyboard = try ServerTestDevices.keyboard()
            let extra = 10
            // From another thread: the client's loop (this thread) takes them meanwhile.
            let failure = ThreadLock<(any Error)?>(nil)
            let sender = PosixThread.start(name: "describer") {
                do {
                    var device = keyboard
                    for id in 1...(ServerWire.maximumDevices + extra) {
                        device.id = HIDDeviceID(rawValue: UInt32(id))
                        try server.describe(device)
                    }
                    // The first device can still be added (it was described within the
                    // limit); its addition comes after every description.
                    try server.send([Self.lifecycle(1, added: true)])
                } catch {
                    failure.withLock { $0 = error }
                }
            }
            #expect(runUntil(loop) { client.count(.deviceAdded) == 1 || failure.withLock { $0 != nil } })
            sender.join()
            #expect(failure.withLock { $0 } == nil)
            let feed = try #require(client.system.feed as? ServerDeviceFeed)
            #expect(feed.protocolViolations == extra)
            let reports = client.system.problems.map(\.description).filter { $0.contains("breaks the protocol") }
            #expect(reports.count == 1, "\(client.system.problems.count) problems")
            // The server goes: the client removes the one device its handlers saw added,
            // not the 1,024 it only had described (it reported 1,023 removals of devices
            // its handlers never saw).
            server.stop()
            #expect(runUntil(loop) { client.count(.deviceRemoved) >= 1 })
            #expect(client.count(.deviceRemoved) == 1, "\(client.count(.deviceRemoved)) removals")
            client.system.stop()
        }
    }

    @Test(
        "a server's name as long as a port's name may be is still one a client can attach to; a client's name loses its control characters")
    func longNameAndControlCharacters() throws {
        let base = ServerFocusTests.uniqueName("long") + "."
        let name = base + String(repeating: "n", count: LocalMessagePort.maximumNameLength - base.utf8.count)
        #expect(name.utf8.count == LocalMessagePort.maximumNameLength)
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "evil\u{1B}[31m\nname\u{0}")
            #expect(runUntil(loop) { client.count(.deviceAdded) == 1 })
            server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
            #expect(runUntil(loop) { client.keys(Evdev.KEY_A) == ["down"] })
            #expect(try server.sync { $0.clients.map(\.name) } == ["evil?[31m?name?"])
            client.system.stop()
        }
    }

    @Test("a hello naming a port another client already has is refused: one process's port cannot fill the server's slots")
    func helloWithTakenPort() throws {
        let name = ServerFocusTests.uniqueName("taken")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try SilentClient(server: name, portName: name + ".silent", loop: loop)
            #expect(first.welcome.refusal == nil)
            let again = ServerWire.Hello(
                token: first.token &+ 1, port: name + ".silent", name: "again", kinds: [], deviceClasses: [], wantsFocus: false)
            let reply = try first.server.sendRequest(
                msgid: ServerWire.MessageID.hello.rawValue, data: again.encoded, replyTimeout: .seconds(10))
            let welcome = try ServerWire.Welcome(decoding: reply)
            #expect(welcome.refusal?.contains("is another client's") == true, "\(welcome)")
            #expect(try server.sync { $0.clients.count } == 1)
        }
    }

    @Test("a malformed message from an attached client's process drops that client, as the format says")
    func malformedMessageDropsTheClient() throws {
        let name = ServerFocusTests.uniqueName("malformed")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try SilentClient(server: name, portName: name + ".silent", loop: loop)
            #expect(client.welcome.refusal == nil)
            #expect(try server.sync { $0.clients.count } == 1)
            // An acknowledgement cut short: a violation of the format.
            try client.server.send(msgid: ServerWire.MessageID.ack.rawValue, data: [1, 2, 3])
            #expect(runUntil(loop) { (try? server.sync { $0.clients.isEmpty }) == true })
            #expect(server.clientEvents.withLock { $0.contains { if case .detached = $0 { true } else { false } } })
        }
    }

    @Test("a client re-attaching while its server's name is held by a user it does not trust reports it once, not at every try")
    func untrustedHolderReportedOnce() throws {
        let name = ServerFocusTests.uniqueName("squatted")
        try onFreshThread {
            let loop = RingRunLoop.current
            // No server yet: the client waits for one, trusting only uid 65534.
            let client = try RecordingClient(server: name, name: "client") { configuration in
                guard case .server(var attachment) = configuration.input else { return }
                attachment.trusting = .users([65534])
                configuration.input = .server(attachment)
            }
            let feed = try #require(client.system.feed as? ServerDeviceFeed)
            // Then a process of uid 0 (this one, outside any port) takes the name.
            let address = try MessagePortNamespace.abstract.address(of: name)
            let squatter = try address.makeListeningSocket(type: .sequencedPacket, backlog: 64).rawValue
            defer { close(squatter) }
            let tries = feed.attachAttempts
            #expect(runUntil(loop) { feed.attachAttempts >= tries + 5 })
            let reports = client.system.problems.map(\.description).filter { $0.contains("uid 0") }
            #expect(reports.count == 1, "\(client.system.problems)")
            client.system.stop()
        }
    }

    @Test("a hello naming a port whose backlog is full is refused at once: the server's loop does not wait on a client")
    func helloWithFullBacklog() throws {
        let name = ServerFocusTests.uniqueName("backlog")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        // A port of this process's user that never accepts, its backlog filled.
        let portName = name + ".full"
        let address = try MessagePortNamespace.abstract.address(of: portName)
        let listener = try address.makeListeningSocket(type: .sequencedPacket, backlog: 0).rawValue
        defer { close(listener) }
        var waiting: [Int32] = []
        defer { for socket in waiting { close(socket) } }
        while waiting.count < 64 {
            let socket = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else {
                #expect(errno == EAGAIN)
                close(socket)
                break
            }
            waiting.append(socket)
        }
        #expect(waiting.count < 64, "the backlog never filled")
        let remote = try RemoteMessagePort(name: name)
        let hello = ServerWire.Hello(token: 7, port: portName, name: "full", kinds: [], deviceClasses: [], wantsFocus: true)
        // It used to try the connection again for a whole second, its loop held meanwhile,
        // on every such hello: the quickest of three refusals is under that second (the
        // bound leaves a slow sanitizer run most of it, and one request descheduled on a
        // loaded machine does not decide).
        var took: [Duration] = []
        for _ in 0..<3 {
            let started = MonotonicInstant.now
            let reply = try remote.sendRequest(
                msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: .seconds(10))
            took.append(MonotonicInstant.now - started)
            let welcome = try ServerWire.Welcome(decoding: reply)
            #expect(welcome.refusal?.contains(portName) == true, "\(welcome)")
        }
        #expect(took.min()! < .milliseconds(900), "the refusals took \(took)")
        #expect(try server.sync { $0.clients.isEmpty })
    }
}
