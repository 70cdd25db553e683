import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A client that speaks the protocol by hand: it says hello and takes batches, and
/// acknowledges only when told to.
final class SilentClient {
    let port: LocalMessagePort
    let server: RemoteMessagePort
    let token = UInt64.random(in: 1...UInt64.max)
    let batches = ThreadLock<[ServerWire.Batch]>([])
    let welcome: ServerWire.Welcome

    init(server name: String, portName: String, loop: RingRunLoop, wantsFocus: Bool = true) throws {
        let batches = batches
        port = try LocalMessagePort(name: portName, loop: loop) { msgid, data in
            if msgid == ServerWire.MessageID.batch.rawValue, let batch = try? ServerWire.Batch(decoding: data) {
                batches.withLock { $0.append(batch) }
            }
            return nil
        }
        loop.add(port.source, to: .common)
        server = try RemoteMessagePort(name: name)
        let hello = ServerWire.Hello(token: token, port: portName, name: "silent", kinds: [], deviceClasses: [], wantsFocus: wantsFocus)
        let reply = try server.sendRequest(msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: .seconds(10))
        welcome = try ServerWire.Welcome(decoding: reply)
    }

    var events: [HIDEvent] { batches.withLock { $0.flatMap(\.events) } }
    var lastSequence: UInt64 { batches.withLock { $0.map(\.sequence).max() ?? 0 } }

    func acknowledge() throws {
        try server.send(msgid: ServerWire.MessageID.ack.rawValue, data: ServerWire.Ack(token: token, sequence: lastSequence).encoded)
    }
}

@Suite("The event server: flow control")
struct ServerFlowTests {
    @Test(
        "a client that never acknowledges is reported not responding and held to its window; the others get everything; its acknowledgement brings the difference"
    )
    func neverAcknowledges() throws {
        let name = ServerFocusTests.uniqueName("silent")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()],
            configure: {
                $0.maximumOutstandingBatches = 8
                $0.notRespondingTimeout = .milliseconds(300)
                $0.focusOnAttach = .none
            })
        defer { server.stop() }
        let keyboard = server.deviceIDs[0]
        try onFreshThread {
            let loop = RingRunLoop.current
            let observer = try RecordingClient(server: name, name: "observer") { configuration in
                guard case .server(var attachment) = configuration.input else { return }
                attachment.subscribedDeviceClasses = [.keyboard]
                configuration.input = .server(attachment)
            }
            let silent = try SilentClient(server: name, portName: name + ".silent", loop: loop)
            #expect(silent.welcome.focused)
            // Each frame once the observer has taken the one before (and acknowledged it):
            // only the silent client falls behind.
            let presses = 20
            for press in 0..<presses {
                server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
                #expect(runUntil(loop) { observer.keys(Evdev.KEY_A).count == 2 * press + 1 })
                server.write([TestFrames.key(Evdev.KEY_A, down: false)], device: 0)
                #expect(runUntil(loop) { observer.keys(Evdev.KEY_A).count == 2 * press + 2 })
            }
            server.write([TestFrames.key(Evdev.KEY_C, down: true)], device: 0)
            #expect(runUntil(loop) { observer.keys(Evdev.KEY_C) == ["down"] })
            #expect(observer.count(.eventsDropped) == 0)
            #expect(
                runUntil(loop) {
                    server.clientEvents.withLock { events in events.contains { if case .notResponding = $0 { true } else { false } } }
                })
            let taken = silent.batches.withLock { $0.count }
            #expect(taken <= 8, "the silent client was sent \(taken) batches, past its window of 8")
            let status = try server.sync { server in server.clients.first { $0.name == "silent" } }
            #expect(status?.isResponding == false)
            #expect(status?.outstandingBatches == taken)

            try silent.acknowledge()
            #expect(runUntil(loop) { silent.events.contains { $0.kind == .eventsDropped } })
            #expect(runUntil(loop) { HandlerView(silent.events, device: keyboard).held == [Evdev.KEY_C] })
            #expect(
                runUntil(loop) {
                    server.clientEvents.withLock { events in events.contains { if case .responding = $0 { true } else { false } } }
                })
            // Caught up: events flow again as they come.
            server.write([TestFrames.key(Evdev.KEY_C, down: false)], device: 0)
            #expect(runUntil(loop) { HandlerView(silent.events, device: keyboard).held.isEmpty })
            observer.system.stop()
            silent.port.invalidate()
        }
    }

    @Test(
        "a burst's last batches, within 10 ms of the client's last acknowledgement and far fewer than a quarter of its window, are acknowledged by its tail timer: none stays outstanding"
    )
    func burstTailAcknowledged() throws {
        let name = ServerFocusTests.uniqueName("tail")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()], configure: { $0.maximumOutstandingBatches = 256 })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "tail")
            // The first frame is acknowledged at once (the attachment's first
            // acknowledgement); the burst is written as the handler takes that frame, so its
            // batches come within 10 ms of that acknowledgement: 3 batches, under a quarter of
            // the window (64), wait for the tail timer (20 ms after the last acknowledgement),
            // and no frame comes after them to carry it.
            var burstWritten = false
            _ = client.system.addHandler(kinds: [.key]) { event in
                guard !burstWritten, case .key(let key) = event.payload, key.code == Evdev.KEY_A else { return .pass }
                burstWritten = true
                server.write(
                    [
                        TestFrames.key(Evdev.KEY_B, down: true), TestFrames.key(Evdev.KEY_B, down: false),
                        TestFrames.key(Evdev.KEY_C, down: true),
                    ], device: 0)
                return .pass
            }
            server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
            #expect(runUntil(loop) { client.keys(Evdev.KEY_B) == ["down", "up"] && client.keys(Evdev.KEY_C) == ["down"] })
            let outstanding = { (try? server.sync { server in server.clients.first { $0.name == "tail" }?.outstandingBatches }) ?? nil }
            #expect(runUntil(loop) { outstanding() == 0 }, "the client left \(String(describing: outstanding())) batches unacknowledged")
            #expect(client.count(.eventsDropped) == 0)
            client.system.stop()
        }
    }

    /// The tail timer is one timer a feed keeps, re-armed for each burst after the first
    /// has fired: each burst's last batches are acknowledged by it, however many bursts
    /// come, each after the client's loop went quiet.
    @Test(
        "bursts, each after the tail timer acknowledged the one before: each burst's last batches are acknowledged by the re-armed timer"
    )
    func burstTailsAcknowledgedByTheKeptTimer() throws {
        let name = ServerFocusTests.uniqueName("tails")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()], configure: { $0.maximumOutstandingBatches = 256 })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "tails")
            // Each round's trigger key, as its handler takes it, writes a burst of 2
            // batches, within 10 ms of the acknowledgement before it (or of the trigger's,
            // when that one went at once): they wait for the tail timer, and no frame comes
            // after them to carry it.
            // More rounds than needed: a round whose burst reached a loaded client more
            // than a delay after the acknowledgement before it went at once instead.
            let triggers = [Evdev.KEY_A, Evdev.KEY_D, Evdev.KEY_E, Evdev.KEY_F, Evdev.KEY_G, Evdev.KEY_H, Evdev.KEY_I, Evdev.KEY_J]
            var bursts = 0
            _ = client.system.addHandler(kinds: [.key]) { event in
                guard bursts < triggers.count, case .key(let key) = event.payload, key.code == triggers[bursts] else {
                    return .pass
                }
                bursts += 1
                server.write([TestFrames.key(Evdev.KEY_B, down: true), TestFrames.key(Evdev.KEY_B, down: false)], device: 0)
                return .pass
            }
            let outstanding = { (try? server.sync { server in server.clients.first { $0.name == "tails" }?.outstandingBatches }) ?? nil }
            let feed = try #require(client.system.feed as? ServerDeviceFeed)
            var rounds = 0
            for (round, trigger) in triggers.enumerated() where feed.acknowledgementsByTimer < 3 {
                rounds += 1
                server.write([TestFrames.key(trigger, down: true)], device: 0)
                #expect(runUntil(loop) { client.keys(Evdev.KEY_B).count == 2 * (round + 1) }, "round \(round)")
                #expect(
                    runUntil(loop) { outstanding() == 0 },
                    "round \(round): the client left \(String(describing: outstanding())) batches unacknowledged")
            }
            // The bursts' tails went from the timer (no frame came after them to carry
            // them): twice at least, so once after it had fired and was re-armed (a burst
            // acknowledged at once instead takes another round).
            #expect(feed.acknowledgementsByTimer >= 2, "the timer sent \(feed.acknowledgementsByTimer) acknowledgements")
            #expect(bursts == rounds)
            #expect(client.count(.eventsDropped) == 0)
            client.system.stop()
        }
    }

    @Test(
        "a not-responding timeout no longer than the client's 20 ms tail acknowledgement is refused at start, naming what is valid; just above it starts"
    )
    func notRespondingTimeoutBound() throws {
        try onFreshThread {
            for (milliseconds, starts) in [(0, false), (20, false), (21, true)] {
                let configuration = HIDEventServer.Configuration(
                    name: ServerFocusTests.uniqueName("timeout"), devices: .init(deviceDirectory: "/tmp", nodeNames: []),
                    notRespondingTimeout: .milliseconds(milliseconds))
                let server = HIDEventServer(configuration: configuration, loop: .current)
                do throws(HIDError) {
                    try server.start()
                    #expect(starts, "notRespondingTimeout \(milliseconds) ms started")
                } catch {
                    #expect(!starts, "notRespondingTimeout \(milliseconds) ms: \(error)")
                    guard case .configuration(let message) = error else {
                        Issue.record("notRespondingTimeout \(milliseconds) ms: \(error), not a configuration error")
                        continue
                    }
                    #expect(message.contains("notRespondingTimeout") && message.contains("must be longer than 0.02 seconds"), "\(message)")
                }
                server.stop()
            }
        }
    }

    @Test(
        "a lagging client's backlog keeps nothing of devices added and removed while it lags: bounded by the devices present, not by their churn"
    )
    func lifecycleBacklogBounded() throws {
        let name = ServerFocusTests.uniqueName("churn")
        let keyboard = try ServerTestDevices.keyboard()
        let server = try ServerOnThread(name: name, devices: [keyboard], configure: { $0.maximumOutstandingBatches = 1 })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let silent = try SilentClient(server: name, portName: name + ".silent", loop: loop)
            // It never acknowledges: past its window of one batch, it lags.
            server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
            server.write([TestFrames.key(Evdev.KEY_A, down: false)], device: 0)
            #expect(runUntil(loop) { (try? server.sync { $0.served.values.first?.lagging }) == true })
            // 50 devices come and go while it lags.
            for _ in 0..<50 {
                let writeEnd = try server.sync { server -> Int32 in
                    var ends: [Int32] = [0, 0]
                    guard pipe(&ends) == 0 else { throw HIDError.configuration("pipe: errno \(errno)") }
                    _ = try server.system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: keyboard)
                    return ends[1]
                }
                close(writeEnd)
            }
            #expect(runUntil(loop) { (try? server.sync { $0.liveDevices.count }) == 1 })
            #expect(try server.sync { $0.served.values.first?.lifecycleBacklog.count } == 0)
            silent.port.invalidate()
        }
    }

    @Test("a client whose process ended (its port gone) is detached and its focus falls back to the client before it")
    func clientGoneFocusFallsBack() throws {
        let name = ServerFocusTests.uniqueName("fallback")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()], configure: { $0.focusOnAttach = .newest })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try RecordingClient(server: name, name: "first")
            let silent = try SilentClient(server: name, portName: name + ".gone", loop: loop, wantsFocus: true)
            #expect(silent.welcome.focused)
            #expect(runUntil(loop) { !first.system.isFocused })
            silent.port.invalidate()
            #expect(runUntil(loop) { first.system.isFocused })
            server.write([TestFrames.key(Evdev.KEY_E, down: true), TestFrames.key(Evdev.KEY_E, down: false)], device: 0)
            #expect(runUntil(loop) { first.keys(Evdev.KEY_E) == ["down", "up"] })
            first.system.stop()
        }
        #expect(try server.sync { $0.clients.count } <= 1)
    }
}
