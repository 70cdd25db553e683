import CLibURing
import Glibc

// A stream channel's writability: the water marks of its write queue, who hears of a
// change, and the receive that pauses meanwhile.
extension LoopIOChannel {
    /// Whether fewer bytes wait in the write queue than the high water mark allows, or the
    /// queue has fallen below the low mark since it did not (loop thread). Writes are
    /// queued either way; an unwritable channel asks its writer to wait.
    public var isWritable: Bool {
        loop.preconditionOnLoopThread("LoopIOChannel.isWritable")
        return writeQueue.isWritable
    }

    /// Bytes queued and not yet written (loop thread).
    public var queuedWriteBytes: Int {
        loop.preconditionOnLoopThread("LoopIOChannel.queuedWriteBytes")
        return writeQueue.queuedBytes
    }

    /// The water marks of the write queue: 32 KiB and 64 KiB unless set (loop thread).
    public var writeBufferWaterMark: WriteBufferWaterMark {
        get {
            loop.preconditionOnLoopThread("LoopIOChannel.writeBufferWaterMark")
            return writeQueue.mark
        }
        set {
            loop.preconditionOnLoopThread("LoopIOChannel.writeBufferWaterMark")
            writeQueue.mark = newValue
            updateWritability()
        }
    }

    /// Called with ``isWritable``'s new value each time it changes, as a callout of
    /// ``source`` (swift-nio's `channelWritabilityChanged`). Set on the loop's thread.
    public var writabilityHandler: (@Sendable (LoopIOChannel, Bool) -> Void)? {
        get {
            loop.preconditionOnLoopThread("LoopIOChannel.writabilityHandler")
            return writabilityCallback
        }
        set {
            loop.preconditionOnLoopThread("LoopIOChannel.writabilityHandler")
            writabilityCallback = newValue
        }
    }

    /// Whether the channel's receive (or stream read) stops taking bytes in while the
    /// channel is not writable: its buffers are kept from the kernel until the write queue
    /// falls below the low mark, so the bytes wait in the socket and TCP holds the peer
    /// back. For a channel that answers what it receives (an echo, a request-reply
    /// protocol); off by default, since a protocol whose peer stops reading while it cannot
    /// write would stall both ends. Loop thread.
    public var pausesReceivingWhileUnwritable: Bool {
        get {
            loop.preconditionOnLoopThread("LoopIOChannel.pausesReceivingWhileUnwritable")
            return pausesReceiving
        }
        set {
            loop.preconditionOnLoopThread("LoopIOChannel.pausesReceivingWhileUnwritable")
            pausesReceiving = newValue
            if !newValue { releaseHeldBuffers() }
        }
    }

    // MARK: Changes

    /// Turns unwritable above the high mark and writable again below the low one, and says so.
    func updateWritability() {
        let queued = writeQueue.queuedBytes
        if writeQueue.isWritable, queued > writeQueue.mark.high {
            writeQueue.isWritable = false
            announceWritability(false)
        } else if !writeQueue.isWritable, queued < writeQueue.mark.low || queued == 0 {
            writeQueue.isWritable = true
            releaseHeldBuffers()
            let waiters = writeQueue.waiters
            writeQueue.waiters = []
            for waiter in waiters { waiter(nil) }
            announceWritability(true)
        }
    }

    private func announceWritability(_ writable: Bool) {
        guard writabilityCallback != nil, source.isValid else { return }
        let messenger = IORecord(
            channel: self, operation: IOOperation(kind: .write, number: 0), requested: 0, buffer: nil, provided: nil,
            completion: nil)
        loop.queueIO(PendingIO(record: messenger, outcome: .endOfFile, received: nil, isFinal: false, writability: writable))
    }

    /// Calls `body` once the channel is writable (at once if it is) or with the failure
    /// that ended its writes.
    func whenWritable(_ body: @escaping @Sendable (IOFailure?) -> Void) {
        if closing || writeQueue.closeWhenWritten { return body(.closed) }
        if let failure = writeQueue.failure { return body(failure) }
        if writeQueue.isWritable { return body(nil) }
        writeQueue.waiters.append(body)
    }
}
