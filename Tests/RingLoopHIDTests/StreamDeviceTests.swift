import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Writes `events` to `fd` as `struct input_event` records, a frame per write (as evdev
/// hands a reader whole frames).
func writeFrames(_ events: [InputEvent], to fd: Int32, eachFrame: () -> Void = {}) {
    var frame: [UInt8] = []
    for event in events {
        frame.append(contentsOf: withUnsafeBytes(of: event.kernelEvent) { Array($0) })
        guard event.isSynReport else { continue }
        frame.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 { offset += written } else if errno != EINTR && errno != EAGAIN { return }
            }
        }
        frame.removeAll(keepingCapacity: true)
        eachFrame()
    }
}

/// Devices fed through a pipe: the chain above the descriptor cannot tell them from
/// evdev nodes, and needs neither FUSE nor uinput.
@Suite("Stream devices (pipes) and reads in the ring")
struct StreamDeviceTests {
    @Test(
        "a pipe carries a recording into the chain: the events are the decoder's, the end of the stream removes the device",
        arguments: HIDEventSystem.Shape.allCases, ["touchscreen-multitouch", "keyboard", "mouse-hires-wheel"])
    func pipeDevice(shape: HIDEventSystem.Shape, name: String) throws {
        let recording = try loadRecording(name)
        let expected = decodedEvents(of: recording)
        let (events, path) = try onFreshThread { () throws -> ([HIDEvent], DeviceReadPath?) in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var events: [HIDEvent] = []
            system.addHandler { event in
                events.append(event)
                return .pass
            }
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let id = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: deviceInfo(of: recording))
            let path = system.readPaths[id]
            let writer = ThreadBody { writeFrames(recording.events, to: ends[1]) }
            writer.runAndJoin()
            close(ends[1])
            #expect(runUntil(loop) { events.contains { $0.kind == .deviceRemoved } })
            system.stop()
            return (events, path)
        }
        #expect(path == .ring)
        #expect(events.first?.kind == .deviceAdded)
        #expect(events.last?.kind == .deviceRemoved)
        let decoded = events.filter { $0.kind != .deviceAdded && $0.kind != .deviceRemoved }
        #expect(decoded.map(summary) == expected.map(summary))
    }

    @Test(
        "records a writer splits between two writes are read whole and counted once, by either shape",
        arguments: HIDEventSystem.Shape.allCases)
    func splitRecordsCounted(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("keyboard")
        let expected = decodedEvents(of: recording)
        let bytes = recording.events.flatMap { event in withUnsafeBytes(of: event.kernelEvent) { Array($0) } }
        let recordSize = MemoryLayout.size(ofValue: recording.events[0].kernelEvent)
        let (events, counted) = try onFreshThread { () throws -> ([HIDEvent], Int) in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var events: [HIDEvent] = []
            system.addHandler { event in
                if event.kind != .deviceAdded && event.kind != .deviceRemoved { events.append(event) }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer { close(ends[1]) }
            try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: deviceInfo(of: recording))
            // Pieces of one and a half records: every other piece ends inside a record. Each
            // goes once the reader has taken the one before (the pipe is empty), so the
            // reader sees the split.
            let piece = recordSize * 3 / 2
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + piece, bytes.count)
                let written = bytes[offset..<end].withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
                #expect(written == end - offset)
                offset = end
                #expect(
                    runUntil(loop) {
                        var waiting: Int32 = 0
                        return ioctl(ends[0], UInt(FIONREAD), &waiting) == 0 && waiting == 0
                    }, "the reader left bytes in the pipe")
            }
            #expect(runUntil(loop) { system.rawEventsRead >= recording.events.count })
            #expect(runUntil(loop) { events.count >= expected.count })
            return (events, system.rawEventsRead)
        }
        #expect(counted == recording.events.count, "\(shape): counted \(counted) of \(recording.events.count) records")
        #expect(events.map(summary) == expected.map(summary))
    }

    @Test(
        "through the ring a frame costs no read(2) and one io_uring_enter (the wait); by poll, a read each",
        arguments: DeviceReadPath.allCases)
    func systemCallsPerFrame(path: DeviceReadPath) throws {
        let recording = try loadRecording("mouse-hires-wheel")
        let frames = recording.events.filter(\.isSynReport).count
        let (enters, handled, reads) = try onFreshThread { () throws -> (UInt64, Int, Int) in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", nodeNames: [], readPath: path), loop: loop)
            let handledFrames = Atomic<Int>(0)
            system.addHandler { event in
                if event.kind != .deviceAdded && event.kind != .deviceRemoved { handledFrames.add(1, ordering: .releasing) }
                return .pass
            }
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: deviceInfo(of: recording))
            #expect(system.readPaths.values.first == path)
            // One frame at a time, each once the last was handled: the loop sleeps between.
            let writer = LoopThread(name: "writer")
            let done = Atomic<Bool>(false)
            let writeEnd = ends[1]
            let events = UncheckedBox(recording.events)
            let readsBefore = system.readSystemCalls
            let entersBefore = loop.enterCount
            writer.perform {
                var expected = 0
                writeFrames(events.value, to: writeEnd) {
                    expected += 1
                    let limit = MonotonicInstant.now + .seconds(10)
                    // Each frame of this mouse yields at least one event.
                    while handledFrames.load(ordering: .acquiring) < expected && MonotonicInstant.now < limit { sched_yield() }
                }
                done.store(true, ordering: .releasing)
                close(writeEnd)  // the end of the stream removes the device: the loop's last event
            }
            // Each run lasts until the loop handles something (or the bound): a run that
            // ended at a short deadline while the writer was descheduled would add an
            // io_uring_enter that no frame caused.
            let limit = MonotonicInstant.now + TestWait.bound
            while !(done.load(ordering: .acquiring) && system.devices.isEmpty), MonotonicInstant.now < limit {
                loop.run(mode: .default, for: TestWait.bound, returnAfterSourceHandled: true)
            }
            let enters = loop.enterCount - entersBefore
            let reads = system.readSystemCalls - readsBefore
            writer.stopAndJoin()
            #expect(system.devices.isEmpty, "the end of the stream did not remove the device")
            system.stop()
            return (enters, handledFrames.load(ordering: .acquiring), reads)
        }
        #expect(handled >= frames, "\(path): \(handled) of \(frames) frames handled, \(enters) io_uring_enter, \(reads) read(2)")
        switch path {
        case .ring:
            #expect(reads == 0, "read(2) calls on the ring path")
            #expect(enters <= UInt64(frames) + 8, "\(enters) io_uring_enter calls for \(frames) frames")
        case .poll:
            #expect(reads >= frames, "one read per wake-up at least")
        }
    }
}

/// Virtual devices (FUSE nodes) are read by poll then read, the way that costs their
/// server least (see `DeviceReader.ringReads`).
@Suite("Reading virtual devices", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct VirtualDeviceReadTests {
    @Test("a FUSE node is read by poll even when the ring is preferred: per frame one poll request, one read, one read(2)")
    func nodeReadByPoll() throws {
        let recording = try loadRecording("mouse-hires-wheel")
        let frames = recording.events.split(whereSeparator: \.isSynReport).map { Array($0) }
        let (path, served, readCalls, handled) = try onFreshThread {
            () throws -> (DeviceReadPath?, FUSEEvdevNode.ServedRequests, Int, Int) in
            _ = MountLeakCheck.armed
            let folderPath = "/tmp/ringloop-hid-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let folder = try FUSEDeviceFolder(path: folderPath)
            defer { folder.close() }
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: folderPath, readPath: .ring), loop: loop)
            let handled = Atomic<Int>(0)
            var added: HIDDeviceID?
            system.addHandler { event in
                if event.kind == .deviceAdded { added = event.device } else { handled.add(1, ordering: .releasing) }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            let node = try folder.addDevice(recording.description!, appliesFuzz: false)
            #expect(runUntil(loop) { added != nil })
            let before = node.servedRequests
            let readsBefore = system.readSystemCalls
            // One frame at a time, each once the last was handled: the loop sleeps between.
            let sender = LoopThread(name: "sender")
            let done = Atomic<Bool>(false)
            let toSend = UncheckedBox(frames)
            sender.perform {
                let limit = MonotonicInstant.now + .seconds(20)
                for (index, frame) in toSend.value.enumerated() {
                    try? node.send(frame.map { ($0.type, $0.code, $0.value) } + [(0, 0, 0)])
                    while handled.load(ordering: .acquiring) <= index && MonotonicInstant.now < limit { sched_yield() }
                }
                done.store(true, ordering: .releasing)
                loop.wakeUp()
            }
            #expect(runUntil(loop) { done.load(ordering: .acquiring) })
            sender.stopAndJoin()
            return (
                added.flatMap { system.readPaths[$0] }, node.servedRequests - before, system.readSystemCalls - readsBefore,
                handled.load(ordering: .acquiring)
            )
        }
        #expect(path == .poll)
        #expect(handled >= frames.count)
        #expect(served.polls >= frames.count && served.polls <= frames.count + 4, "\(served)")
        #expect(served.reads >= frames.count && served.reads <= frames.count + 4, "\(served)")
        #expect(served.pollNotifications >= frames.count - 2, "\(served)")
        #expect(readCalls >= frames.count)
    }
}
