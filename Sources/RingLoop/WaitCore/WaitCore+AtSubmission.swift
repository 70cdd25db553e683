// Entries whose completion the kernel posts as it takes them, sent with the loop's wait.
extension WaitCore {
    /// Names the call into the kernel that hands over the entries queued now: the ring's
    /// count of calls when they were queued.
    struct SubmissionTicket: Sendable {
        fileprivate let call: UInt64
    }

    /// Notes that the entry just queued is finished by the kernel as it takes it (a send
    /// with `MSG_DONTWAIT`: neither waited on nor handed to a worker), its completion
    /// posted then, so the wait that submits it does not end for that completion alone
    /// (``Ring/completionsAtSubmission``): a reply and the wait for the next request are
    /// one call into the kernel. Returns the ticket ``needCompletion(of:)`` takes.
    func expectCompletionAtSubmission() -> SubmissionTicket {
        ring.completionsAtSubmission += 1
        return SubmissionTicket(call: ring.enterCount)
    }

    /// The entry of `ticket` is to end the wait after all (something now waits for its
    /// completion): while it is still queued, the wait that submits it counts it again.
    /// Nothing once it has gone to the kernel (its completion then has been, or will be,
    /// harvested like any other).
    func needCompletion(of ticket: SubmissionTicket) {
        guard ring.enterCount == ticket.call, ring.completionsAtSubmission > 0 else { return }
        ring.completionsAtSubmission -= 1
    }
}
