import Dispatch
import Glibc
import RingLoop
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// `afterInputDelivered` (what a replay's `finished` waits for) is woken by the reading side
/// itself: on the event-system thread, that thread rings the client's loop once it has read
/// everything its devices held, also when what it read decodes to no event. The client never
/// waits for that thread and keeps no timer to look again.
@Suite("Delivery notices from the reading side", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct DeliveryNoticeTests {
    static let keyboard = try! loadRecording("keyboard")

    /// Frames of a scan code alone (`MSC_SCAN`, as a keyboard sends around a key it does
    /// not map): each decodes to no event, so nothing is forwarded to wake the client.
    static func silentFrames(_ count: Int) -> [(type: UInt16, code: UInt16, value: Int32)] {
        Array(repeating: [(4, 4, 0x28), (0, 0, 0)], count: count).flatMap { $0 }
    }

    @Test(
        "waiters run after silent frames, with no timer on the client's loop; the event thread held meanwhile never holds up the client",
        arguments: HIDEventSystem.Shape.allCases, [false, true])
    func silentFramesNoTimer(shape: HIDEventSystem.Shape, removeDevice: Bool) throws {
        try withChain(shape: shape) { folder, system, loop, events in
            let keys = try folder.addDevice(Self.keyboard.description!, bufferSize: 65536)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            let threaded = system.feed as? ThreadedDeviceFeed
            #expect((threaded != nil) == (shape == .dedicatedThread))
            // Hold the event thread up (at most the test's bound): what is written now stays
            // unread there while the client's loop looks.
            let entered = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let released = Atomic<Bool>(false)
            threaded?.thread.perform {
                entered.signal()
                _ = gate.wait(timeout: .now() + .seconds(Int(TestWait.bound.components.seconds)))
                released.store(true, ordering: .releasing)
            }
            if threaded != nil { #expect(entered.wait(timeout: .now() + .seconds(20)) == .success) }
            try keys.send(Self.silentFrames(200))
            if removeDevice { keys.remove() }

            let passes = LoopBound(0, loop: loop)
            let mostItems = LoopBound(0, loop: loop)
            let counting = LoopObserver(activities: [.beforeWaiting], order: .max) { _, _ in
                passes.value += 1
                mostItems.value = max(mostItems.value, loop.itemCount(in: .default))
            }
            loop.add(counting, to: .common)
            defer { counting.invalidate() }
            let before = loop.itemCount(in: .default)
            var delivered = false
            system.afterInputDelivered { delivered = true }
            if let threaded {
                // The client looks while the thread cannot answer: nothing delivered yet,
                // and the look did not wait for the thread (it returned while the thread
                // was still held: a look that waited would return only after the gate's
                // bound let the thread go).
                #expect(threaded.hasInputOnTheWay())
                let threadStillHeld = !released.load(ordering: .acquiring)
                #expect(threadStillHeld, "hasInputOnTheWay waited for the event thread")
                loop.run(mode: .default, for: .milliseconds(20))
                #expect(passes.value > 0 && !delivered)
                gate.signal()
            }
            #expect(runUntil(loop) { delivered }, "the waiter never ran")
            // Only the delivery observer was added while waiting: no timer to look again.
            #expect(mostItems.value <= before + 1, "items on the loop while waiting: \(mostItems.value), before: \(before)")
            if !removeDevice {
                #expect(keys.unreadEventCounts.allSatisfy { $0 == 0 })
                #expect(system.rawEventsRead == keys.eventsTaken)
            }
            #expect(!events().contains { $0.kind != .deviceAdded && $0.kind != .deviceRemoved })
        }
    }
}

/// The event thread answers a delivery request only once its loop has handled every
/// completion: a ring-read device's bytes leave the device when the thread enters the kernel
/// for completions, which a callout's submission also does (`DEFER_TASKRUN` runs the pending
/// read there). A readiness source invalidated on that thread submits its cancellation at once;
/// `poll(2)` then finds the device empty while its events wait, undecoded, in a completion.
@Suite("Delivery notices after a callout's submission")
struct DeliveryNoticeRingReadTests {
    @Test(
        "a waiter runs only after the events the thread read before its notice",
        arguments: [false, true])
    func noticeAfterRingReadInCallout(invalidateInCallout: Bool) throws {
        let recording = try loadRecording("keyboard")
        let totalKeys = decodedEvents(of: recording).filter { $0.kind == .key }.count
        // Whether the thread's loop answers before its next wait depends on how its pass
        // goes on after the callout (measured before the fix: 5 of 6 single rounds failed):
        // a few rounds, each a fresh system.
        for _ in 0..<4 {
            try checkNotice(recording: recording, totalKeys: totalKeys, invalidateInCallout: invalidateInCallout)
        }
    }

    private func checkNotice(recording: Recording, totalKeys: Int, invalidateInCallout: Bool) throws {
        let (keysAtNotice, keysFinally) = try onFreshThread { () throws -> (Int, Int) in
            // The keyboard, read through the ring, and a pipe whose readiness source on the
            // event thread submits its cancellation at once when invalidated.
            var keyboardPipe: [Int32] = [0, 0]
            var otherPipe: [Int32] = [0, 0]
            #expect(pipe(&keyboardPipe) == 0 && pipe(&otherPipe) == 0)
            let writeEnd = keyboardPipe[1]
            let otherRead = otherPipe[0]
            defer {
                close(writeEnd)
                close(otherPipe[0])
                close(otherPipe[1])
            }
            let loop = RingRunLoop.current
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", shape: .dedicatedThread, nodeNames: []), loop: loop)
            var keys = 0
            system.addHandler { event in
                if event.kind == .key { keys += 1 }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            let id = try system.attachStream(
                fileDescriptor: FileDescriptor(rawValue: keyboardPipe[0]), description: deviceInfo(of: recording))
            #expect(system.readPaths[id] == .ring)
            let threaded = try #require(system.feed as? ThreadedDeviceFeed)
            let readiness = ThreadLock<LoopPortSource?>(nil)
            let done = DispatchSemaphore(value: 0)
            threaded.thread.perform {
                let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: otherRead)) { _ in }
                RingRunLoop.current.add(source, to: .common)
                readiness.withLock { $0 = source }
                done.signal()
            }
            #expect(done.wait(timeout: .now() + .seconds(20)) == .success)
            // One more pass of the thread: its wait has armed the readiness poll by then.
            threaded.thread.perform { done.signal() }
            #expect(done.wait(timeout: .now() + .seconds(20)) == .success)
            // The thread is held in a callout before the request is made, so that no
            // BeforeWaiting of an earlier pass answers it before the frames are written.
            let entered = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let events = recording.events
            threaded.thread.perform {
                entered.signal()
                _ = gate.wait(timeout: .now() + .seconds(20))
                writeFrames(events, to: writeEnd)
                if invalidateInCallout { readiness.withLock { $0 }?.invalidate() }
            }
            #expect(entered.wait(timeout: .now() + .seconds(20)) == .success)
            var keysAtNotice = -1
            system.afterInputDelivered { keysAtNotice = keys }
            gate.signal()
            #expect(runUntil(loop) { keysAtNotice >= 0 }, "the waiter never ran")
            _ = runUntil(loop) { keys == totalKeys }
            return (keysAtNotice, keys)
        }
        #expect(keysFinally == totalKeys)
        #expect(keysAtNotice == totalKeys, "the waiter ran with \(keysAtNotice) of \(totalKeys) key events delivered")
    }
}

/// A port event kept for another mode (a source only in `.tracking` became ready while the
/// loop runs `.default`) is not input on its way: the next wait does not return for it, so
/// a delivery waiter that counted it would wait until that mode ran.
@Suite("Delivery notices beside an event kept for another mode")
struct DeliveryNoticeKeptEventTests {
    @Test("a delivery waiter runs while an event waits for another mode", arguments: [false, true])
    func keptEvent(otherModeEvent: Bool) throws {
        let recording = try loadRecording("keyboard")
        let (ran, keys) = try onFreshThread { () throws -> (Bool, Int) in
            var keyboardPipe: [Int32] = [0, 0]
            var otherPipe: [Int32] = [0, 0]
            #expect(pipe(&keyboardPipe) == 0 && pipe(&otherPipe) == 0)
            defer {
                close(keyboardPipe[1])
                close(otherPipe[0])
                close(otherPipe[1])
            }
            let loop = RingRunLoop.current
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", shape: .clientLoop, nodeNames: []), loop: loop)
            var keys = 0
            system.addHandler { event in
                if event.kind == .key { keys += 1 }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            _ = try system.attachStream(
                fileDescriptor: FileDescriptor(rawValue: keyboardPipe[0]), description: deviceInfo(of: recording))
            let tracking = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: otherPipe[0])) { _ in }
            loop.add(tracking, to: .tracking)
            defer { tracking.invalidate() }
            if otherModeEvent {
                var byte: UInt8 = 1
                _ = write(otherPipe[1], &byte, 1)
            }
            writeFrames(recording.events, to: keyboardPipe[1])
            var ran = false
            system.afterInputDelivered { ran = true }
            _ = runUntil(loop, timeout: .seconds(3)) { ran }
            return (ran, keys)
        }
        #expect(keys > 0)
        #expect(ran, "the waiter never ran (otherModeEvent: \(otherModeEvent))")
    }
}
