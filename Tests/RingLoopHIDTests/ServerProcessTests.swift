import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The event server with clients in other processes (exit tests: each closure runs in a
/// child process of its own), and a client's gestures.
@Suite("The event server: access, processes, gestures")
struct ServerProcessTests {
    @Test("a client of a user the server does not serve is refused and never taken in; a client of the server's user in another process is")
    func unauthorizedUserRefused() async throws {
        let name = ServerFocusTests.uniqueName("access")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        let output1 = ChildOutput(label: "ServerProcessTests-1")
        let result1 = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output1.path as String] in
            ChildOutput.redirect(to: outputPath)
            guard setgid(65534) == 0, setuid(65534) == 0 else { exit(5) }
            let system = HIDEventSystem(configuration: .init(server: name, trusting: .users([0])))
            do throws(HIDError) {
                try system.start()
                exit(3)
            } catch {
                guard case .server(_, let reason) = error, reason.contains("does not serve") else {
                    print("unexpected: \(error)")
                    exit(4)
                }
                exit(0)
            }
        }
        output1.report(ifFailed: result1 == nil)
        #expect(try server.sync { $0.clients.isEmpty })
        let output2 = ChildOutput(label: "ServerProcessTests-2")
        let result2 = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output2.path as String] in
            ChildOutput.redirect(to: outputPath)
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(server: name), loop: loop)
            var added = 0
            system.addHandler(kinds: [.deviceAdded]) { _ in
                added += 1
                return .pass
            }
            try system.start()
            guard system.isAttachedToServer else { exit(3) }
            let limit = MonotonicInstant.now + .seconds(20)
            while added == 0, MonotonicInstant.now < limit { loop.run(mode: .default, for: .milliseconds(20)) }
            guard added == 1, system.devices.first?.deviceClass == .keyboard else { exit(4) }
            system.stop()
            exit(0)
        }
        output2.report(ifFailed: result2 == nil)
        let seen = server.clientEvents.withLock { events in
            events.compactMap { event -> PeerCredentials? in
                if case .attached(let client) = event { return client.credentials }
                return nil
            }
        }
        #expect(seen.count == 1 && seen.first?.uid == geteuid() && seen.first?.pid != getpid())
    }

    @Test("a client in another process does not attach to a server held by a user it does not trust, and says who holds the name")
    func untrustedServerRefused() async throws {
        let name = ServerFocusTests.uniqueName("trust")
        let server = try ServerOnThread(name: name, devices: [try ServerTestDevices.keyboard()])
        defer { server.stop() }
        // The server is this process, of uid 0; the client trusts only uid 65534.
        let output3 = ChildOutput(label: "ServerProcessTests-3")
        let result3 = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output3.path as String] in
            ChildOutput.redirect(to: outputPath)
            let system = HIDEventSystem(configuration: .init(server: name, trusting: .users([65534])))
            do throws(HIDError) {
                try system.start()
                exit(3)
            } catch {
                guard case .server(_, let reason) = error, reason.contains("uid 0") else {
                    print("unexpected: \(error)")
                    exit(4)
                }
                exit(system.isAttachedToServer || !system.devices.isEmpty ? 5 : 0)
            }
        }
        output3.report(ifFailed: result3 == nil)
        // The client said nothing to the server.
        #expect(try server.sync { $0.clients.isEmpty })
        #expect(server.clientEvents.withLock { $0.isEmpty })
    }

    @Test(
        "gestures are recognized in a client as in a system that reads its own devices",
        arguments: ["touchscreen-pinch-out", "touchscreen-swipe-left"])
    func gesturesInAClient(_ recordingName: String) throws {
        let recording = try loadGestureRecording(recordingName)
        let expected = GestureRun(recording, recognizers: GestureSet.uikit.make()).recognized
        #expect(!expected.isEmpty)
        let name = ServerFocusTests.uniqueName("gestures")
        let server = try ServerOnThread(name: name, devices: [deviceInfo(of: recording)])
        defer { server.stop() }
        let frames = Replay.frames(of: recording)
        let recognized = try onFreshThread { () throws -> [GestureEvent] in
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "gestures")
            var gestures: [GestureEvent] = []
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                client.system.addGestureRecognizer(recognizer)
            }
            #expect(runUntil(loop) { client.count(.deviceAdded) == 1 })
            // The frames at their recorded pace, from another thread, while this loop runs,
            // each with its recorded time placed `gestureStreamLead` after the writing
            // starts (as ``GestureStream`` does): a writer late on a loaded machine changes
            // when frames come, not the times the recognizers reckon with.
            let start = MonotonicInstant.now
            let shift = Int64((start + gestureStreamLead).nanoseconds / 1000) - (frames.first?.time ?? 0)
            let lastFrame = try #require(decodedEvents(of: recording).last { $0.kind == .digitizer })
            let lastStamp = MonotonicInstant(nanoseconds: UInt64(Int64(lastFrame.timestamp.nanoseconds / 1000) + shift) * 1000)
            let writer = LoopThread(name: "gesture-writer")
            defer { writer.stopAndJoin() }
            let done = Atomic<Bool>(false)
            let toWrite = UncheckedBox((frames, server.writeEnds[0]))
            writer.perform {
                let (frames, fd) = toWrite.value
                let first = frames.first?.time ?? 0
                for frame in frames {
                    let due = start.advanced(by: .microseconds(frame.time - first))
                    while MonotonicInstant.now < due {
                        var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
                        nanosleep(&pause, nil)
                    }
                    let restamped = frame.events.map { event in
                        let time = event.timeMicroseconds + shift
                        return InputEvent(
                            seconds: time / 1_000_000, microseconds: Int32(time % 1_000_000), type: event.type, code: event.code,
                            value: event.value)
                    }
                    writeFrames(restamped, to: fd)
                }
                done.store(true, ordering: .releasing)
            }
            writer.loop.wakeUp()
            #expect(runUntil(loop) { done.load(ordering: .acquiring) })
            // Until the client's recognizers have seen the last frame and wait for no
            // deadline: nothing more can change what they recognize.
            #expect(
                runUntil(loop) {
                    guard let arena = client.system.gestures?.arena, let device = client.system.devices.first?.id else { return false }
                    return arena.latestFrameTime(of: device) == lastStamp && arena.nextDeadline == nil
                }, "the client's recognizers never settled")
            client.system.stop()
            return gestures
        }
        #expect(GestureRun.recognized(recognized) == expected)
    }
}
