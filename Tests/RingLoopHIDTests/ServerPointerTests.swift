import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A client's pointer stage beside its server's: real Synaptics touchpad recordings
/// through an event server (in this process, on a thread of its own) whose touchpad and
/// pointer stages make the pad a pointer, and a client with pointer settings of its own,
/// against one event system that reads the recording itself with the client's settings.
@Suite("The event server: a client's pointer")
struct ServerPointerTests {
    /// The pointer events a handler saw, with their device's other events left out.
    final class Seen {
        var motions: [PointerMotionEvent] = []
        var scrolls: [ScrollEvent] = []
        var frames = 0
    }

    /// Keeps the pointer events `system`'s handlers see in `seen`.
    static func watch(_ system: HIDEventSystem, into seen: Seen) {
        system.addHandler { event in
            switch event.payload {
            case .pointerMotion(let motion): seen.motions.append(motion)
            case .scroll(let scroll): seen.scrolls.append(scroll)
            case .digitizer: seen.frames += 1
            default: break
            }
            return .pass
        }
    }

    /// `recording` read by one event system with touchpad settings and `pointer`: what
    /// its handlers saw once every frame went through.
    static func inOneProcess(_ recording: Recording, pointer: PointerSettings) throws -> Seen {
        let frames = decodedFrames(recording)
        return try onFreshThread {
            let loop = RingRunLoop.current
            var configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", nodeNames: [])
            configuration.touchpad = TouchpadSettings()
            configuration.pointer = pointer
            let system = HIDEventSystem(configuration: configuration, loop: loop)
            let seen = Seen()
            Self.watch(system, into: seen)
            try system.start()
            defer { system.stop() }
            let stream = try GestureStream(recording, to: system, firstAt: .now + gestureStreamLead)
            stream.send(recording.events)
            #expect(runUntil(loop) { seen.frames >= frames }, "\(seen.frames) of \(frames) frames")
            stream.close()
            return seen
        }
    }

    /// `recording` served by an event server whose touchpad and pointer stages work by
    /// `serverPointer`, to a client whose own pointer stage works by `clientPointer`
    /// (`nil`: none): what the client's handlers saw once every frame came.
    static func served(_ recording: Recording, serverPointer: PointerSettings, clientPointer: PointerSettings?) throws -> Seen {
        let frames = decodedFrames(recording)
        let name = ServerFocusTests.uniqueName("pointer")
        let server = try ServerOnThread(
            name: name, devices: [],
            configure: {
                $0.devices.touchpad = TouchpadSettings()
                $0.devices.pointer = serverPointer
            })
        defer { server.stop() }
        return try onFreshThread {
            let loop = RingRunLoop.current
            let seen = Seen()
            var configuration = HIDEventSystem.Configuration(server: name, clientName: "pointer")
            configuration.pointer = clientPointer
            let client = HIDEventSystem(configuration: configuration, loop: loop)
            Self.watch(client, into: seen)
            try client.start()
            defer { client.stop() }
            #expect(runUntil(loop) { (try? server.sync { $0.clients.count }) == 1 })
            let stream = try server.sync { try GestureStream(recording, to: $0.system, firstAt: .now + gestureStreamLead) }
            // A few frames at a time, each group once the client has the last: all at once
            // outruns the server's window for a client on a loaded machine, and a client
            // that lags is sent no frame until it catches up (the slow-client bound), which
            // would be a difference of the test's making. The stamps are the recording's.
            var sent = 0
            while sent < recording.events.count {
                var end = sent
                var reports = 0
                while end < recording.events.count, reports < 16 {
                    if recording.events[end].isSynReport { reports += 1 }
                    end += 1
                }
                stream.send(Array(recording.events[sent..<end]))
                sent = end
                var prefix = recording
                prefix.events = Array(recording.events[..<end])
                let due = Self.decodedFrames(prefix)
                #expect(runUntil(loop) { seen.frames >= due }, "\(seen.frames) of \(due) frames")
            }
            #expect(runUntil(loop) { seen.frames >= frames }, "\(seen.frames) of \(frames) frames")
            stream.close()
            return seen
        }
    }

    /// The digitizer frames the chain decodes from `recording`.
    static func decodedFrames(_ recording: Recording) -> Int {
        var decoder = FrameDecoder(info: deviceInfo(of: recording))
        var out: [HIDEvent] = []
        for event in recording.events { decoder.feed(event, into: &out) }
        return out.filter { $0.kind == .digitizer }.count
    }

    /// The first motion where `served` and `local` differ, as text; `nil` when they are the same.
    static func firstDifference(_ served: [PointerMotionEvent], _ local: [PointerMotionEvent]) -> String? {
        guard let index = zip(served, local).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset else {
            return served.count == local.count ? nil : "\(served.count) motions served, \(local.count) in one process"
        }
        let shown = { (motion: PointerMotionEvent) in
            "\(motion) unaccelerated \(motion.unacceleratedDX) \(motion.unacceleratedDY)"
        }
        return "motion \(index): served \(shown(served[index])), in one process \(shown(local[index]))"
    }

    @Test(
        "a real touchpad's motion, which the server's pointer stage accelerated by its settings, is accelerated once by a client's pointer stage, by the client's: as one process with the client's settings"
    )
    func motionAcceleratedOnce() throws {
        let recording = try touchpadRecording("SynPS2 Synaptics TouchPad.leftmove.events")
        // The server's setting is far from the client's: the flat profile at a quarter of
        // the speed. The client's is libinput's default adaptive profile, which measures
        // the velocity by the frames' stamps (the same here, relative to the first).
        let serverPointer = try PointerSettings(acceleration: PointerAcceleration(profile: .flat, speed: -0.75))
        let clientPointer = try PointerSettings(acceleration: PointerAcceleration(profile: .adaptive, speed: 0.25))
        let local = try Self.inOneProcess(recording, pointer: clientPointer)
        #expect(local.motions.count > 100, "\(local.motions.count) motions in one process")
        let served = try Self.served(recording, serverPointer: serverPointer, clientPointer: clientPointer)
        // Before, the client accelerated the server's accelerated deltas again: the first
        // motion (0/13.60 normalized) was 0/0.14, against 0/1.94 in one process.
        let difference = Self.firstDifference(served.motions, local.motions)
        #expect(difference == nil, "\(difference ?? "")")
        // Without a pointer stage of its own, the client gets the server's: the same
        // unaccelerated deltas, accelerated by the server's settings.
        let serversOwn = try Self.served(recording, serverPointer: serverPointer, clientPointer: nil)
        let byTheServer = try Self.inOneProcess(recording, pointer: serverPointer)
        let asServed = Self.firstDifference(serversOwn.motions, byTheServer.motions)
        #expect(asServed == nil, "\(asServed ?? "")")
        #expect(zip(serversOwn.motions, served.motions).allSatisfy { $0.unacceleratedDX == $1.unacceleratedDX })
    }

    @Test(
        "a real touchpad's two-finger scrolling, which the server turned and scaled (natural scrolling, factor 2), is scaled once by a client's pointer stage, by the client's settings"
    )
    func scrollingScaledOnce() throws {
        let recording = try touchpadRecording("SynPS2 Synaptics TouchPad.two-finger-vert-scroll.events")
        let serverPointer = try PointerSettings(naturalScroll: true, scrollFactor: 2)
        let clientPointer = try PointerSettings(scrollFactor: 0.5)
        let local = try Self.inOneProcess(recording, pointer: clientPointer)
        #expect(local.scrolls.count > 20, "\(local.scrolls.count) scroll events in one process")
        #expect(local.scrolls.contains { $0.vertical > 0 }, "the recording scrolls up at some point")
        let served = try Self.served(recording, serverPointer: serverPointer, clientPointer: clientPointer)
        // Before, the client scaled the server's −2× amounts again: the first scroll was
        // 24.22 up, against 12.11 down in one process.
        let index = zip(served.scrolls, local.scrolls).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(
            served.scrolls.count == local.scrolls.count && index == nil,
            "\(served.scrolls.count) scroll events served, \(local.scrolls.count) in one process; first difference: \(index.map { "\(served.scrolls[$0]) against \(local.scrolls[$0])" } ?? "none")"
        )
    }

    @Test(
        "a hello of another version of the wire format is refused at once, by a welcome whose version the client's check names beside its own"
    )
    func helloOfAnotherVersion() throws {
        let name = ServerFocusTests.uniqueName("version")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        let remote = try RemoteMessagePort(name: name)
        var hello = ServerWire.Hello(token: 7, port: name + ".old", name: "old", kinds: [], deviceClasses: [], wantsFocus: true).encoded
        // A client of the version before (little-endian u16 first).
        hello[0] = UInt8(ServerWire.version - 1)
        hello[1] = 0
        // It used to be dropped: the client waited out the reply's timeout.
        let reply = try remote.sendRequest(msgid: ServerWire.MessageID.hello.rawValue, data: hello, replyTimeout: .seconds(10))
        let welcome = try ServerWire.Welcome(decoding: reply)
        let refusal = try #require(welcome.refusal)
        #expect(
            refusal.contains("version \(ServerWire.version - 1)") && refusal.contains("version \(ServerWire.version) is expected"),
            "\(refusal)")
        #expect(try server.sync { $0.clients.isEmpty })
        // A client's check of a welcome of another version (what a client of another
        // version makes of this server's): both versions named.
        var other = reply
        other[0] = UInt8(ServerWire.version + 1)
        #expect(throws: ServerWire.Violation.version(of: "welcome", received: ServerWire.version + 1, own: ServerWire.version)) {
            try ServerWire.Welcome(decoding: other)
        }
        let text = "\(ServerWire.Violation.version(of: "welcome", received: 6, own: 5))"
        #expect(
            text
                == "a welcome of the event server's wire format version 6, where version 5 is expected (a server and its clients need the same version of RingLoopHID)"
        )
    }
}
