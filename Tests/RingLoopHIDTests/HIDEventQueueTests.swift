#if DEBUG
import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopHID

/// The event queue's ring against an array, with its debug-only invariant check after
/// every operation; a ring broken on purpose stops the process.
@Suite("HIDEventQueue")
struct HIDEventQueueTests {
    static func event(_ number: Int) -> HIDEvent {
        HIDEvent(device: HIDDeviceID(rawValue: UInt32(number)), timestamp: .now, payload: .deviceAdded)
    }

    /// Whether an exit test's process stopped with `message` on standard error (the
    /// check meant, not an earlier one).
    static func stopped(_ result: ExitTest.Result?, saying message: String) -> Bool {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self).contains(message)
    }

    @Test("Random pushes and pops keep FIFO order, count every drop, and keep the ring's invariants")
    func randomOperations() {
        var random = SeededGenerator.forTest("HIDEventQueue.randomOperations")
        for capacity in [1, 2, 7, 64] {
            var queue = HIDEventQueue(capacity: capacity)
            var model: [UInt32] = []
            var dropped = 0
            var total = 0
            var next = 0
            for _ in 0..<5_000 {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    next += 1
                    let accepted = queue.push(Self.event(next))
                    #expect(accepted == (model.count < capacity))
                    if accepted {
                        model.append(UInt32(next))
                    } else {
                        dropped += 1
                        total += 1
                    }
                case 5..<9:
                    #expect(queue.pop()?.device.rawValue == (model.isEmpty ? nil : model.removeFirst()))
                default:
                    #expect(queue.takeDroppedCount() == dropped)
                    dropped = 0
                }
                queue.checkInvariants()
                #expect(queue.count == model.count && queue.totalDropped == total)
            }
        }
    }

    @Test("A head outside the ring stops the process")
    func headOutside() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var queue = HIDEventQueue(capacity: 4)
            queue.checkInvariants()
            queue.head = 4
            queue.checkInvariants()
            exit(0)
        }
        #expect(Self.stopped(result, saying: "HIDEventQueue: head 4 outside 0..<4"))
    }

    @Test("More events than slots stops the process")
    func overfull() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var queue = HIDEventQueue(capacity: 4)
            queue.count_ = 5
            queue.checkInvariants()
            exit(0)
        }
        #expect(Self.stopped(result, saying: "HIDEventQueue: 5 events in 4 slots"))
    }

    @Test("Drops to take that were never counted stop the process")
    func uncountedDrops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var queue = HIDEventQueue(capacity: 4)
            queue.push(HIDEventQueueTests.event(1))
            queue.checkInvariants()
            queue.dropped = 1
            queue.checkInvariants()
            exit(0)
        }
        #expect(Self.stopped(result, saying: "HIDEventQueue: 1 drops to take of 0 in all"))
    }
}
#endif
