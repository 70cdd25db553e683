import Dispatch
import RingLoop
import RingLoopTestSupport
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
            threaded?.thread.perform {
                entered.signal()
                _ = gate.wait(timeout: .now() + .seconds(Int(TestWait.bound.components.seconds)))
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
                // and the look did not wait for the thread.
                let start = MonotonicInstant.now
                #expect(threaded.hasInputOnTheWay())
                #expect(MonotonicInstant.now - start < .seconds(1), "hasInputOnTheWay waited for the event thread")
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
