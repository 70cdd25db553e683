import CLibURing

// Operations whose success need not end the loop's wait, sent with it.
extension WaitCore {
    /// Names the call into the kernel that hands over the entries queued now: the ring's
    /// count of calls when they were queued.
    struct SubmissionTicket: Sendable {
        fileprivate let call: UInt64
    }

    /// Starts an operation the kernel finishes as it takes it — a send with
    /// `MSG_DONTWAIT`, neither waited on nor handed to a worker — so that the wait that
    /// submits it does not end for its success alone: a reply and the wait for the next
    /// request are one call into the kernel. Its failure ends that wait: the operation is
    /// linked (`IOSQE_IO_LINK`) to a no-op that posts nothing when it runs
    /// (`IOSQE_CQE_SKIP_SUCCESS`) and is cancelled when the operation fails, posting
    /// `-ECANCELED` — a second completion, which the wait counts
    /// (``Ring/completionsAtSubmission``). Either way the operation's own completion
    /// comes, and is performed with the loop's next wake.
    ///
    /// Returns the operation and the ticket ``needCompletion(of:)`` takes, or no ticket
    /// when the pair could not be queued together (then the operation's completion ends
    /// the wait, as any other's).
    func startOperationEndingWaitOnFailure(
        _ prepare: (UnsafeMutablePointer<io_uring_sqe>) -> Void
    ) throws(RingError) -> (id: PortID, ticket: SubmissionTicket?) {
        // The pair goes to the kernel in one call: a link cut at the end of a call would
        // leave the operation without its notice.
        if ring.freeSubmissionCount < 2 { try ring.submit() }
        var operationEntry: UnsafeMutablePointer<io_uring_sqe>?
        let id = try startOperation { sqe in
            prepare(sqe)
            operationEntry = sqe
        }
        guard ring.freeSubmissionCount >= 1, let operationEntry, let notice = try? ring.nextSubmission() else {
            return (id, nil)
        }
        operationEntry.pointee.flags |= UInt8(1 << IOSQE_IO_LINK_BIT)
        io_uring_prep_nop(notice)
        notice.pointee.flags |= UInt8(1 << IOSQE_CQE_SKIP_SUCCESS_BIT)
        io_uring_sqe_set_data64(notice, CompletionTag(kind: .failureNotice).rawValue)
        ring.completionsAtSubmission += 1
        return (id, SubmissionTicket(call: ring.enterCount))
    }

    /// The operation of `ticket` is to end the wait after all (something now waits for
    /// its completion): while it is still queued, the wait that submits it counts it
    /// again. Nothing once it has gone to the kernel (its completion then has been, or
    /// will be, harvested like any other).
    func needCompletion(of ticket: SubmissionTicket) {
        guard ring.enterCount == ticket.call, ring.completionsAtSubmission > 0 else { return }
        ring.completionsAtSubmission -= 1
    }
}
