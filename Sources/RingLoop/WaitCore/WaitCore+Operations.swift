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

}
