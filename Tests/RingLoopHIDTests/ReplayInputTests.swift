import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A replay of recordings into the chain in one call (`Configuration(replaying:)`): exactly
/// the session's devices are attached, counted by device (a file may hold several, as a
/// libinput recording does), and the replay starts once the system has them all.
@Suite("Replaying recordings into the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ReplayInputTests {
    @Test(
        "every event of a two-device file and a one-device file reaches the handlers; finished runs on the loop",
        arguments: HIDEventSystem.Shape.allCases)
    func replaying(shape: HIDEventSystem.Shape) throws {
        let keyboard = try Recording.load(contentsOf: devicesFolder + "/keyboard.evemu")
        let mouse = try Recording.load(contentsOf: devicesFolder + "/mouse-hires-wheel.evemu")
        let screen = try Recording.load(contentsOf: devicesFolder + "/touchscreen-multitouch.evemu")
        // What the decoder makes of each recording, by kind (lifecycle events aside).
        var expected: [String: Int] = [:]
        for recording in [keyboard, mouse, screen] {
            for event in decodedEvents(of: recording) { expected[event.kind.rawValue, default: 0] += 1 }
        }
        _ = MountLeakCheck.armed
        let session = try ReplaySession(
            files: [[keyboard, mouse], [screen]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-replay-input-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 8192, speed: .asFastAsPossible, settleTime: .milliseconds(20)))
        defer { session.close() }
        let (seen, added, finishedOnLoop) = try onFreshThread { () throws -> ([String: Int], Int, Bool) in
            let loop = RingRunLoop.current
            let finished = LoopBound(false, loop: loop)
            let onLoop = LoopBound(false, loop: loop)
            let system = HIDEventSystem(
                configuration: .init(
                    // The queue holds every event: a slow loop reads in big batches.
                    replaying: session, shape: shape, queueCapacity: 1 << 16,
                    finished: {
                        onLoop.value = RingRunLoop.current === loop
                        finished.value = true
                    }), loop: loop)
            var seen: [String: Int] = [:]
            var added = 0
            system.addHandler { event in
                switch event.kind {
                case .deviceAdded: added += 1
                case .deviceRemoved, .eventsDropped: break
                default: seen[event.kind.rawValue, default: 0] += 1
                }
                return .pass
            }
            try system.start()
            #expect(runUntil(loop, timeout: .seconds(30)) { finished.value })
            // The session's settle time let the last frames reach the chain; drain them.
            #expect(runUntil(loop) { seen == expected })
            system.stop()
            return (seen, added, onLoop.value)
        }
        #expect(added == 3, "the three devices of the two files")
        #expect(seen == expected)
        #expect(finishedOnLoop)
        #expect(session.wait().framesSent == session.frameCount)
    }
}

extension ReplayInputTests {
    @Test(
        "finished runs once the handlers have had every event the session sent: without a settle time, the last frames still come first",
        arguments: HIDEventSystem.Shape.allCases)
    func finishedAfterTheLastFrames(shape: HIDEventSystem.Shape) throws {
        let keyboard = try Recording.load(contentsOf: devicesFolder + "/keyboard.evemu")
        let screen = try Recording.load(contentsOf: devicesFolder + "/touchscreen-multitouch.evemu")
        var expected: [String: Int] = [:]
        for recording in [keyboard, screen] {
            for event in decodedEvents(of: recording) { expected[event.kind.rawValue, default: 0] += 1 }
        }
        _ = MountLeakCheck.armed
        // No settle time: the session finishes as soon as it has written the last frame,
        // before any reader could have taken it.
        let session = try ReplaySession(
            files: [[keyboard], [screen]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-replay-finished-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 8192, speed: .asFastAsPossible, settleTime: .zero))
        defer { session.close() }
        let seenAtFinish = try onFreshThread { () throws -> [String: Int]? in
            let loop = RingRunLoop.current
            let atFinish = LoopBound<[String: Int]?>(nil, loop: loop)
            var seen: [String: Int] = [:]
            let counted = LoopBound<[String: Int]>([:], loop: loop)
            let system = HIDEventSystem(
                configuration: .init(
                    replaying: session, shape: shape, queueCapacity: 1 << 16,
                    finished: {
                        atFinish.value = counted.value
                        loop.stop()
                    }), loop: loop)
            system.addHandler { event in
                switch event.kind {
                case .deviceAdded, .deviceRemoved, .eventsDropped: break
                default: seen[event.kind.rawValue, default: 0] += 1
                }
                counted.value = seen
                return .pass
            }
            try system.start()
            #expect(runUntil(loop) { atFinish.value != nil }, "finished never ran")
            system.stop()
            return atFinish.value
        }
        #expect(seenAtFinish == expected)
        #expect(session.wait().framesSent == session.frameCount)
    }
}

extension ReplayInputTests {
    /// With the event-system thread, `finished` waits while that thread finds a node
    /// readable; what it then reads may decode to no event (MSC_SCAN-only frames, as a
    /// keyboard sends with no key), so nothing is forwarded to wake the client's loop: the
    /// thread rings it once it has read them, and `finished` runs.
    @Test("finished runs although the player's last frames decode to no event (event-system thread)")
    func finishedAfterSilentFrames() throws {
        var text = try String(contentsOfFile: devicesFolder + "/keyboard.evemu", encoding: .utf8)
        for index in 0..<1500 {
            // 2.700000 s on, a microsecond apart: after the recording's last event.
            let micros = 700_000 + index
            let time = "2.\(String(repeating: "0", count: 6 - String(micros).count))\(micros)"
            text += "E: \(time) 0004 0004 0028\nE: \(time) 0000 0000 0000\n"
        }
        let path = "/tmp/ringloop-silent-frames-\(getpid()).evemu"
        let file = try #require(fopen(path, "w"))
        fputs(text, file)
        fclose(file)
        defer { unlink(path) }
        let keyboard = try Recording.load(contentsOf: path)
        _ = MountLeakCheck.armed
        let session = try ReplaySession(
            files: [[keyboard]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-silent-finished-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 8192, speed: .asFastAsPossible, settleTime: .zero))
        defer { session.close() }
        let ran = try onFreshThread { () throws -> Bool in
            let loop = RingRunLoop.current
            let done = LoopBound<Bool>(false, loop: loop)
            let system = HIDEventSystem(
                configuration: .init(
                    replaying: session, shape: .dedicatedThread, queueCapacity: 1 << 16,
                    finished: {
                        done.value = true
                        loop.stop()
                    }), loop: loop)
            try system.start()
            let ran = runUntil(loop) { done.value }
            system.stop()
            return ran
        }
        #expect(ran, "finished never ran")
    }
}
