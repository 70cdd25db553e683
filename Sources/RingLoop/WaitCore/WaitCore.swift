import CLibURing
import CThreads
import DequeModule

/// Identifies a port registered on a wait core: a slot and the slot's generation.
package struct PortID: Hashable, Sendable, CustomStringConvertible {
    /// Index in the wait core's port table.
    package let slot: UInt32
    /// The slot's generation when the port was registered (24 bits).
    package let generation: UInt32

    package var description: String { "port \(slot).\(generation)" }
}

/// What the kernel reported for a port, routed to that port.
package enum PortEvent: Sendable, Hashable {
    /// The watched file descriptor is ready; `events` is the poll mask (`POLLIN`…).
    case readiness(PortID, events: Int16)
    /// Watching the descriptor failed (for example `EBADF` after it was closed). The
    /// port is disarmed; remove it.
    case failure(PortID, RingError)
    /// A message sent to a ``LoopDoorbell`` of this loop.
    case message(LoopDoorbell, LoopDoorbell.Message)
    /// A completion of an I/O operation: the kernel's result (a count, a descriptor or
    /// `-errno`) and the completion's flags (more to come, the provided buffer used).
    case completion(PortID, result: Int32, flags: UInt32)

    /// The readiness port the event is for (`nil` for messages).
    package var port: PortID? {
        switch self {
        case .readiness(let id, _), .failure(let id, _): return id
        case .message, .completion: return nil
        }
    }
}

/// The wait core: one io_uring per loop. Every reason to wake is a completion; each is
/// routed to the port that registered it, and every ready completion is handed over in
/// one batch per wake.
///
/// Thread rules: confined to the thread that created it (it owns a `SINGLE_ISSUER`
/// ring), except ``wakeUp()`` and ``LoopDoorbell/send(_:)``, which any thread may call.
package final class WaitCore {
    enum SlotState {
        case free
        /// A readiness port; `armed` is false after a failure.
        case readiness(fd: Int32, events: UInt32, armed: Bool)
        /// A removed readiness port whose poll the kernel has not finished yet.
        case cancelling
        /// An I/O operation in flight: the slot is freed by its final completion (the one
        /// without `IORING_CQE_F_MORE`), which is always delivered, cancelled or not, so
        /// the owner of its buffers knows when the kernel is done with them.
        case operation
    }

    struct Slot {
        var generation: UInt32
        var state: SlotState
    }

    let ring: Ring
    package let signal: WakeUpSignal
    let inbox: MessageInbox

    // Touched at every pass on the core's one thread, never lent (`inout`) across a call
    // that reaches them again: unchecked, as a checked access costs ~75 instructions.
    @exclusivity(unchecked) var slots: [Slot] = []
    @exclusivity(unchecked) var freeSlots: [UInt32] = []
    @exclusivity(unchecked) private var completions: Deque<Completion> = []
    @exclusivity(unchecked) private var inboxSpare: Deque<MessageInbox.Entry> = []
    private let ownsInbox: Bool
    @exclusivity(unchecked) var events: Deque<PortEvent> = []
    /// Work that a failed system call left undone, retried before every wait: the
    /// eventfd wake-up poll to arm again, removals to ask again. Until it succeeds every
    /// wait throws, so a failure is never silent (cross-thread wake-ups would stop; a
    /// slot would stay "cancelling" for good).
    private var wakeUpNeedsArming = false
    @exclusivity(unchecked) var cancellationsToRetry: [PortID] = []
    /// Provided-buffer rings no operation uses, to lend again.
    let bufferRings: BufferRingPool

    /// Waits that slept in the kernel (returned because of a completion, a wake-up or
    /// the deadline). Polls that did not block are not counted.
    private(set) var sleepCount: UInt64 = 0
    /// Completions harvested so far, wake-ups included.
    private(set) var completionCount: UInt64 = 0
    /// Times a readiness poll was armed again after the kernel ended it.
    private(set) var rearmCount: UInt64 = 0

    /// Creates a ring on the calling thread and attaches `signal` to it (a new one by
    /// default); messages posted to `inbox` (a new one by default) are harvested with
    /// every wait.
    package init(
        entries: UInt32 = 256, wakeUp preferred: WakeUpMechanism = .messageRing,
        signal: WakeUpSignal = WakeUpSignal(), inbox: MessageInbox? = nil
    ) throws(RingError) {
        // The thread's timer slack is left as it is, deliberately: the kernel applies no
        // slack to an io_uring wait's timeout (measured here: 1 kHz lateness p50/p99 the
        // same with the default 50 µs slack and with 1 ns), so lowering it would only
        // change the precision, and power, of sleeps the application makes itself on the
        // loop's thread. Accuracy beyond the kernel's wake-up is the precise mode's job.
        ring = try Ring(entries: entries)
        bufferRings = BufferRingPool(ring: ring)
        try signal.attach(to: ring, preferred: preferred)
        self.signal = signal
        self.inbox = inbox ?? MessageInbox(signal: signal)
        ownsInbox = inbox == nil
        // Consume the completion of the wake-up probe (a kick MSG_RING sends to itself),
        // so the first wait does not return for nothing.
        try ring.submit()
        ring.harvest { _ in }
    }

    deinit {
        if ownsInbox { inbox.close() }
        // The ring's deinit closes it, which cancels every operation still in flight.
    }

    /// Creates a message port whose messages this wait core harvests.
    func makeDoorbell() -> LoopDoorbell { LoopDoorbell(inbox: inbox) }

    /// Wakes the loop from any thread (coalesced; free when the loop is awake).
    func wakeUp() { signal.wakeUp() }

    /// The wake-up mechanism in use.
    var wakeUpMechanism: WakeUpMechanism { signal.mechanism ?? .eventFD }

    /// Ports currently registered.
    var portCount: Int { slots.count - freeSlots.count }

    package var debugDescription: String {
        "WaitCore(\(ring.debugDescription), wake-up \(wakeUpMechanism), \(portCount) ports)"
    }

    // MARK: Waiting

    /// Whether events are harvested and not yet taken with ``nextEvent()``.
    var hasEvents: Bool { !events.isEmpty }

    /// Submits what is queued, then sleeps until a completion arrives, a wake-up comes
    /// or `deadline` passes (``MonotonicInstant/distantFuture`` for no deadline), and
    /// harvests every completion that is ready. Does not sleep when events are already
    /// waiting or a wake-up is pending. One call into the kernel.
    ///
    /// - Returns: `true` if it returned because of the deadline with nothing harvested.
    ///
    /// With a `spin` window, it first polls shared memory for up to that long (or until
    /// the deadline): a wake-up request or a completion found then costs no sleep, no
    /// wake-up system call for the sender, and none of the machine's wake-up latency.
    @discardableResult
    package func wait(until deadline: MonotonicInstant, spin: UInt64 = 0) throws(RingError) -> Bool {
        try finishUndoneWork()
        if !events.isEmpty {
            try poll()
            return false
        }
        lastSpin = 0
        // No polling while entries wait to be submitted (a reply queued in a callout):
        // they go to the kernel with the wait, not after the window.
        if spin > 0, !ring.hasQueuedSubmissions, spinUntilSomethingArrives(before: deadline, window: spin) {
            spinHits &+= 1
            try poll()
            return false
        }
        if signal.prepareToSleep() {
            defer { signal.didWake() }
            sleepCount &+= 1
            try retryingWhenBusy { () throws(RingError) in _ = try waitingInKernel(until: deadline) }
        } else {
            try retryingWhenBusy { () throws(RingError) in _ = try ring.submitIfNeeded() }
        }
        let harvested = collect()
        return harvested == 0 && MonotonicInstant.now >= deadline
    }

    /// Polls the wake-up flag and the ring's shared memory until one has something, the
    /// window ends or the deadline comes. Returns whether something arrived. A found
    /// wake-up request is consumed here (the loop is awake and will look at everything).
    @inline(never)
    private func spinUntilSomethingArrives(before deadline: MonotonicInstant, window: UInt64) -> Bool {
        let start = MonotonicInstant.now.nanoseconds
        let end = min(deadline.nanoseconds, start &+ window)
        var now = start
        // CPU time, not wall time: a poll the scheduler interrupted did not use the CPU
        // while it waited (the adaptive policy's budget is a share of a core).
        let cpuStart = Self.threadCPUNanoseconds()
        defer { lastSpin = Self.threadCPUNanoseconds() &- cpuStart }
        while now < end {
            if signal.isPending {
                signal.didWake()
                now = MonotonicInstant.now.nanoseconds
                return true
            }
            if ring.hasPendingCompletions {
                now = MonotonicInstant.now.nanoseconds
                return true
            }
            ringloop_cpu_relax()
            now = MonotonicInstant.now.nanoseconds
        }
        return false
    }

    /// The CPU time the last wait spent polling before it found something or slept
    /// (nanoseconds).
    package private(set) var lastSpin: UInt64 = 0

    private static func threadCPUNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Waits that found work while polling before sleeping (see ``wait(until:spin:)``).
    package private(set) var spinHits: UInt64 = 0

    /// Stable name for profiles: time here is time asleep.
    @inline(never)
    private func waitingInKernel(until deadline: MonotonicInstant) throws(RingError) -> Bool {
        try ring.submitAndWait(until: deadline)
    }

    /// Submits what is queued and harvests what is ready, without sleeping. Makes no
    /// system call when nothing is queued and the kernel flags no pending work.
    func poll() throws(RingError) {
        try finishUndoneWork()
        try retryingWhenBusy { () throws(RingError) in _ = try ring.submitIfNeeded() }
        collect()
    }

    /// Submits one operation and returns its result (a count, or `-errno`), for an
    /// operation the kernel finishes as it takes it — a send with `MSG_DONTWAIT`, which
    /// the kernel neither waits on nor hands to a worker: one call into the kernel, the
    /// submission and its completion together. Memory `prepare`'s entry points at need
    /// only stay valid for the call: it returns once the kernel is done with it.
    ///
    /// Should the kernel not finish it at once, it waits for the completion in the
    /// kernel until `deadline`, then cancels it and waits for its final completion
    /// (`-ECANCELED` when it did not finish first). Every other completion harvested
    /// meanwhile stays queued for the loop's next pass, which then does not sleep.
    func performAtOnce(
        until deadline: MonotonicInstant, _ prepare: (UnsafeMutablePointer<io_uring_sqe>) -> Void
    ) throws(RingError) -> Int32 {
        // Undone work first: the operation is then the last entry queued, so an entry
        // still queued after a failed call is the operation's.
        try finishUndoneWork()
        var entry: UnsafeMutablePointer<io_uring_sqe>?
        let id = try startOperation { sqe in
            entry = sqe
            prepare(sqe)
        }
        var cancelled = false
        do {
            try retryingWhenBusy { () throws(RingError) in try ring.submit() }
        } catch {
            // Not taken by the kernel: made a no-op, whose completion frees the slot, so
            // nothing refers to the caller's memory once this returns. Taken (the call
            // failed after the kernel consumed it): waited for below like any other.
            if ring.hasQueuedSubmissions, let entry {
                let tag = entry.pointee.user_data
                io_uring_prep_nop(entry)
                io_uring_sqe_set_data64(entry, tag)
                throw error
            }
        }
        while true {
            collect()
            if let index = events.lastIndex(where: { event in
                if case .completion(let other, _, _) = event { return other == id }
                return false
            }), case .completion(_, let result, _) = events.remove(at: index) {
                return result
            }
            if !cancelled, MonotonicInstant.now >= deadline {
                cancelled = true
                // (A failure to ask leaves the wait below to end with the operation.)
                try? cancelOperation(id)
            }
            // The kernel has the submission: the caller's memory must outlive it, so
            // this waits for its completion whatever fails meanwhile.
            _ = try? ring.submitAndWait(until: cancelled ? .distantFuture : deadline)
        }
    }

    /// Runs a call into the kernel; when it reports `EBUSY` (completions overflowed and
    /// could not all be flushed) or `EAGAIN` (no resources for the request just now),
    /// harvests what is ready — which makes room — and tries once more, unless what was
    /// harvested is already something to return with.
    func retryingWhenBusy(_ call: () throws(RingError) -> Void) throws(RingError) {
        do {
            try call()
        } catch let error where error.errno == .resourceBusy || error.errno == .resourceTemporarilyUnavailable {
            if collect() > 0 { return }
            try call()
        }
    }

    /// Arms the wake-up poll and asks for removals a failed call left undone.
    func finishUndoneWork() throws(RingError) {
        if wakeUpNeedsArming {
            try signal.armEventFDPoll(on: ring)
            wakeUpNeedsArming = false
        }
        while let id = cancellationsToRetry.first {
            if isCurrent(id), case .cancelling = slots[Int(id.slot)].state { try submitCancellation(id) }
            cancellationsToRetry.removeFirst()
        }
    }

    /// The next harvested event, in arrival order.
    func nextEvent() -> PortEvent? { events.popFirst() }

    /// Routes harvested completions and posted messages into `events`. Returns how many
    /// deliverable events it added.
    @discardableResult
    func collect() -> Int {
        let before = events.count
        ring.harvest { completions.append($0) }
        completionCount &+= UInt64(completions.count)
        while let completion = completions.popFirst() {
            route(completion)
        }
        inbox.drain(into: &inboxSpare)
        while let entry = inboxSpare.popFirst() {
            events.append(.message(entry.port, entry.message))
        }
        return events.count - before
    }

    private func route(_ completion: Completion) {
        let tag = completion.tag
        switch tag.kind {
        case .wakeUp:
            if signal.mechanism == .eventFD, !completion.hasMore {
                // The kernel ended the eventfd's multishot poll; arm it again (before the
                // next wait if this fails: until then every wait reports the failure).
                do { try signal.armEventFDPoll(on: ring) } catch { wakeUpNeedsArming = true }
            }
        case .readiness:
            let id = PortID(slot: tag.slot, generation: tag.generation)
            guard isCurrent(id) else { return }
            switch slots[Int(id.slot)].state {
            case .cancelling:
                if !completion.hasMore { releaseSlot(id.slot) }
            case .readiness(let fd, let mask, true):
                if completion.result >= 0 {
                    events.append(.readiness(id, events: Int16(truncatingIfNeeded: completion.result)))
                    if !completion.hasMore { rearm(id, fd: fd, events: mask) }
                } else if completion.result == -ECANCELED {
                    // Cancelled by the kernel, not by us (for example the poll was
                    // pushed out by memory pressure): watch again.
                    rearm(id, fd: fd, events: mask)
                } else {
                    slots[Int(id.slot)].state = .readiness(fd: fd, events: mask, armed: false)
                    events.append(.failure(id, RingError(operation: "poll", negatedErrno: completion.result)))
                }
            default:
                return
            }
        case .cancellation:
            // EALREADY: the poll was running its completion when the removal reached it,
            // and the kernel left it armed. Ask again until it is gone (its final
            // completion, without F_MORE, frees the slot).
            let id = PortID(slot: tag.slot, generation: tag.generation)
            guard completion.result == -EALREADY, isCurrent(id), case .cancelling = slots[Int(id.slot)].state
            else { return }
            do { try submitCancellation(id) } catch { cancellationsToRetry.append(id) }
        case .operation:
            let id = PortID(slot: tag.slot, generation: tag.generation)
            guard isCurrent(id), case .operation = slots[Int(id.slot)].state else { return }
            events.append(.completion(id, result: completion.result, flags: completion.flags))
            if !completion.hasMore { releaseSlot(id.slot) }
        case .messageSent, .close, .failureNotice, nil:
            return
        }
    }

    private func rearm(_ id: PortID, fd: Int32, events mask: UInt32) {
        rearmCount &+= 1
        do {
            try armPoll(id, fd: fd, events: mask)
        } catch {
            slots[Int(id.slot)].state = .readiness(fd: fd, events: mask, armed: false)
            events.append(.failure(id, error))
        }
    }
}
