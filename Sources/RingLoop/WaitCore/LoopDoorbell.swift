import DequeModule
import Synchronization

/// The queue behind every doorbell of one loop: senders on any thread append, the
/// loop thread drains it whole after each wake.
///
/// Why a queue and a coalesced wake-up rather than one MSG_RING per message: a MSG_RING
/// costs the sender a system call per message, and under load the target's completion
/// queue can refuse it (`EOVERFLOW`), so keeping FIFO order with no loss would need
/// retries that reorder. Appending under a lock costs tens of nanoseconds, one wake-up
/// serves every message posted during a sleep, and none is needed while the loop is
/// awake. Memory is the bound: the queue grows while the receiver lags.
package final class MessageInbox: Sendable {
    struct Entry: Sendable {
        var port: LoopDoorbell
        var message: LoopDoorbell.Message
    }

    private struct State {
        var entries: Deque<Entry> = []
        var closed = false
    }

    private let state = ThreadLock(State())
    /// Set under the lock by a sender, cleared by the receiver when it drains: lets the
    /// receiver skip the lock when nothing arrived.
    private let hasEntries = Atomic<Bool>(false)
    private let signal: WakeUpSignal

    init(signal: WakeUpSignal) { self.signal = signal }

    /// Appends a message for `port` and wakes the loop. Returns `false` when the
    /// receiving loop is gone.
    func post(_ message: LoopDoorbell.Message, to port: LoopDoorbell) -> Bool {
        let accepted = state.withLock { state -> Bool in
            if state.closed { return false }
            state.entries.append(Entry(port: port, message: message))
            hasEntries.store(true, ordering: .releasing)
            return true
        }
        if accepted { signal.wakeUp() }
        return accepted
    }

    /// Loop thread: moves every queued entry into `spare` (which must be empty) in FIFO
    /// order, reusing storage so a warm inbox allocates nothing.
    func drain(into spare: inout Deque<Entry>) {
        guard hasEntries.load(ordering: .acquiring) else { return }
        state.withLock { state in
            swap(&state.entries, &spare)
            hasEntries.store(false, ordering: .relaxed)
        }
    }

    /// Refuses further posts and discards what is queued (the loop is going away).
    func close() {
        state.withLock { state in
            state.closed = true
            state.entries.removeAll()
        }
    }
}

/// A loop's doorbell: a port that any thread rings with a small message — a 64-bit
/// payload and a 32-bit extra word — and one loop receives, in order, none lost: the
/// counterpart of a Mach port with a receive right held by a run loop (not a named
/// message port: for those, see ``LocalMessagePort``).
///
/// Create it for a loop (``RingRunLoop/makeDoorbell()``), hand it to other threads, and
/// schedule a ``LoopPortSource`` for it on that loop; each message becomes one perform of
/// the source. Messages sent while no source for the doorbell is in the running mode
/// wait, like messages in a Mach port's queue.
public final class LoopDoorbell: Sendable, Hashable {
    /// A message rung on a doorbell: a 64-bit payload and a 32-bit extra word, the shape
    /// of an `IORING_OP_MSG_RING` completion.
    public struct Message: Sendable, Hashable {
        /// The main payload.
        public var payload: UInt64
        /// A second, smaller word (a kind, a length, a count).
        public var extra: UInt32

        /// A message of `payload` and `extra`.
        public init(payload: UInt64, extra: UInt32 = 0) {
            self.payload = payload
            self.extra = extra
        }
    }

    let inbox: MessageInbox
    private let open = Atomic<Bool>(true)

    init(inbox: MessageInbox) { self.inbox = inbox }

    /// Sends a message. Returns `false` when the doorbell was closed or its loop is gone.
    @discardableResult
    public func send(_ message: Message) -> Bool {
        guard open.load(ordering: .acquiring) else { return false }
        return inbox.post(message, to: self)
    }

    /// Sends a 64-bit payload and an optional 32-bit extra word.
    @discardableResult
    public func send(_ payload: UInt64, extra: UInt32 = 0) -> Bool {
        send(Message(payload: payload, extra: extra))
    }

    /// Refuses further messages. Messages already sent are still delivered.
    public func close() { open.store(false, ordering: .releasing) }

    /// Whether the doorbell accepts messages.
    public var isOpen: Bool { open.load(ordering: .acquiring) }

    public static func == (lhs: LoopDoorbell, rhs: LoopDoorbell) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
