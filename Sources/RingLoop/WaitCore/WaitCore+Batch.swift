import CLibURing

// Several operations the kernel finishes as it takes them, submitted together.
extension WaitCore {
    /// Submits `count` operations together and returns each one's result, in order: for
    /// operations the kernel finishes as it takes them (sends with `MSG_DONTWAIT`), one
    /// call into the kernel for all of them, their submissions and completions together
    /// (``performAtOnce(until:_:)`` for many). `prepare` fills in the entry of operation
    /// `index` (everything but its user data); memory the entries point at need only stay
    /// valid for the call: it returns once the kernel is done with every one it took.
    ///
    /// Each result is the kernel's (a count, or `-errno`), or the error that kept the
    /// operation from the kernel: an entry the kernel did not take (its call failed
    /// first, or the submission queue had no room) is made a no-op, so it never runs
    /// later, and fails with that call's error; one it took before its call failed is
    /// waited for like the others. Should the kernel not finish one at once, this waits
    /// in the kernel until `deadline`, then cancels every one still running and waits
    /// for their final completions (`-ECANCELED` when they did not finish first). Other
    /// completions harvested meanwhile stay queued for the loop's next pass.
    func performAllAtOnce(
        _ count: Int, until deadline: MonotonicInstant,
        _ prepare: (_ index: Int, _ entry: UnsafeMutablePointer<io_uring_sqe>) -> Void
    ) -> [Result<Int32, RingError>] {
        guard count > 0 else { return [] }
        // Undone work first: the operations are then the last entries queued, so entries
        // still queued after a failed call are the last of theirs.
        do { try finishUndoneWork() } catch { return Array(repeating: .failure(error), count: count) }
        var results = [Result<Int32, RingError>?](repeating: nil, count: count)
        var ids: [PortID] = []
        var entries: [UnsafeMutablePointer<io_uring_sqe>] = []
        ids.reserveCapacity(count)
        entries.reserveCapacity(count)
        var refusal: RingError?
        for index in 0..<count {
            do {
                // (A full submission queue is handed to the kernel here, by the ring.)
                let id = try startOperation { sqe in
                    entries.append(sqe)
                    prepare(index, sqe)
                }
                ids.append(id)
            } catch {
                refusal = error
                break
            }
        }
        if refusal == nil {
            do { try retryingWhenBusy { () throws(RingError) in try ring.submit() } } catch { refusal = error }
        }
        var taken = ids.count
        if let refusal {
            // The kernel takes entries in order: those still queued are the last ones.
            let untaken = min(ring.queuedSubmissionCount, entries.count)
            taken = entries.count - untaken
            for position in taken..<entries.count {
                let entry = entries[position]
                let tag = entry.pointee.user_data
                io_uring_prep_nop(entry)
                io_uring_sqe_set_data64(entry, tag)
                results[position] = .failure(refusal)
            }
            for position in entries.count..<count { results[position] = .failure(refusal) }
        }
        var waiting: [PortID: Int] = [:]
        waiting.reserveCapacity(taken)
        for position in 0..<taken { waiting[ids[position]] = position }
        var cancelled = false
        while !waiting.isEmpty {
            collect()
            events.removeAll { event in
                guard case .completion(let id, let result, let flags) = event, let position = waiting[id] else {
                    return false
                }
                if results[position] == nil { results[position] = .success(result) }
                if flags & UInt32(IORING_CQE_F_MORE) == 0 { waiting[id] = nil }
                return true
            }
            if waiting.isEmpty { break }
            if !cancelled, MonotonicInstant.now >= deadline {
                cancelled = true
                // (A failure to ask leaves the wait below to end with the operations.)
                for id in waiting.keys { try? cancelOperation(id) }
            }
            // The kernel has the submissions: the caller's memory must outlive them, so
            // this waits for their completions whatever fails meanwhile.
            _ = try? ring.submitAndWait(until: cancelled ? .distantFuture : deadline)
        }
        return results.map { $0! }
    }
}
