/// A bounded FIFO of HID events that never allocates after creation: a ring over one
/// buffer. Confined to one thread (the loop that owns it).
///
/// When full, new events are dropped and counted; the consumer learns the count from
/// ``takeDroppedCount()`` and the event system follows it with a state resync.
package struct HIDEventQueue: ~Copyable {
    private let storage: UnsafeMutablePointer<HIDEvent>
    /// Slots in the ring.
    package let capacity: Int
    // Internal, not private, so the invariant tests can break them on purpose.
    /// The slot of the oldest event.
    var head = 0
    /// Events in the ring.
    var count_ = 0
    /// Events dropped since ``takeDroppedCount()`` last ran.
    var dropped = 0
    /// Events dropped since the queue was created.
    package private(set) var totalDropped = 0

    package init(capacity: Int) {
        precondition(capacity > 0, "a queue holds at least one event")
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        var index = head
        for _ in 0..<count_ {
            (storage + index).deinitialize(count: 1)
            index = (index + 1) % capacity
        }
        storage.deallocate()
    }

    /// Events waiting.
    package var count: Int { count_ }
    package var isEmpty: Bool { count_ == 0 }

    /// Appends an event; returns `false` (and counts it) when the queue is full.
    @discardableResult
    package mutating func push(_ event: HIDEvent) -> Bool {
        guard count_ < capacity else {
            dropped += 1
            totalDropped += 1
            return false
        }
        (storage + (head + count_) % capacity).initialize(to: event)
        count_ += 1
        return true
    }

    /// Removes the oldest event.
    package mutating func pop() -> HIDEvent? {
        guard count_ > 0 else { return nil }
        let event = (storage + head).move()
        head = (head + 1) % capacity
        count_ -= 1
        return event
    }

    /// Events dropped since the last call.
    package mutating func takeDroppedCount() -> Int {
        defer { dropped = 0 }
        return dropped
    }
}

#if DEBUG
extension HIDEventQueue {
    /// Traps unless the ring's invariants hold (debug builds only; tests call it after
    /// operations): the head is a slot of the ring, it holds no more events than slots,
    /// and the drops not yet taken are no more than all drops. O(1).
    func checkInvariants() {
        precondition(capacity > 0, "HIDEventQueue: capacity \(capacity)")
        precondition(head >= 0 && head < capacity, "HIDEventQueue: head \(head) outside 0..<\(capacity)")
        precondition(count_ >= 0 && count_ <= capacity, "HIDEventQueue: \(count_) events in \(capacity) slots")
        precondition(
            dropped >= 0 && dropped <= totalDropped, "HIDEventQueue: \(dropped) drops to take of \(totalDropped) in all")
    }
}
#endif
