import CLibURing

// I/O operations on the wait core's ring: one slot per operation in flight, freed by its
// final completion; provided-buffer rings for multishot receives.
extension WaitCore {
    /// Starts an I/O operation: `prepare` fills in a submission entry (everything but its
    /// user data). The operation's completions arrive as ``PortEvent/completion(_:result:flags:)``
    /// for the returned id until one comes without `IORING_CQE_F_MORE`; memory the entry
    /// points at must stay valid until then.
    func startOperation(_ prepare: (UnsafeMutablePointer<io_uring_sqe>) -> Void) throws(RingError) -> PortID {
        let sqe = try ring.nextSubmission()
        let id = allocateSlot(.operation)
        prepare(sqe)
        io_uring_sqe_set_data64(sqe, CompletionTag(kind: .operation, slot: id.slot, generation: id.generation).rawValue)
        return id
    }

    /// Asks the kernel to cancel an operation. Its final completion still arrives (with
    /// `-ECANCELED`, or its result when it finished first).
    func cancelOperation(_ id: PortID) throws(RingError) {
        guard isCurrent(id), case .operation = slots[Int(id.slot)].state else { return }
        let sqe = try ring.nextSubmission()
        io_uring_prep_cancel64(sqe, CompletionTag(kind: .operation, slot: id.slot, generation: id.generation).rawValue, 0)
        io_uring_sqe_set_data64(
            sqe, CompletionTag(kind: .cancellation, slot: id.slot, generation: id.generation).rawValue)
    }

    /// Lends a provided-buffer ring with a buffer group id of its own: one a closed
    /// operation left in the pool, or a new one.
    func makeProvidedBuffers(count: Int, size: Int) throws(RingError) -> ProvidedBuffers {
        try bufferRings.lend(count: count, size: size)
    }

    /// Closes `descriptor` through the ring (`IORING_OP_CLOSE`), done by one of the
    /// kernel's workers (`IOSQE_ASYNC`), so the work of closing — a TCP socket's shutdown,
    /// its memory freed — is not done on the loop's thread. Submitted at once: a loop whose
    /// mode has nothing left may not wait again soon. Returns false, having done nothing,
    /// when the ring has no submission entry for it or refuses the submission.
    func closeAsynchronously(_ descriptor: Int32) -> Bool {
        let sqe: UnsafeMutablePointer<io_uring_sqe>
        do { sqe = try ring.nextSubmission() } catch { return false }
        io_uring_prep_close(sqe, descriptor)
        sqe.pointee.flags |= UInt8(1 << IOSQE_ASYNC_BIT)
        io_uring_sqe_set_data64(sqe, CompletionTag(kind: .close).rawValue)
        do { try ring.submit() } catch {
            // Still queued: made a no-op, so the caller's close is the only one.
            io_uring_prep_nop(sqe)
            io_uring_sqe_set_data64(sqe, CompletionTag(kind: .close).rawValue)
            return false
        }
        return true
    }
}
