import CLibURing
import CThreads
import DequeModule

// The wait core's ports: slots, readiness polls, removal and cancellation.
extension WaitCore {
    // MARK: Ports

    func allocateSlot(_ state: SlotState) -> PortID {
        if let slot = freeSlots.popLast() {
            slots[Int(slot)].state = state
            return PortID(slot: slot, generation: slots[Int(slot)].generation)
        }
        slots.append(Slot(generation: 0, state: state))
        return PortID(slot: UInt32(slots.count - 1), generation: 0)
    }

    func releaseSlot(_ slot: UInt32) {
        slots[Int(slot)].state = .free
        slots[Int(slot)].generation = (slots[Int(slot)].generation &+ 1) & CompletionTag.generationMask
        freeSlots.append(slot)
    }

    func isCurrent(_ id: PortID) -> Bool {
        Int(id.slot) < slots.count && slots[Int(id.slot)].generation == id.generation
    }

    func armPoll(_ id: PortID, fd: Int32, events: UInt32) throws(RingError) {
        let sqe = try ring.nextSubmission()
        io_uring_prep_poll_multishot(sqe, fd, events)
        io_uring_sqe_set_data64(sqe, CompletionTag(kind: .readiness, slot: id.slot, generation: id.generation).rawValue)
    }

    /// Watches `fd` for `events` (a `poll` mask such as `POLLIN`) with a multishot poll,
    /// re-armed whenever the kernel ends it. The wait core does not own `fd`: remove the
    /// port before closing it.
    func addReadinessPort(fd: Int32, events: Int16 = Int16(POLLIN)) throws(RingError) -> PortID {
        let mask = UInt32(UInt16(bitPattern: events))
        let id = allocateSlot(.readiness(fd: fd, events: mask, armed: true))
        do {
            try armPoll(id, fd: fd, events: mask)
        } catch {
            releaseSlot(id.slot)
            throw error
        }
        return id
    }

    /// Removes a port: nothing more is delivered for it, events already harvested for it
    /// included. A readiness port's poll is cancelled; its slot is reused only after
    /// the kernel confirms, so no late completion can reach another port.
    func removePort(_ id: PortID) throws(RingError) {
        guard isCurrent(id) else { return }
        switch slots[Int(id.slot)].state {
        case .free, .cancelling:
            return
        case .operation:
            try cancelOperation(id)
            return
        case .readiness(_, _, let armed):
            guard armed else {
                releaseSlot(id.slot)
                return
            }
            slots[Int(id.slot)].state = .cancelling
            do {
                try submitCancellation(id)
            } catch {
                // The slot stays "cancelling"; the removal is asked again before the next
                // wait (which reports the failure until it goes through).
                cancellationsToRetry.append(id)
                events.removeAll { $0.port == id }
                throw error
            }
            // Hand the cancellation to the kernel now rather than at the next wait: until
            // it runs, the poll holds a reference to the file, and a caller that closes
            // the descriptor next expects the file to be released (a FUSE or device node
            // stays open otherwise, possibly for good if the loop never runs again).
            try ring.submit()
        }
        events.removeAll { $0.port == id }
    }

    func submitCancellation(_ id: PortID) throws(RingError) {
        let sqe = try ring.nextSubmission()
        io_uring_prep_poll_remove(
            sqe, CompletionTag(kind: .readiness, slot: id.slot, generation: id.generation).rawValue)
        io_uring_sqe_set_data64(
            sqe, CompletionTag(kind: .cancellation, slot: id.slot, generation: id.generation).rawValue)
    }
}
