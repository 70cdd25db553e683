import CLibURing
import Glibc
import SystemPackage

// Completions of I/O operations: routing each to its operation, performing them as
// callouts of the channel's source, re-arming multishot operations.
extension RingRunLoop {
    /// Routes one completion of the wait core to its operation (loop thread).
    func routeIO(_ id: PortID, result: Int32, flags: UInt32) {
        guard let record = io.operations[id] else { return }
        let kernelDone = flags & UInt32(IORING_CQE_F_MORE) == 0
        if kernelDone { io.operations.remove(id) }
        if record.isFlush {
            return record.channel.flushCompleted(record, result: result)
        }
        if record.backingOff { return backOffEnded(record, result: result) }
        let bufferID = ProvidedBuffers.bufferID(of: flags)
        if let bufferID { record.provided?.taken(bufferID) }
        if record.operation.kind == .accept, result < 0, Self.acceptCanRecover(-result), !record.cancelled,
            let backoff = record.acceptBackoff
        {
            return backOff(record, for: backoff, after: -result)
        }
        switch record.operation.kind {
        case .receive, .accept, .readStream:
            if result > 0 || (result == 0 && record.operation.kind == .accept) {
                let outcome: IOCompletion.Outcome =
                    record.operation.kind == .accept ? .accepted(FileDescriptor(rawValue: result)) : .bytes([])
                let received = bufferID.map { (id: $0, count: Int(result)) }
                queueIO(PendingIO(record: record, outcome: outcome, received: received, isFinal: false))
                guard kernelDone else { return }
                // The kernel ended a multishot operation that did not fail (its queue
                // overflowed, for one): arm it again unless it was cancelled.
                if record.cancelled {
                    endIO(record, with: .failed(.cancelled))
                } else if let failure = record.rearm(self) {
                    endIO(record, with: .failed(failure))
                }
            } else if result == 0 {
                endIO(record, with: .endOfFile)
            } else if result == -ENOBUFS, !record.cancelled {
                // Every buffer waits for a callout: the data stays in the socket until one
                // comes back (see `deliverIO`).
                record.phase = .waitingForBuffers
                if record.provided?.outstanding == 0, let failure = record.rearm(self) {
                    record.phase = .inFlight
                    endIO(record, with: .failed(failure))
                } else if record.provided?.outstanding == 0 {
                    record.phase = .inFlight
                }
            } else {
                endIO(record, with: .failed(IOFailure(errno: result == -ENOBUFS ? ECANCELED : -result)))
            }
        case .read:
            guard result >= 0 else { return endIO(record, with: .failed(IOFailure(errno: -result))) }
            if result == 0 { return endIO(record, with: .endOfFile) }
            let bytes = Array(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(record.buffer!)[..<Int(result)]))
            endIO(record, with: .bytes(bytes))
        case .write, .send:
            endIO(record, with: result >= 0 ? .transferred(Int(result)) : .failed(IOFailure(errno: -result)))
        case .connect:
            endIO(record, with: result >= 0 ? .connected : .failed(IOFailure(errno: -result)))
        }
    }

    /// Whether an accept that failed with `errno` may succeed later: the process or the
    /// system ran out of descriptors (`EMFILE`, `ENFILE`) or memory (`ENOBUFS`, `ENOMEM`).
    static func acceptCanRecover(_ errno: Int32) -> Bool {
        errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM
    }

    /// Tells the channel its accept stopped for want of resources (a completion that is
    /// not final) and arms it again after `backoff`, as swift-nio's `acceptBackoff`: the
    /// connections wait in the listen queue meanwhile.
    private func backOff(_ record: IORecord, for backoff: Duration, after errno: Int32) {
        queueIO(PendingIO(record: record, outcome: .failed(IOFailure(errno: errno)), received: nil, isFinal: false))
        guard let core else { return endIO(record, with: .failed(.closed)) }
        let timeout = record.backoffTimeout()
        timeout.pointee = __kernel_timespec(
            tv_sec: backoff.components.seconds, tv_nsec: backoff.components.attoseconds / 1_000_000_000)
        do {
            record.port = try core.startOperation { io_uring_prep_timeout($0, timeout, 0, 0) }
        } catch {
            return endIO(record, with: .failed(IOFailure(error)))
        }
        record.phase = .backingOff
        io.operations.insert(record)
    }

    /// An accept's back-off timeout completed (`ETIME`), or was cancelled.
    private func backOffEnded(_ record: IORecord, result: Int32) {
        record.phase = .inFlight
        if record.cancelled || (result < 0 && result != -ETIME) {
            endIO(record, with: .failed(record.cancelled ? .cancelled : IOFailure(errno: -result)))
        } else if let failure = record.rearm(self) {
            endIO(record, with: .failed(failure))
        }
    }

    /// Hands queued submissions (cancellations) to the kernel and routes what completes
    /// at once, without sleeping, until `done` holds (a few rounds at most): a channel
    /// closed in a callout releases its descriptor now, not at the loop's next wait.
    func flushIO(until done: () -> Bool) {
        guard let core else { return }
        for _ in 0..<4 where !done() {
            do { try core.poll() } catch { return }
            while let event = core.nextEvent() { route(event) }
        }
    }

    /// Breaks the cycles between operations in flight and their channels when the loop
    /// goes away with its thread (after the ring is closed).
    func dropIOOperations() {
        var channels: [ObjectIdentifier: LoopIOChannel] = [:]
        for record in io.operations.records { channels[ObjectIdentifier(record.channel)] = record.channel }
        for case .completion(_, let pending) in pendingPortEvents + keptPortEvents {
            channels[ObjectIdentifier(pending.record.channel)] = pending.record.channel
        }
        for channel in io.busyChannels.values { channels[ObjectIdentifier(channel)] = channel }
        io.operations.removeAll()
        io.busyChannels = [:]
        for channel in channels.values {
            channel.inFlight = [:]
            channel.writeQueue.writes = []
            channel.writeQueue.flushing = nil
            channel.writeQueue.spareFlush = nil
        }
    }

    /// Queues the operation's final completion; the kernel is done with it.
    func endIO(_ record: IORecord, with outcome: IOCompletion.Outcome) {
        guard record.phase != .ended else { return }
        record.phase = .ended
        record.channel.finished(record)
        // A receive's buffer a send wrote from goes back once the kernel is done with it.
        if !record.inKernel { record.channel.releaseLent(record) }
        queueIO(PendingIO(record: record, outcome: outcome, received: nil, isFinal: true))
    }

    func queueIO(_ pending: PendingIO) {
        // A closed channel's completions have no one to go to: their buffers go back now
        // rather than when the loop next delivers (which may be never).
        guard pending.record.channel.source.isValid else { return deliverIO(pending, deliver: false) }
        pendingPortEvents.append(.completion(pending.record.channel.source, pending))
    }

    /// Performs one routed completion as a callout of its channel's source, then gives a
    /// provided buffer back to the kernel (and re-arms a receive that ran out of them).
    func deliverIO(_ pending: PendingIO, deliver: Bool) {
        let record = pending.record
        let channel = record.channel
        if let writable = pending.writability {
            if deliver, let handler = channel.writabilityCallback {
                Callout.tracked(calloutProbe, .port, channel.source) { Callout.toSource1Perform { handler(channel, writable) } }
            }
            return
        }
        var outcome = pending.outcome
        if let received = pending.received, let provided = record.provided {
            if deliver, let take = record.bytesHandler {
                // In place, without a copy or an allocation.
                let bytes = ReceivedBytes(buffers: provided, id: received.id, count: received.count, receiver: channel)
                Callout.tracked(calloutProbe, .port, channel.source) { Callout.toSource1Perform { take(channel, bytes) } }
                channel.returnBuffer(provided, received.id)
                return
            }
            if deliver { outcome = .bytes(Array(provided.bytes(received.id, length: received.count))) }
            channel.returnBuffer(provided, received.id)
        }
        if deliver, let handler = record.completion ?? channel.handler {
            let completion = IOCompletion(
                operation: record.operation, outcome: outcome, requested: record.requested, isFinal: pending.isFinal)
            Callout.tracked(calloutProbe, .port, channel.source) { Callout.toSource1Perform { handler(channel, completion) } }
        }
        rearmIfWaiting(record)
    }

    /// Arms a multishot operation again that stopped because every buffer waited for a
    /// callout, now that one came back.
    func rearmIfWaiting(_ record: IORecord) {
        if record.phase == .waitingForBuffers {
            record.phase = .inFlight
            if record.cancelled {
                endIO(record, with: .failed(.cancelled))
            } else if let failure = record.rearm(self) {
                endIO(record, with: .failed(failure))
            }
        }
    }
}
