import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices

/// A recording of `testMouse`: `frames` motion frames `gap` apart.
func mouseRecording(frames: Int, gap: Int64 = 1000) -> Recording {
    var events: [InputEvent] = []
    for index in 0..<frames {
        let time = Int64(index) * gap
        let (seconds, microseconds) = (time / 1_000_000, Int32(time % 1_000_000))
        events.append(InputEvent(seconds: seconds, microseconds: microseconds, type: 2, code: 0, value: 1))
        events.append(InputEvent(seconds: seconds, microseconds: microseconds, type: 0, code: 0, value: 0))
    }
    return Recording(description: testMouse, events: events)
}

/// A session's configuration on a fresh FUSE folder of this test process.
func sessionConfiguration(
    speed: ReplaySpeed = .asFastAsPossible, readers: Int = 0, readersTimeout: Duration? = nil
) -> ReplaySession.Configuration {
    _ = MountLeakCheck.armed
    return ReplaySession.Configuration(
        backend: .fuse, folderPath: "/tmp/ringloop-session-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", speed: speed,
        readers: readers, readersTimeout: readersTimeout, settleTime: .zero)
}

@Suite("ReplaySession", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ReplaySessionTests {
    @Test("Hosts every device of every file, replays every frame, and close removes the folder it made")
    func replaysEverything() throws {
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 10), mouseRecording(frames: 5)], [mouseRecording(frames: 7)]],
            configuration: sessionConfiguration())
        #expect(session.devices.map(\.count) == [2, 1])
        #expect(session.nodePaths.count == 3 && session.nodePaths.allSatisfy { access($0, F_OK) == 0 })
        #expect(session.frameCount == 22)
        let fd = open(session.nodePaths[2], O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        session.start()
        let outcome = session.wait()
        #expect(outcome == ReplaySession.Outcome(framesSent: 22, frameCount: 22, cancelled: false, failures: []))
        #expect(readEvents(fd).count == 14, "the third device's 7 frames reached its reader")
        let folder = session.folderPath
        session.close()
        #expect(access(folder, F_OK) != 0, "the folder made for the session is removed")
    }

    @Test("With readers asked for, nothing is sent until each node has them; then the replay starts")
    func waitsForReaders() throws {
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 3)], [mouseRecording(frames: 3)]], configuration: sessionConfiguration(readers: 1))
        defer { session.close() }
        let started = Atomic<Bool>(false)
        session.start(finished: { _ in started.store(true, ordering: .releasing) })
        let first = open(session.nodePaths[0], O_RDONLY | O_NONBLOCK)
        defer { close(first) }
        // One node of two has its reader: the session must still wait.
        let node = try #require(session.devices[0][0] as? FUSEEvdevNode)
        var waiter = pollfd(fd: first, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiter, 1, 200) == 0, "a frame was sent before every node had a reader")
        #expect(node.readerCount == 1, "the poll made the open a reader")
        let second = open(session.nodePaths[1], O_RDONLY | O_NONBLOCK)
        defer { close(second) }
        #expect(readOnce(second) == EAGAIN)
        let outcome = session.wait()
        #expect(outcome.framesSent == 6 && outcome.failures.isEmpty, "\(outcome)")
        #expect(readEvents(first).count == 6)
        let finished = started.load(ordering: .acquiring)
        #expect(finished)
    }

    @Test("After its settle time, a session on FUSE nodes waits for its readers to take the last frames before it finishes")
    func settleWaitsForReaders() throws {
        var configuration = sessionConfiguration()
        configuration.settleTime = .milliseconds(20)
        let session = try ReplaySession(files: [[mouseRecording(frames: 5)]], configuration: configuration)
        defer { session.close() }
        let reader = open(session.nodePaths[0], O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        let node = try #require(session.devices[0][0] as? FUSEEvdevNode)
        let finished = Atomic<Bool>(false)
        session.start(finished: { _ in finished.store(true, ordering: .releasing) })
        #expect(waitUntil { node.unreadEventCounts == [10] }, "the frames never reached the node")
        // Fifteen settle times with the frames unread: the session still holds the node.
        #expect(!waitUntil(timeout: .milliseconds(300)) { finished.load(ordering: .acquiring) }, "finished with the frames unread")
        #expect(readEvents(reader).count == 10)
        #expect(waitUntil { finished.load(ordering: .acquiring) }, "the readers took everything and it did not finish")
        #expect(session.wait().framesSent == 5)
    }

    @Test("A reader counts from its first read or poll, not its open: one that sets its clock first loses no frame")
    func readerCountsFromItsFirstRead() throws {
        // What `ringloop record` does: open, set the clock (which flushes what was queued
        // into a SYN_DROPPED, as the kernel's evdev does), read the description, then wait.
        let session = try ReplaySession(files: [[mouseRecording(frames: 3)]], configuration: sessionConfiguration(readers: 1))
        defer { session.close() }
        session.start()
        let reader = open(session.nodePaths[0], O_RDONLY | O_NONBLOCK)
        defer { close(reader) }
        let node = try #require(session.devices[0][0] as? FUSEEvdevNode)
        #expect(node.clientCount == 1 && node.readerCount == 0, "an open alone is not a reader")
        try EvdevDevice(fileDescriptor: reader).setClock(CLOCK_MONOTONIC)
        _ = try InputDeviceDescription(fileDescriptor: reader)
        #expect(node.readerCount == 0)
        var waiter = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiter, 1, Int32(TestWait.bound.components.seconds * 1000)) == 1, "the poll made it a reader and the replay began")
        #expect(session.wait().framesSent == 3)
        let events = readEvents(reader)
        #expect(events.map(\.code) == [0, 0, 0, 0, 0, 0] && events.map(\.value) == [1, 0, 1, 0, 1, 0], "every frame, no SYN_DROPPED")
    }

    @Test("Readers that never come end the wait at its bound, with the failure")
    func readersTimeOut() throws {
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 3)]], configuration: sessionConfiguration(readers: 2, readersTimeout: .milliseconds(100)))
        defer { session.close() }
        session.start()
        let outcome = session.wait()
        #expect(outcome.framesSent == 0)
        #expect(outcome.failures == [.readersTimedOut(ready: 0, nodes: 1, readers: 2)])
    }

    @Test("Progress comes at most once per interval, and not at all for a replay shorter than one")
    func progressThrottled() throws {
        // 2.5 s of frames every 10 ms: two or three reports at most, a second apart.
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 250, gap: 10_000)]], configuration: sessionConfiguration(speed: .recorded))
        defer { session.close() }
        let reports = ThreadLock<[(MonotonicInstant, ReplaySession.Progress)]>([])
        session.start(progress: { progress in reports.withLock { $0.append((.now, progress)) } })
        #expect(session.wait().framesSent == 250)
        let seen = reports.withLock { $0 }
        #expect((1...3).contains(seen.count), "\(seen.count) reports")
        for (earlier, later) in zip(seen, seen.dropFirst()) {
            #expect(later.0 - earlier.0 >= .milliseconds(999), "two reports \(later.0 - earlier.0) apart")
        }
        #expect(seen.allSatisfy { $0.1.phase == .replaying && $0.1.frameCount == 250 })

        let short = try ReplaySession(files: [[mouseRecording(frames: 5)]], configuration: sessionConfiguration())
        defer { short.close() }
        let shortReports = Atomic<Int>(0)
        short.start(progress: { _ in shortReports.add(1, ordering: .relaxed) })
        short.wait()
        #expect(shortReports.load(ordering: .relaxed) == 0)
    }

    @Test("cancel ends a replay in a long gap at once")
    func cancelInGap() throws {
        // Two frames an hour apart.
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 2, gap: 3_600_000_000)]], configuration: sessionConfiguration(speed: .recorded))
        defer { session.close() }
        // Open before the start, so the first frame reaches this reader; never block on
        // the node (a read waiting in the server would wait an hour).
        let fd = open(session.nodePaths[0], O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        session.start()
        var waiter = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&waiter, 1, 10_000) == 1, "the first frame came")
        let cancelled = MonotonicInstant.now
        session.cancel()
        let outcome = session.wait()
        #expect(MonotonicInstant.now - cancelled < .seconds(2))
        #expect(outcome.cancelled && outcome.framesSent == 1)
    }

    @Test("A device removed during the replay is a failure in the outcome, not a silent end")
    func sendFailureSurfaced() throws {
        let session = try ReplaySession(
            files: [[mouseRecording(frames: 100, gap: 20_000)]], configuration: sessionConfiguration(speed: .recorded))
        defer { session.close() }
        session.start()
        session.devices[0][0].remove()
        let outcome = session.wait()
        #expect(outcome.failures.count == 1, "\(outcome)")
        if case .send(.removed) = outcome.failures.first {} else { Issue.record("expected a send failure: \(outcome.failures)") }
    }

    @Test("More devices than the limit, or an events-only recording, are refused before anything is hosted")
    func refused() {
        let many = Array(repeating: mouseRecording(frames: 1), count: ReplaySession.maximumDevices + 1)
        #expect(throws: ReplaySessionError.tooManyDevices(count: ReplaySession.maximumDevices + 1, limit: 4096)) {
            try ReplaySession(files: [many], configuration: sessionConfiguration())
        }
        #expect(throws: ReplaySessionError.noDescription(file: 1, device: 0)) {
            try ReplaySession(
                files: [[mouseRecording(frames: 1)], [Recording(description: nil, events: [])]], configuration: sessionConfiguration())
        }
    }
}

@Suite("Recorder", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct RecorderTests {
    @Test("Records a node's events timed from the first, and tells the device's removal")
    func recordsUntilRemoved() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let loop = RingRunLoop.current
            let recorder = try Recorder(nodePath: node.path, loop: loop)
            #expect(recorder.description == testMouse)
            let ended = ThreadLock<Recorder.End?>(nil)
            recorder.start { end in
                ended.withLock { $0 = end }
                loop.stop()
            }
            try node.send([(2, 0, 3), (0, 0, 0)])
            try node.send([(2, 1, -2), (0, 0, 0)])
            // Read before the removal: a removed node's unread events are lost, as a
            // kernel device's are.
            let limit = MonotonicInstant.now + .seconds(10)
            while recorder.events.count < 4 && MonotonicInstant.now < limit {
                loop.run(mode: .default, for: .milliseconds(10), returnAfterSourceHandled: true)
            }
            node.remove()
            loop.run(mode: .default, until: .now + .seconds(10))
            #expect(ended.withLock { $0 } == .removed)
            #expect(recorder.events.map(\.value) == [3, 0, -2, 0])
            #expect(recorder.events.first.map { $0.timeMicroseconds == 0 } == true)
            recorder.stop()
            #expect(recorder.end == .removed)
        }
    }

    @Test("A node that is not there, or not evdev, is refused with the reason")
    func refused() {
        let loop = RingRunLoop.current
        #expect(throws: RecorderError.open(path: "/nonexistent", errno: .noSuchFileOrDirectory)) {
            try Recorder(nodePath: "/nonexistent", loop: loop)
        }
        #expect(throws: RecorderError.self) { try Recorder(nodePath: "/dev/null", loop: loop) }
    }
}
