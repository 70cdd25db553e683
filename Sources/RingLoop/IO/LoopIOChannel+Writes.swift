import CLibURing
import DequeModule
import Glibc

/// When a stream channel's write queue makes it unwritable and writable again (swift-nio's
/// `WriteBufferWaterMark`): unwritable once more than `high` bytes wait to be written,
/// writable again once fewer than `low` do (or none).
public struct WriteBufferWaterMark: Sendable, Hashable {
    /// Writable again below this many bytes queued.
    public let low: Int
    /// Unwritable above this many bytes queued.
    public let high: Int

    /// Marks at `low` and `high` bytes; `low` must be at most `high`, and neither negative.
    public init(low: Int, high: Int) {
        precondition(low >= 0 && low <= high, "a write buffer water mark needs 0 <= low <= high, not \(low) and \(high)")
        self.low = low
        self.high = high
    }

    /// 32 KiB and 64 KiB, as swift-nio's.
    public static let standard = WriteBufferWaterMark(low: 32 * 1024, high: 64 * 1024)
}

/// How a channel's writes without an offset go out, found at its first write.
enum WriteMode {
    /// Not looked at yet.
    case unknown
    /// A `SOCK_STREAM` socket: queued, `send` / `sendmsg`, several writes in one submission.
    case streamSocket
    /// A pipe, FIFO, terminal, character device or file: queued, `write` / `writev`.
    case stream
    /// A datagram or sequenced-packet socket: each send one message, submitted as given.
    case messages

    /// The mode of `descriptor` (a failure to look is left to the write to report).
    static func of(_ descriptor: Int32) -> WriteMode {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return .stream }
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { return .stream }
        return type == Int32(SOCK_STREAM.rawValue) ? .streamSocket : .messages
    }
}

/// A stream channel's pending writes, in order (swift-nio's `PendingWritesManager`): one
/// submission in flight at a time, continued after a partial write. Loop thread only.
struct WriteQueue {
    /// Writes not completely written yet, the oldest first.
    var writes: Deque<IORecord> = []
    /// Bytes of `writes` not yet written.
    var queuedBytes = 0
    /// The submission in the kernel: writing the queue's head, or waiting for room.
    var flushing: IORecord?
    var isWritable = true
    var mark = WriteBufferWaterMark.standard
    /// A write failed: the stream is broken, every later write fails the same way.
    var failure: IOFailure?
    /// ``LoopIOChannel/closeAfterWrites()`` was called.
    var closeWhenWritten = false
    /// Receive buffers kept from the kernel while the channel is unwritable
    /// (``LoopIOChannel/pausesReceivingWhileUnwritable``).
    var heldBuffers: [LentBuffer] = []
    /// Async senders waiting for the channel to become writable (`nil`) or fail.
    var waiters: [@Sendable (IOFailure?) -> Void] = []
    /// The array of the last flush's writes, emptied, for the next flush.
    var spareBatch: [IORecord] = []
    /// The last flush's record, done with, for the next flush: kept only while the channel
    /// has operations in flight (which keep it alive anyway), as it refers to the channel.
    var spareFlush: IORecord?
    /// Room for a flush's `iovec`s and `msghdr`, allocated at the first batched flush.
    var vectors: UnsafeMutablePointer<iovec>?
    var message: UnsafeMutablePointer<msghdr>?

    /// Writes gathered in one submission at most.
    static let batchLimit = 64

    func deallocate() {
        vectors?.deallocate()
        message?.deallocate()
    }
}

extension LoopIOChannel {
    /// Queues `count` bytes at `bytes` (held by `buffer` or `lent`) behind the channel's
    /// earlier writes.
    func enqueueWrite(
        _ kind: IOOperation.Kind, bytes: UnsafeRawPointer?, count: Int, buffer: UnsafeMutableRawBufferPointer?,
        lent: LentBuffer?, completion: Handler?
    ) throws(IOFailure) -> IOOperation {
        loop.preconditionOnLoopThread("LoopIOChannel.\(kind)")
        func refuse(_ failure: IOFailure) -> IOFailure {
            buffer?.deallocate()
            if let lent { lent.receiver.returnBuffer(lent.buffers, lent.id) }
            return failure
        }
        guard !closing, !writeQueue.closeWhenWritten, source.isValid else { throw refuse(.closed) }
        if let failure = writeQueue.failure { throw refuse(failure) }
        guard loop.waitCore() != nil else { throw refuse(.system(.notSupported)) }
        let record = IORecord(
            channel: self, operation: nextOperation(kind), requested: count, buffer: buffer, provided: nil,
            completion: completion, role: .queuedWrite(inKernel: false))
        record.bytes = bytes
        record.lent = lent
        track(record)
        writeQueue.writes.append(record)
        writeQueue.queuedBytes += count
        updateWritability()
        flushWrites()
        return record.operation
    }

    /// Submits the queue's head (as many writes as fit in one submission) unless a
    /// submission is already in flight.
    func flushWrites() {
        guard writeQueue.flushing == nil, !closing else { return }
        advanceWrites(by: 0)  // empty writes at the head are done
        guard !writeQueue.writes.isEmpty, let core = loop.core else { return }
        let socket = writeMode == .streamSocket
        // The last flush's array, emptied, holds this one's writes (no allocation).
        var batch = writeQueue.spareBatch
        writeQueue.spareBatch = []
        if writeQueue.writes.count == 1 {
            batch.append(writeQueue.writes[0])
        } else {
            batch.append(contentsOf: writeQueue.writes.prefix(WriteQueue.batchLimit))
        }
        let flush: IORecord
        if let spare = writeQueue.spareFlush {
            // The last flush's record (the kernel is done with it): no allocation.
            writeQueue.spareFlush = nil
            spare.role = .flush(batch)
            flush = spare
        } else {
            flush = IORecord(
                channel: self, operation: IOOperation(kind: socket ? .send : .write, number: 0), requested: 0,
                buffer: nil, provided: nil, completion: nil, role: .flush(batch))
        }
        let descriptor = self.descriptor
        let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_WAITALL)
        do {
            if batch.count == 1 {
                let write = batch[0]
                let start = write.bytes.map { $0 + write.written }
                let length = write.requested - write.written
                flush.port = try core.startOperation { sqe in
                    if socket {
                        io_uring_prep_send(sqe, descriptor, start, length, flags)
                    } else {
                        io_uring_prep_write(sqe, descriptor, start, UInt32(length), UInt64.max)
                    }
                }
            } else {
                let (vectors, message) = batchMemory()
                for (index, write) in batch.enumerated() {
                    vectors[index] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: write.bytes.map { $0 + write.written }),
                        iov_len: write.requested - write.written)
                }
                message.pointee = msghdr()
                message.pointee.msg_iov = vectors
                message.pointee.msg_iovlen = batch.count
                flush.port = try core.startOperation { sqe in
                    if socket {
                        io_uring_prep_sendmsg(sqe, descriptor, message, UInt32(bitPattern: flags))
                    } else {
                        io_uring_prep_writev(sqe, descriptor, vectors, UInt32(batch.count), UInt64.max)
                    }
                }
            }
        } catch {
            failWrites(IOFailure(error))
            return
        }
        for write in batch { write.inKernel = true }
        writeQueue.flushing = flush
        loop.io.operations.insert(flush)
    }

    private func batchMemory() -> (UnsafeMutablePointer<iovec>, UnsafeMutablePointer<msghdr>) {
        if let vectors = writeQueue.vectors, let message = writeQueue.message { return (vectors, message) }
        let vectors = UnsafeMutablePointer<iovec>.allocate(capacity: WriteQueue.batchLimit)
        let message = UnsafeMutablePointer<msghdr>.allocate(capacity: 1)
        writeQueue.vectors = vectors
        writeQueue.message = message
        return (vectors, message)
    }

    /// Waits for room to write (`POLLOUT`): a non-blocking pipe's write answered `EAGAIN`.
    private func pollWritable() {
        guard let core = loop.core else { return failWrites(.closed) }
        let flush = IORecord(
            channel: self, operation: IOOperation(kind: .write, number: 0), requested: 0, buffer: nil, provided: nil,
            completion: nil, role: .pollingWritable)
        let descriptor = self.descriptor
        do {
            flush.port = try core.startOperation { io_uring_prep_poll_add($0, descriptor, UInt32(POLLOUT)) }
        } catch {
            return failWrites(IOFailure(error))
        }
        writeQueue.flushing = flush
        loop.io.operations.insert(flush)
    }

    /// The kernel finished a flush with `result` (loop thread, from the completion's routing).
    func flushCompleted(_ flush: IORecord, result: Int32) {
        writeQueue.flushing = nil
        var batch = flush.takeFlushedWrites()
        for write in batch { write.inKernel = false }
        if closing {
            // The writes ended when the channel closed; their bytes were the kernel's until now.
        } else if case .pollingWritable = flush.role {
            if result < 0 { failWrites(IOFailure(errno: -result)) }
        } else if result == -EAGAIN || (result == 0 && !batch.isEmpty) {
            pollWritable()
        } else if result < 0 {
            failWrites(IOFailure(errno: -result))
        } else {
            advanceWrites(by: Int(result))
        }
        for write in batch where write.ended { releaseLent(write) }
        batch.removeAll(keepingCapacity: true)
        writeQueue.spareBatch = batch
        if case .flush = flush.role, !closing, !inFlight.isEmpty { writeQueue.spareFlush = flush }
        updateWritability()
        if closing {
            closeDescriptorIfIdle()
        } else if writeQueue.closeWhenWritten, writeQueue.writes.isEmpty || writeQueue.failure != nil {
            close()
        } else {
            flushWrites()
        }
    }

    /// Counts `count` more bytes written: completes every write they finish, in order.
    private func advanceWrites(by count: Int) {
        var left = count
        while let head = writeQueue.writes.first {
            let remaining = head.requested - head.written
            guard left >= remaining else {
                head.written += left
                writeQueue.queuedBytes -= left
                return
            }
            left -= remaining
            head.written = head.requested
            writeQueue.writes.removeFirst()
            writeQueue.queuedBytes -= remaining
            loop.endIO(head, with: .transferred(head.requested))
            if !head.inKernel { releaseLent(head) }
        }
    }

    /// A write failed: it and every write behind it fail the same way, as will later ones.
    func failWrites(_ failure: IOFailure) {
        if writeQueue.failure == nil, failure != .cancelled { writeQueue.failure = failure }
        while let write = writeQueue.writes.popFirst() {
            loop.endIO(write, with: .failed(failure))
            if !write.inKernel { releaseLent(write) }
        }
        writeQueue.queuedBytes = 0
        let waiters = writeQueue.waiters
        writeQueue.waiters = []
        for waiter in waiters { waiter(writeQueue.failure ?? failure) }
    }

    /// Takes a write that has not reached the kernel out of the queue; one the kernel is
    /// writing goes on (its bytes are already part of the stream).
    func cancelQueuedWrite(_ write: IORecord) {
        guard !write.inKernel, write.written == 0,
            let index = writeQueue.writes.firstIndex(where: { $0 === write })
        else { return }
        writeQueue.writes.remove(at: index)
        writeQueue.queuedBytes -= write.requested
        loop.endIO(write, with: .failed(.cancelled))
        releaseLent(write)
        updateWritability()
    }

    /// Cancels the queue when the channel closes: the writes end, the submission in flight
    /// is cancelled (its bytes stay until the kernel is done with them).
    func cancelWrites() {
        failWrites(.cancelled)
        if let flushing = writeQueue.flushing {
            do { try loop.core?.cancelOperation(flushing.port) } catch {
                RingRunLoop.logger.error("cannot cancel a write of descriptor \(descriptor): \(error)")
            }
        }
        releaseHeldBuffers()
        updateWritability()
    }

    func releaseLent(_ write: IORecord) {
        guard let lent = write.lent else { return }
        write.lent = nil
        lent.receiver.returnBuffer(lent.buffers, lent.id)
    }

    // MARK: Receive buffers

    /// A hold on one of this channel's receive buffers ended: the buffer goes back to the
    /// kernel when it was the last, unless the channel keeps its buffers while unwritable.
    func returnBuffer(_ buffers: ProvidedBuffers, _ id: UInt16) {
        guard buffers.release(id) else { return }
        if pausesReceiving, !writeQueue.isWritable, !closing {
            writeQueue.heldBuffers.append(LentBuffer(buffers: buffers, id: id, receiver: self))
            return
        }
        giveBack(buffers, id)
    }

    private func giveBack(_ buffers: ProvidedBuffers, _ id: UInt16) {
        buffers.giveBack(id)
        // A receive that stopped for want of buffers starts again.
        guard buffers.waitingReceives > 0 else { return }
        for record in inFlight.values where record.provided === buffers && record.waitingForBuffers {
            loop.rearmIfWaiting(record)
        }
    }

    func releaseHeldBuffers() {
        let held = writeQueue.heldBuffers
        writeQueue.heldBuffers = []
        for buffer in held { giveBack(buffer.buffers, buffer.id) }
    }
}
