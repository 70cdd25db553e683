import CLibURing

/// The setup flags an io_uring was created with, probed at creation from the best the
/// kernel accepts.
public struct RingSetupFlags: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `IORING_SETUP_SINGLE_ISSUER` (6.0): only the creating thread submits.
    public static let singleIssuer = RingSetupFlags(rawValue: UInt32(IORING_SETUP_SINGLE_ISSUER))
    /// `IORING_SETUP_DEFER_TASKRUN` (6.1): completion work runs only when this thread
    /// waits, never interrupting it.
    public static let deferTaskrun = RingSetupFlags(rawValue: UInt32(IORING_SETUP_DEFER_TASKRUN))
    /// `IORING_SETUP_COOP_TASKRUN` (5.19): no inter-processor interrupt for completion work.
    public static let coopTaskrun = RingSetupFlags(rawValue: UInt32(IORING_SETUP_COOP_TASKRUN))
    /// `IORING_SETUP_SUBMIT_ALL` (5.18): keep submitting a batch past a failed entry.
    public static let submitAll = RingSetupFlags(rawValue: UInt32(IORING_SETUP_SUBMIT_ALL))
    /// `IORING_SETUP_TASKRUN_FLAG` (5.19): the kernel flags pending completion work in the
    /// shared ring, so a poll that finds nothing pending skips the system call.
    public static let taskrunFlag = RingSetupFlags(rawValue: UInt32(IORING_SETUP_TASKRUN_FLAG))

    /// The combinations tried in order, best first; the first the kernel accepts wins.
    static let probeOrder: [RingSetupFlags] = [
        [.singleIssuer, .deferTaskrun, .taskrunFlag, .submitAll],
        [.singleIssuer, .deferTaskrun, .submitAll],
        [.singleIssuer, .coopTaskrun, .taskrunFlag, .submitAll],
        [.coopTaskrun, .taskrunFlag, .submitAll],
        [.coopTaskrun, .submitAll],
        [.submitAll],
        [],
    ]

    public var description: String {
        var names: [String] = []
        if contains(.singleIssuer) { names.append("SINGLE_ISSUER") }
        if contains(.deferTaskrun) { names.append("DEFER_TASKRUN") }
        if contains(.coopTaskrun) { names.append("COOP_TASKRUN") }
        if contains(.taskrunFlag) { names.append("TASKRUN_FLAG") }
        if contains(.submitAll) { names.append("SUBMIT_ALL") }
        return names.isEmpty ? "none" : names.joined(separator: "|")
    }
}

/// One completion copied out of the completion queue: its tag, result and flags.
///
/// Completions are copied before anything is dispatched, so a callout may run the loop
/// again (a nested run) and harvest the queue without invalidating what it was handed.
package struct Completion: Sendable, Hashable {
    var tag: CompletionTag
    var result: Int32
    var flags: UInt32

    /// Whether the operation stays armed (`IORING_CQE_F_MORE`): a multishot poll that
    /// ends comes without it.
    var hasMore: Bool { flags & UInt32(IORING_CQE_F_MORE) != 0 }
}

/// Failures a test makes the ring's system calls report, as swift-system and swift-nio
/// mock theirs: each call takes the next queued result (a negated errno) instead of
/// entering the kernel. Confined to the ring's thread, like the ring.
final class RingFaults {
    /// The calls that can be made to fail.
    enum Call: Hashable {
        /// `io_uring_enter` handing over submissions (`submit`).
        case submit
        /// `submit` after the kernel took the submissions: the call reaches the kernel,
        /// then reports the failure (what a caller must survive without reusing the
        /// memory the taken entries point at).
        case submitAfterTaking
        /// `io_uring_enter` waiting for completions (`submitAndWait`).
        case wait
        /// `io_uring_get_sqe`: a result queued here makes the submission queue look full.
        case getSubmission
    }

    private var queued: [Call: [Int32]] = [:]
    /// Calls that took an injected result.
    private(set) var injectedCount = 0

    /// Makes the next calls of `call` report `errno` values, in order (`count` times each).
    func fail(_ call: Call, with errnos: Int32..., count: Int = 1) {
        for errno in errnos { queued[call, default: []] += Array(repeating: -errno, count: count) }
    }

    func take(_ call: Call) -> Int32? {
        guard var results = queued[call], !results.isEmpty else { return nil }
        let result = results.removeFirst()
        queued[call] = results
        injectedCount += 1
        return result
    }
}

/// Owns one io_uring: the only type that touches liburing's `struct io_uring`.
///
/// Thread rules: confined to the thread that created it (the ring is set up with
/// `SINGLE_ISSUER` when the kernel has it, so another thread's submit would fail with
/// `EEXIST`). Nothing here is `Sendable`.
package final class Ring {
    /// liburing's ring state; allocated once so its address never moves.
    private let ring: UnsafeMutablePointer<io_uring>
    /// Failures injected by tests (`nil`: every call reaches the kernel).
    var faults: RingFaults?
    /// Scratch array for `io_uring_peek_batch_cqe`.
    private let batch: UnsafeMutablePointer<UnsafeMutablePointer<io_uring_cqe>?>
    private let batchCapacity: UInt32

    /// The flags the kernel accepted.
    let setupFlags: RingSetupFlags
    /// `IORING_FEAT_*` bits the kernel reported.
    let features: UInt32
    /// Submission-queue entries.
    let submissionEntries: UInt32
    /// Completion-queue entries.
    let completionEntries: UInt32
    /// The ring's file descriptor (valid until deinit).
    let fileDescriptor: Int32

    /// Whether `io_uring_register_ring_fd` succeeded, so enters name the ring by its
    /// registered index.
    private let ringFileDescriptorRegistered: Bool
    /// Whether the kernel takes a wait's deadline as an absolute time
    /// (`IORING_ENTER_ABS_TIMER`, 6.12), probed at creation.
    let waitTakesAbsoluteDeadline: Bool

    /// Calls into the kernel made through this ring (submit, wait, get-events).
    private(set) var enterCount: UInt64 = 0
    /// Submission entries handed to the kernel by those calls.
    private(set) var submittedEntryCount: UInt64 = 0

    /// Completions the next wait does not end for: those of operations queued since the
    /// last call into the kernel whose success the kernel posts as it takes them, while
    /// their failure posts a second completion (``WaitCore/startOperationEndingWaitOnFailure(_:)``).
    /// The wait waits for that many more completions than one. Back to zero at every call
    /// into the kernel. It never counts more than the call posts: each such operation
    /// posts its completion within the call that submits it, and a call that submits only
    /// some of the queue does not wait.
    var completionsAtSubmission: UInt32 = 0

    /// Creates a ring with `entries` submission entries (a power of two is used) and
    /// four times as many completion entries.
    package init(entries: UInt32 = 256) throws(RingError) {
        let ring = UnsafeMutablePointer<io_uring>.allocate(capacity: 1)
        ring.initialize(to: io_uring())
        var accepted: RingSetupFlags?
        var params = io_uring_params()
        var lastResult: Int32 = -EINVAL
        for candidate in RingSetupFlags.probeOrder {
            params = io_uring_params()
            params.flags = candidate.rawValue | UInt32(IORING_SETUP_CQSIZE)
            params.cq_entries = entries * 4
            lastResult = io_uring_queue_init_params(entries, ring, &params)
            if lastResult == 0 {
                accepted = candidate
                break
            }
            // Only an unknown flag is worth another try; anything else (ENOMEM, EPERM,
            // ENOSYS under seccomp) fails the same way without it.
            if lastResult != -EINVAL { break }
        }
        guard let accepted else {
            ring.deallocate()
            throw RingError(operation: "io_uring_queue_init_params", negatedErrno: lastResult)
        }
        self.ring = ring
        self.setupFlags = accepted
        self.features = params.features
        self.submissionEntries = params.sq_entries
        self.completionEntries = params.cq_entries
        self.fileDescriptor = ring.pointee.ring_fd
        self.batchCapacity = params.cq_entries
        self.batch = .allocate(capacity: Int(params.cq_entries))
        // Saves the kernel a file-table lookup per enter; optional, so a failure is ignored.
        let registered = io_uring_register_ring_fd(ring) == 1
        self.ringFileDescriptorRegistered = registered
        // Absolute deadlines (6.12): a wait until a time already past returns at once,
        // with ETIME where the kernel knows the flag and EINVAL where it does not.
        var past = __kernel_timespec(tv_sec: 0, tv_nsec: 0)
        let probe =
            params.features & UInt32(IORING_FEAT_EXT_ARG) != 0
            ? ringloop_submit_and_wait_until(ring, &past, registered ? 1 : 0, 1) : -EINVAL
        self.waitTakesAbsoluteDeadline = probe != -EINVAL
    }

    /// Whether ``close()`` has closed the ring.
    private(set) var isClosed = false

    /// Closes the ring now, which cancels every operation still in flight; nothing may be
    /// submitted after. For a loop whose thread ends while something still holds the ring.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        io_uring_queue_exit(ring)
    }

    deinit {
        // Closing the ring cancels every operation still in flight.
        if !isClosed { io_uring_queue_exit(ring) }
        ring.deallocate()
        batch.deallocate()
    }

    /// Whether the kernel takes a wait's timeout in the enter call itself
    /// (`IORING_FEAT_EXT_ARG`, 5.11), so a timed wait costs no submission entry.
    var waitTakesTimeout: Bool { features & UInt32(IORING_FEAT_EXT_ARG) != 0 }

    /// Returns a free submission entry, handing the queued ones to the kernel first when
    /// the submission queue is full. The caller fills it in before the next call.
    package func nextSubmission() throws(RingError) -> UnsafeMutablePointer<io_uring_sqe> {
        if faults?.take(.getSubmission) == nil, let sqe = io_uring_get_sqe(ring) { return sqe }
        try submit()
        if faults?.take(.getSubmission) == nil, let sqe = io_uring_get_sqe(ring) { return sqe }
        throw RingError(operation: "io_uring_get_sqe", errno: EBUSY)
    }

    /// Hands every queued submission to the kernel and collects finished work
    /// (`IORING_ENTER_GETEVENTS`) without waiting.
    package func submit() throws(RingError) {
        enterCount &+= 1
        completionsAtSubmission = 0
        submittedEntryCount &+= UInt64(io_uring_sq_ready(ring))
        var result: Int32
        repeat {
            result = faults?.take(.submit) ?? io_uring_submit_and_get_events(ring)
            if result >= 0, let injected = faults?.take(.submitAfterTaking) { result = injected }
        } while result == -EINTR
        if result < 0 { throw RingError(operation: "io_uring_submit", negatedErrno: result) }
    }

    /// Hands queued submissions to the kernel and collects finished work, but only when
    /// there is something to hand over or the kernel flagged pending completion work
    /// (`IORING_SQ_TASKRUN`, `IORING_SQ_CQ_OVERFLOW`). Without the task-run flag every
    /// call enters the kernel. Returns whether it entered.
    @discardableResult
    func submitIfNeeded() throws(RingError) -> Bool {
        if setupFlags.contains(.taskrunFlag), io_uring_sq_ready(ring) == 0,
            ringloop_sq_flags(ring) & UInt32(IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW) == 0
        {
            return false
        }
        try submit()
        return true
    }

    /// Whether submissions wait in the queue, not yet handed to the kernel.
    var hasQueuedSubmissions: Bool { io_uring_sq_ready(ring) > 0 }

    /// Submission entries free in the queue.
    var freeSubmissionCount: Int { Int(io_uring_sq_space_left(ring)) }

    /// Submissions waiting in the queue, not yet handed to the kernel.
    var queuedSubmissionCount: Int { Int(io_uring_sq_ready(ring)) }

    /// Whether the kernel has something for this ring that a poll would collect: a
    /// completion in the queue, or completion work waiting for this thread (flagged in
    /// the shared ring with `IORING_SETUP_TASKRUN_FLAG`). Reads shared memory only.
    var hasPendingCompletions: Bool {
        io_uring_cq_ready(ring) > 0
            || ringloop_sq_flags(ring) & UInt32(IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW) != 0
    }

    /// Submits what is queued and sleeps until at least one completion is ready (besides
    /// those of ``completionsAtSubmission``) or `deadline` passes. Returns `false` when it
    /// returned because of the deadline.
    ///
    /// The deadline travels in the enter call itself where the kernel supports it, so
    /// no timeout entry is spent per wait. A signal interrupting the wait counts as a
    /// (spurious) wake, as in `mach_msg`.
    func submitAndWait(until deadline: MonotonicInstant) throws(RingError) -> Bool {
        enterCount &+= 1
        let submitting = UInt64(io_uring_sq_ready(ring))
        submittedEntryCount &+= submitting
        let completions = 1 + completionsAtSubmission
        completionsAtSubmission = 0
        var cqe: UnsafeMutablePointer<io_uring_cqe>?
        let result: Int32
        if let injected = faults?.take(.wait) {
            result = injected
        } else if deadline == .distantFuture {
            result = io_uring_submit_and_wait(ring, completions)
        } else if waitTakesAbsoluteDeadline {
            // The kernel arms its timer for the deadline itself: no clock read here, and
            // the time spent entering the kernel does not push the wake-up back.
            var until = __kernel_timespec(
                tv_sec: Int64(deadline.nanoseconds / 1_000_000_000),
                tv_nsec: Int64(deadline.nanoseconds % 1_000_000_000))
            result = ringloop_submit_and_wait_until(ring, &until, ringFileDescriptorRegistered ? 1 : 0, completions)
        } else {
            let now = MonotonicInstant.now
            let remaining = deadline.nanoseconds > now.nanoseconds ? deadline.nanoseconds - now.nanoseconds : 0
            if remaining == 0 {
                enterCount &-= 1
                submittedEntryCount &-= submitting
                try submit()
                return io_uring_cq_ready(ring) > 0
            }
            var timeout = __kernel_timespec(
                tv_sec: Int64(remaining / 1_000_000_000), tv_nsec: Int64(remaining % 1_000_000_000))
            result = io_uring_submit_and_wait_timeout(ring, &cqe, completions, &timeout, nil)
        }
        if result >= 0 || result == -EINTR { return true }
        if result == -ETIME { return io_uring_cq_ready(ring) > 0 }
        throw RingError(operation: "io_uring_submit_and_wait", negatedErrno: result)
    }

    /// Copies every completion that is ready into `sink`, in arrival order, and releases
    /// their queue entries. Returns how many it copied. Shared memory only: completion
    /// work the kernel flagged meanwhile runs at the next submit or wait, all of it at once.
    @discardableResult
    package func harvest(_ sink: (Completion) -> Void) -> Int {
        var total = 0
        while true {
            let count = ringloop_peek_ready_completions(ring, batch, batchCapacity)
            if count == 0 { return total }
            for index in 0..<Int(count) {
                let cqe = batch[index]!.pointee
                sink(Completion(tag: CompletionTag(rawValue: cqe.user_data), result: cqe.res, flags: cqe.flags))
            }
            io_uring_cq_advance(ring, count)
            total += Int(count)
        }
    }

    /// Registers a provided-buffer ring of `entries` slots at `memory` (page aligned) as
    /// buffer group `group` (`io_uring_register_buf_ring`, kernel 5.19).
    func registerBufferRing(
        _ memory: UnsafeMutablePointer<io_uring_buf_ring>, entries: UInt32, group: UInt16
    ) throws(RingError) {
        var registration = io_uring_buf_reg()
        registration.ring_addr = UInt64(UInt(bitPattern: memory))
        registration.ring_entries = entries
        registration.bgid = group
        let result = io_uring_register_buf_ring(ring, &registration, 0)
        if result < 0 { throw RingError(operation: "io_uring_register_buf_ring", negatedErrno: result) }
    }

    /// Unregisters buffer group `group`; the kernel takes no more buffers from it.
    func unregisterBufferRing(group: UInt16) {
        guard !isClosed else { return }
        _ = io_uring_unregister_buf_ring(ring, Int32(group))
    }

    var debugDescription: String {
        "io_uring fd \(fileDescriptor): \(submissionEntries) SQ / \(completionEntries) CQ entries, setup \(setupFlags)"
            + (waitTakesAbsoluteDeadline
                ? ", absolute-deadline waits" : waitTakesTimeout ? ", EXT_ARG waits" : ", timeout-SQE waits")
    }
}
