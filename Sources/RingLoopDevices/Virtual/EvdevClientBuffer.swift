import RingLoopEvdev

/// One event with the three clocks it is stamped with at emission; each reader sees the
/// clock it chose with `EVIOCSCLOCKID`.
struct StampedEvent {
    var realtime: timespec
    var monotonic: timespec
    var boottime: timespec
    var type: UInt16
    var code: UInt16
    var value: Int32
}

/// A reader's event buffer with the kernel's evdev semantics (drivers/input/evdev.c):
/// a power-of-two ring; readers see only complete frames (up to the last
/// `SYN_REPORT`); when a write would catch up with the reader, everything unread is
/// dropped and replaced by `SYN_DROPPED` followed by the newest event.
struct EvdevClientBuffer {
    private var storage: [InputEvent]
    private var head = 0
    private var tail = 0
    private var packetHead = 0
    private let mask: Int

    /// Events dropped by overflows, for tests and reports.
    private(set) var droppedEvents = 0
    /// Overflows so far (each yields one `SYN_DROPPED`).
    private(set) var overflowCount = 0

    init(capacity: Int) {
        var size = 8
        while size < capacity { size <<= 1 }
        storage = Array(repeating: InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0), count: size)
        mask = size - 1
    }

    var capacity: Int { storage.count }

    /// Whether complete frames wait to be read.
    var hasReadableEvents: Bool { packetHead != tail }

    /// Appends one event; returns `true` when it completed a frame (wake readers).
    mutating func push(_ event: InputEvent) -> Bool {
        storage[head] = event
        head = (head + 1) & mask
        if head == tail {
            // Full: drop all unconsumed events, leaving SYN_DROPPED and the newest event.
            droppedEvents += storage.count - 2
            overflowCount += 1
            tail = (head - 2) & mask
            storage[tail] = InputEvent(
                seconds: event.seconds, microseconds: event.microseconds, type: Evdev.EV_SYN, code: Evdev.SYN_DROPPED, value: 0)
            packetHead = tail
        }
        if event.isSynReport {
            packetHead = head
            return true
        }
        return false
    }

    /// Moves up to `maximum` complete-frame events into `out`; returns how many.
    mutating func pop(into out: inout [InputEvent], maximum: Int) -> Int {
        var count = 0
        while count < maximum, packetHead != tail {
            out.append(storage[tail])
            tail = (tail + 1) & mask
            count += 1
        }
        return count
    }

    /// Whether nothing at all is buffered (complete frames or not).
    var isEmptyIgnoringPackets: Bool { head == tail }

    /// Events buffered and not read yet (complete frames or not).
    var unreadCount: Int { (head - tail) & mask }

    /// Makes everything pushed so far readable.
    mutating func markPacketBoundary() { packetHead = head }

    /// Drops everything (a grab by another reader, a revoke).
    mutating func clear() {
        head = 0
        tail = 0
        packetHead = 0
    }
}

#if canImport(Glibc)
import Glibc
#endif

extension EvdevClientBuffer {
    /// Drops everything unread and queues a readable `SYN_DROPPED` (a clock change, as
    /// the kernel's `evdev_set_clk_type` does when events were pending).
    mutating func resetWithSynDropped(seconds: Int, microseconds: Int) {
        guard hasReadableEvents || !isEmptyIgnoringPackets else { return }
        clear()
        _ = push(
            InputEvent(
                seconds: Int64(seconds), microseconds: Int32(truncatingIfNeeded: microseconds), type: Evdev.EV_SYN,
                code: Evdev.SYN_DROPPED, value: 0))
        markPacketBoundary()
    }
}
