import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

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
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()],
            configure: {
                // The socket fills long before the window: the lag is the port's.
                $0.maximumOutstandingBatches = 100_000
                $0.focusOnAttach = .none
            })
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
