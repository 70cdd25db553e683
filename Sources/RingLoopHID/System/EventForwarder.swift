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
    // @unchecked: `monitor`, `deliveryObserver` and `read` are touched on the reading
    // thread only; the rest is locked or atomic.
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
    /// Answers delivery requests after each pass of the reading thread's loop.
    var deliveryObserver: LoopObserver?
    /// What every event pushed says about its device (reading thread only).
    private var read = VisibleStates()
    /// The client's requests to be told when what was on its way has been handed over
    /// (``askForDeliveryNotice()``): the client counts them up, the reading thread stores
    /// the newest one it answered. Equal: nothing asked is left unanswered.
    private let deliveryAsked = Atomic<Int>(0)
    private let deliveryAnswered = Atomic<Int>(0)

    init(capacity: Int, port: LoopDoorbell) {
        self.capacity = capacity
        self.port = port
    }

    /// Reading thread: buffers an event (when the client lags: drops and counts it, or
    /// keeps it aside if it is a lifecycle event, and keeps the device's state).
    func push(_ event: HIDEvent) {
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

    func flush() { port.send(0) }

    /// Whether events wait for the client's loop to take them.
    var hasWaiting: Bool { state.withLock { $0.pending || !$0.events.isEmpty } }

    // MARK: Delivery notices

    /// Client loop: asks the reading thread to ring the client's port once every device
    /// it reads has nothing unread left, the events of what it read pushed (or found to
    /// decode to none). The reading thread must then be woken to look
    /// (``answerDeliveryRequest()``): its loop may be asleep with nothing to read.
    func askForDeliveryNotice() {
        // Relaxed: the request publishes nothing; the thread is woken to look by a
        // request of its loop (or looks after its next pass).
        deliveryAsked.add(1, ordering: .relaxed)
    }

    /// Client loop: whether a request of ``askForDeliveryNotice()`` is not answered yet.
    /// Once it is, everything the reading thread read before answering was pushed
    /// (``hasWaiting`` tells whether the client has taken it), and every raw event it read
    /// is counted. Does not wait for the reading thread.
    var isDeliveryNoticePending: Bool {
        // The answer first (acquiring what the reading thread did before it); the client
        // is the only writer of the request.
        deliveryAnswered.load(ordering: .acquiring) != deliveryAsked.load(ordering: .relaxed)
    }

    /// Reading thread, after each pass of its loop and when woken for a request: answers
    /// the newest request once no device holds input its reader has not taken and the
    /// loop has no completion left to handle (a ring read's bytes wait there, gone from
    /// the device: ``DeviceMonitor/hasInputNotYetDecoded``), and rings the client's port.
    /// Input still unread, or a completion, wakes this thread's loop, and it looks again
    /// after that pass. Costs one atomic load while nothing is asked.
    func answerDeliveryRequest() {
        let asked = deliveryAsked.load(ordering: .relaxed)
        guard asked != deliveryAnswered.load(ordering: .relaxed) else { return }
        if let monitor, monitor.hasInputNotYetDecoded {
            // A poll-path device found readable is read now: its readiness event may never
            // come (a FUSE node's server can miss a poll notification), and this thread's
            // loop would sleep with the notice unanswered.
            monitor.readInputLeftUnread()
            if monitor.hasInputNotYetDecoded { return }
        }
        // Releasing: the client that sees the answer sees every push and count before it.
        deliveryAnswered.store(asked, ordering: .releasing)
        port.send(3)
    }

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
