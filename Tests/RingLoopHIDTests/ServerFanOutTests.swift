import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

extension ServerOnThread {
    /// A server of one keyboard whose clients' window of unacknowledged batches never fills
    /// (a socket fills long before: a client's lag is its port's), focus given by hand.
    static func keyboardWithoutWindow(name: String) throws -> ServerOnThread {
        try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()],
            configure: {
                $0.maximumOutstandingBatches = 100_000
                $0.focusOnAttach = .none
            })
    }
}

/// The server's fan-out to clients in another process (an exit test: the clients run in a
/// child process of their own, so their ports are sockets and a frame's sends go to all of
/// them together).
@Suite("The event server: fan-out to clients in another process")
struct ServerFanOutTests {
    /// The slow-client bound with every frame's sends submitted together: a client whose
    /// port never reads fills its socket and lags alone (its send fails with the others
    /// sent); the clients that read get every frame, nothing dropped.
    @Test(
        "with clients in another process, a client that never reads fills its socket and lags alone; the others get every frame, nothing dropped"
    )
    func neverReadingClientLagsAlone() async throws {
        let name = ServerFocusTests.uniqueName("fanout")
        let server = try ServerOnThread.keyboardWithoutWindow(name: name)
        defer { server.stop() }
        let failure = ThreadLock<String?>(nil)
        let writer = PosixThread.start(name: "fanout-writer") {
            failure.withLock { $0 = Self.writeUntilTheSilentClientLags(server) }
        }
        let output = ChildOutput(label: "ServerFanOutTests")
        let result = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output.path as String] in
            ChildOutput.redirect(to: outputPath)
            let loop = RingRunLoop.current
            let observers = try (0..<2).map { index in
                try RecordingClient(server: name, name: "observer\(index)") { configuration in
                    guard case .server(var attachment) = configuration.input else { return }
                    attachment.subscribedDeviceClasses = [.keyboard]
                    configuration.input = .server(attachment)
                }
            }
            // A client whose port never reads: its source is in a mode this loop never runs.
            let silentPort = try LocalMessagePort(name: name + ".silent", loop: loop) { _, _ in nil }
            loop.add(silentPort.source, to: RingRunLoop.Mode("never-run"))
            let serverPort = try RemoteMessagePort(name: name)
            let hello = ServerWire.Hello(
                token: UInt64.random(in: 1...UInt64.max), port: name + ".silent", name: "silent", kinds: [],
                deviceClasses: [.keyboard], wantsFocus: false)
            let reply = try serverPort.sendRequest(
                msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: .seconds(10))
            _ = try ServerWire.Welcome(decoding: reply)
            let marked = runUntil(loop, timeout: .seconds(60)) { observers.allSatisfy { $0.keys(Evdev.KEY_C) == ["down"] } }
            for (index, observer) in observers.enumerated() {
                let keys = observer.keys(Evdev.KEY_A)
                let alternating = keys.enumerated().allSatisfy { $0.element == ($0.offset % 2 == 0 ? "down" : "up") }
                print("observer \(index): \(keys.count) key events, \(observer.count(.eventsDropped)) drops, alternating \(alternating)")
                guard marked, alternating, keys.count >= 2, keys.count % 2 == 0, observer.count(.eventsDropped) == 0 else {
                    fflush(nil)
                    _exit(3)
                }
            }
            fflush(nil)
            silentPort.invalidate()
            _exit(0)
        }
        output.report(ifFailed: result == nil)
        writer.join()
        let found = failure.withLock { $0 }
        #expect(found == nil, "\(found ?? "")")
    }

    /// Writes key frames one a pass (each once the reading clients were sent the one
    /// before) until the silent client lags, then a few more; checks that the readers never
    /// lagged nor dropped; then the marker. Returns what went wrong, if anything.
    private static func writeUntilTheSilentClientLags(_ server: ServerOnThread) -> String? {
        func clients() -> [ServedClient] { (try? server.sync { Array($0.served.values) }) ?? [] }
        guard waitUntil({ clients().count == 3 }) else { return "the three clients never attached" }
        func observersSent() -> Int {
            (try? server.sync { $0.served.values.filter { $0.hello.name.hasPrefix("observer") }.map(\.eventsSent).min() ?? 0 }) ?? 0
        }
        var frames = 0
        var lagged: Int?
        while frames < 4000, lagged.map({ frames < $0 + 10 || frames % 2 == 1 }) ?? true {
            let before = observersSent()
            server.write([TestFrames.key(Evdev.KEY_A, down: frames % 2 == 0)], device: 0)
            frames += 1
            guard waitUntil({ observersSent() > before }) else { return "frame \(frames) never went to the observers" }
            if lagged == nil, (try? server.sync { $0.served.values.first { $0.hello.name == "silent" }?.lagging }) == true {
                lagged = frames
            }
        }
        guard let lagged else { return "the silent client never lagged in \(frames) frames" }
        let observers =
            (try? server.sync { server in
                server.served.values.filter { $0.hello.name.hasPrefix("observer") }.map {
                    ($0.lagging, $0.eventsDropped, $0.droppedSinceLag)
                }
            }) ?? []
        guard observers.count == 2, observers.allSatisfy({ !$0.0 && $0.1 == 0 && $0.2 == 0 }) else {
            return "the reading clients lagged or dropped: \(observers) (the silent client lagged at frame \(lagged))"
        }
        server.write([TestFrames.key(Evdev.KEY_C, down: true)], device: 0)
        return nil
    }
}

/// A client port spoken by hand on a raw SOCK_SEQPACKET listener in this process: the
/// server's RemoteMessagePort to it is a connection to another "process" (`.process`), so
/// its frames go through the batch. Records every message (msgid, data) it receives.
final class RawClientPort: @unchecked Sendable {
    let listener: Int32
    let connection = ThreadLock<Int32>(-1)
    let received = ThreadLock<[(msgid: Int32, data: [UInt8])]>([])
    private var thread: PosixThread?

    init(name: String) throws {
        let address = try SocketAddress.abstract(PortWire.namePrefix + name)
        listener = try address.makeListeningSocket(type: .sequencedPacket).rawValue
        let listener = listener
        let connection = connection
        let received = received
        thread = PosixThread.start(name: "raw-client") {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            connection.withLock { $0 = fd }
            let hello = PortWire.packet(PortWire.Header(msgid: PortWire.version, kind: .hello, sequence: 0, total: 1 << 20))
            _ = hello.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return }
                let packet = Array(buffer[..<count])
                guard let header = try? packet.withUnsafeBytes({ try PortWire.header(of: $0) }) else { continue }
                received.withLock { $0.append((header.msgid, Array(packet[PortWire.headerSize...]))) }
            }
        }
    }

    func batches() -> [ServerWire.Batch] {
        received.withLock { $0 }.filter { $0.msgid == ServerWire.MessageID.batch.rawValue }.compactMap {
            try? ServerWire.Batch(decoding: $0.data)
        }
    }

    /// Stops reading the server's connection, once it is accepted (the server's connect
    /// completes on the listener's backlog, before this port's thread may have run its
    /// `accept`); whether there was one to stop.
    func stopReading() -> Bool {
        guard waitUntil({ connection.withLock { $0 } >= 0 }) else { return false }
        shutdown(connection.withLock { $0 }, Int32(SHUT_RD))
        return true
    }

    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        let fd = connection.withLock { $0 }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        thread?.join()
        Glibc.close(listener)
        if fd >= 0 { Glibc.close(fd) }
    }
}

/// A frame batch whose send finds the focused client gone (in process, with client ports
/// spoken by hand on raw sockets, so the sends go through the batch).
@Suite("The event server: a client found gone in a frame's batch")
struct ServerBatchGoneTests {
    /// Detaching a focused client moves the focus, which flushes the next client's frame:
    /// the batch has sent that frame already, so it must not go again (under the same
    /// sequence number). A review found it sent twice.
    @Test("a focused client found gone in a batch: the next client gets the frame once, each batch numbered once")
    func goneFocusedClientDoesNotResendOthersFrame() throws {
        let name = ServerFocusTests.uniqueName("batchgone")
        let server = try ServerOnThread.keyboardWithoutWindow(name: name)
        defer { server.stop() }
        let portA = try RawClientPort(name: name + ".a")
        defer { portA.close() }
        let portB = try RawClientPort(name: name + ".b")
        defer { portB.close() }
        let serverPort = try RemoteMessagePort(name: name)
        for (suffix, classes, focus) in [("a", Set<HIDDeviceClass>(), false), ("b", [.keyboard], true)] {
            let hello = ServerWire.Hello(
                token: UInt64.random(in: 1...UInt64.max), port: name + "." + suffix, name: suffix, kinds: [],
                deviceClasses: classes, wantsFocus: focus)
            let reply = try serverPort.sendRequest(
                msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: .seconds(10))
            _ = try ServerWire.Welcome(decoding: reply)
        }
        // Focus history [b, a], order [a, b]: a is focused, b is next.
        try server.sync { server in
            let a = server.served.values.first { $0.hello.name == "a" }!
            server.focus(a.id)
        }
        // a's end stops reading (the server's send fails with EPIPE; its watcher sees no
        // end): a is found gone by the frame's batch.
        #expect(portA.stopReading(), "the server never connected to client a's port")
        let before = portB.batches().count
        server.write([TestFrames.key(Evdev.KEY_A, down: true)], device: 0)
        #expect(
            waitUntil {
                (try? server.sync { server in server.served.values.allSatisfy { $0.hello.name != "a" } }) ?? false
            }, "client a was not detached")
        // A last frame: once b has it, b has everything sent before it.
        server.write([TestFrames.key(Evdev.KEY_B, down: true)], device: 0)
        let keyCodes = { (batches: [ServerWire.Batch]) in
            batches.flatMap(\.events).compactMap { event -> UInt16? in
                if case .key(let key) = event.payload, key.state == .down { return key.code }
                return nil
            }
        }
        #expect(waitUntil { keyCodes(Array(portB.batches().dropFirst(before))).contains(Evdev.KEY_B) }, "b never got the last frame")
        let downs = keyCodes(Array(portB.batches().dropFirst(before)))
        let sequences = portB.batches().map(\.sequence)
        #expect(
            downs.filter { $0 == Evdev.KEY_A }.count == 1,
            "client b got KEY_A down \(downs.filter { $0 == Evdev.KEY_A }.count) times; batch sequences \(sequences)")
        #expect(Set(sequences).count == sequences.count, "batch sequence numbers repeat: \(sequences)")
    }
}
