import CLibURing
import Glibc
import Synchronization

/// How a wake-up reaches a sleeping ring from another thread.
package enum WakeUpMechanism: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `IORING_OP_MSG_RING` sent without a source ring through
    /// `io_uring_register(-1, IORING_REGISTER_SEND_MSG_RING, …)` (kernel 6.13): one
    /// system call for the sender, and the completion lands directly in the loop's ring.
    case messageRing
    /// An eventfd written by the sender, watched by a multishot poll on the loop's ring
    /// (kernel 5.13): the fallback for older kernels.
    case eventFD

    package var description: String { rawValue }
}

/// The loop's wake-up: callable from any thread, coalesced, and free for the sender when
/// the loop is not asleep.
///
/// State (one atomic word, like CFRunLoop's `ignoreWakeUps` plus its wake-up port):
/// - `sleeping`: set by the loop thread just before it enters the kernel to wait,
///   cleared when it comes back.
/// - `pending`: set by ``wakeUp()``; cleared by the loop thread when it wakes or when it
///   notices the flag just before sleeping.
///
/// A sender sets `pending` and makes the system call only when the loop was sleeping
/// and no wake-up was pending already, so any number of wake-ups during one sleep cost
/// one call, and wake-ups while the loop runs cost an atomic OR. The loop sets
/// `sleeping` and then reads `pending` (both sequentially consistent), so a wake-up is
/// never lost: either the loop sees `pending` and does not sleep, or the sender sees
/// `sleeping` and kicks the ring.
///
/// Measured on the development machine (2 cores, kernel 6.18, release build; ringloop
/// bench `wakecore`, three runs): see `WakeUpMechanism` selection in ``WaitCore`` and
/// README's performance section. MSG_RING is chosen where the kernel has it.
package final class WakeUpSignal: Sendable {
    private static let sleepingBit: UInt32 = 1
    private static let pendingBit: UInt32 = 2

    private let state = Atomic<UInt32>(0)
    /// System calls senders made (for tests and benchmarks).
    private let kicks = Atomic<UInt64>(0)

    /// The mechanism (raw value of ``WakeUpMechanism``'s index; 0 until attached) and the
    /// file descriptor the sender uses: a duplicate of the ring's fd for `.messageRing`
    /// (so the ring outlives every sender holding this object), or the eventfd for
    /// `.eventFD`. Written once by ``attach(to:preferred:)`` before the loop first sleeps,
    /// so a sender that sees `sleeping` sees them; closed in deinit.
    private let attachedMechanism = Atomic<UInt8>(0)
    private let attachedDescriptor = Atomic<Int32>(-1)

    /// Creates an unattached wake-up. Until ``attach(to:preferred:)`` the loop never
    /// sleeps, so wake-ups only set the pending flag.
    package init() {}

    /// The mechanism in use, or `nil` before the ring exists.
    var mechanism: WakeUpMechanism? {
        switch attachedMechanism.load(ordering: .acquiring) {
        case 1: .messageRing
        case 2: .eventFD
        default: nil
        }
    }

    /// The descriptor senders use (see ``mechanism``); -1 before attachment.
    package var fileDescriptor: Int32 { attachedDescriptor.load(ordering: .acquiring) }

    /// Binds the wake-up to `ring` (loop thread, once), preferring `preferred` and falling
    /// back to the eventfd when the kernel refuses ringless MSG_RING. Arms what the
    /// mechanism needs.
    func attach(to ring: Ring, preferred: WakeUpMechanism = .messageRing) throws(RingError) {
        precondition(mechanism == nil, "a wake-up is attached to one ring")
        if preferred == .messageRing {
            let duplicate = fcntl(ring.fileDescriptor, F_DUPFD_CLOEXEC, 0)
            guard duplicate >= 0 else { throw RingError(operation: "dup", errno: ringloop_errno()) }
            // Probe with a real kick to ourselves: EINVAL means a kernel before 6.13.
            var sqe = io_uring_sqe()
            io_uring_prep_msg_ring(&sqe, duplicate, 0, CompletionTag(kind: .wakeUp).rawValue, 0)
            if ringloop_send_msg_ring_blind(&sqe) >= 0 {
                attachedDescriptor.store(duplicate, ordering: .releasing)
                attachedMechanism.store(1, ordering: .releasing)
                return
            }
            close(duplicate)
        }
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw RingError(operation: "eventfd", errno: ringloop_errno()) }
        attachedDescriptor.store(fd, ordering: .releasing)
        attachedMechanism.store(2, ordering: .releasing)
        try armEventFDPoll(on: ring)
    }

    deinit {
        let fd = attachedDescriptor.load(ordering: .acquiring)
        if fd >= 0 { close(fd) }
    }

    /// Arms (or re-arms, after the kernel ended it) the eventfd's multishot poll.
    func armEventFDPoll(on ring: Ring) throws(RingError) {
        guard mechanism == .eventFD else { return }
        // Drain the counter so a re-armed poll does not fire at once for old kicks.
        var counter: UInt64 = 0
        _ = read(fileDescriptor, &counter, 8)
        let sqe = try ring.nextSubmission()
        io_uring_prep_poll_multishot(sqe, fileDescriptor, UInt32(POLLIN))
        io_uring_sqe_set_data64(sqe, CompletionTag(kind: .wakeUp).rawValue)
    }

    /// Wakes the loop if it sleeps; otherwise makes sure its next wait returns at once.
    /// Safe from any thread; costs one system call at most per sleep of the loop.
    package func wakeUp() {
        let old = state.bitwiseOr(Self.pendingBit, ordering: .sequentiallyConsistent).oldValue
        guard old & Self.sleepingBit != 0, old & Self.pendingBit == 0 else { return }
        kick()
    }

    private func kick() {
        kicks.add(1, ordering: .relaxed)
        switch mechanism {
        case nil:
            return
        case .messageRing:
            var sqe = io_uring_sqe()
            io_uring_prep_msg_ring(&sqe, fileDescriptor, 0, CompletionTag(kind: .wakeUp).rawValue, 0)
            var result: Int32
            repeat { result = ringloop_send_msg_ring_blind(&sqe) } while result == -EINTR || result == -EAGAIN
        case .eventFD:
            var one: UInt64 = 1
            while write(fileDescriptor, &one, 8) < 0, ringloop_errno() == EINTR {}
        }
    }

    /// Loop thread, just before waiting: announces the sleep. Returns `false` when a
    /// wake-up is already pending, in which case the loop must not block (and the flag
    /// is consumed). Must not be called before ``attach(to:preferred:)``.
    func prepareToSleep() -> Bool {
        let old = state.bitwiseOr(Self.sleepingBit, ordering: .sequentiallyConsistent).oldValue
        if old & Self.pendingBit != 0 {
            state.store(0, ordering: .sequentiallyConsistent)
            return false
        }
        return true
    }

    /// Loop thread, after the wait returned: clears `sleeping` and any pending wake-up.
    /// Whatever a sender did before its wake-up is visible to the loop from here on.
    func didWake() {
        state.store(0, ordering: .sequentiallyConsistent)
    }

    /// Whether a wake-up was requested since the loop last woke (loop thread, while it
    /// polls before sleeping; a sender sets it without a system call then).
    var isPending: Bool { state.load(ordering: .acquiring) & Self.pendingBit != 0 }

    /// Whether the loop thread is inside (or about to enter) its wait.
    var isSleeping: Bool { state.load(ordering: .sequentiallyConsistent) & Self.sleepingBit != 0 }

    /// System calls senders have made so far.
    var kickCount: UInt64 { kicks.load(ordering: .relaxed) }
}
