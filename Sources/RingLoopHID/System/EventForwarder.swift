import RingLoop
import RingLoopEvdev
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Events crossing from the event-system thread to the client's loop: a bounded buffer
/// and a message port that rings once per batch. When the buffer is full, events are
/// dropped and counted, except lifecycle events, which are kept aside; for each device
/// that lost events, the state after its newest event (lost or not) is kept, so the
/// client can bring its handlers' view up to it.
final class Forwarder: @unchecked Sendable {
    // @unchecked: `monitor` and `read` are touched on the reading thread only; the
    // rest is locked.
    struct Taken {
        var dropped = 0
        var lifecycle: [HIDEvent] = []
        var snapshots: [HIDDeviceID: VisibleState] = [:]
        var problems: [HIDError] = []
    }

    private struct Shared {
        var events: [HIDEvent] = []
        var taken = Taken()
        var pending = false
    }

    private let state = ThreadLock(Shared())
    private let capacity: Int
    private let port: LoopDoorbell
    var monitor: DeviceMonitor?
    /// What every event pushed says about its device (reading thread only).
    private var read = VisibleStates()
    /// Raw events the reading thread has read (for tests).
    var eventsRead: Int { readCount.load(ordering: .acquiring) }
    let readCount = Atomic<Int>(0)

    init(capacity: Int, port: LoopDoorbell) {
        self.capacity = capacity
        self.port = port
    }

    /// Reading thread: buffers an event (when the client lags: drops and counts it, or
    /// keeps it aside if it is a lifecycle event, and keeps the device's state).
    func push(_ event: HIDEvent) {
        if let monitor { readCount.store(monitor.totalEventsRead, ordering: .releasing) }
        read.apply(event)
        let ring = state.withLock { shared -> Bool in
            if shared.events.count < capacity {
                shared.events.append(event)
            } else {
                if event.kind.isDeviceLifecycle {
                    shared.taken.lifecycle.append(event)
                } else {
                    shared.taken.dropped += 1
                }
                shared.taken.snapshots[event.device] = read[event.device]
            }
            if shared.pending { return false }
            shared.pending = true
            return true
        }
        if ring { port.send(1) }
    }

    func pushProblem(_ problem: HIDError) {
        state.withLock { $0.taken.problems.append(problem) }
        port.send(2)
    }

    func flush() {
        noteEventsRead()
        port.send(0)
    }

    /// Reading thread: publishes how many raw events the monitor has read (``eventsRead``).
    func noteEventsRead() {
        readCount.store(monitor?.totalEventsRead ?? readCount.load(ordering: .relaxed), ordering: .releasing)
    }

    /// Whether events wait for the client's loop to take them (for tests).
    var hasWaiting: Bool { state.withLock { $0.pending || !$0.events.isEmpty } }

    /// Client loop: hands every buffered event to `body`, in order, and returns what was
    /// lost since the last call.
    func drain(_ body: (HIDEvent) -> Void) -> Taken {
        let (events, taken) = state.withLock { shared -> ([HIDEvent], Taken) in
            defer {
                shared.events.removeAll(keepingCapacity: true)
                shared.taken = Taken()
                shared.pending = false
            }
            return (shared.events, shared.taken)
        }
        for event in events { body(event) }
        return taken
    }
}
