import CLibURing
import Glibc

// Multishot receives and stream reads into provided-buffer rings.
extension LoopIOChannel {
    /// Receives on a socket until cancelled, the peer ends the stream
    /// (``IOCompletion/Outcome/endOfFile``) or a failure: one multishot receive, with
    /// `bufferCount` buffers (rounded up to a power of two) of `bufferSize` bytes that the
    /// kernel fills and the channel hands back after each callout. Each buffer's bytes
    /// arrive in an ``IOCompletion/Outcome/bytes(_:)`` completion (a copy).
    @discardableResult
    public func receive(
        bufferCount: Int = 16, bufferSize: Int = 16_384, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        let provided = try providedBuffers(bufferCount, bufferSize)
        return try start(.receive, requested: bufferSize, provided: provided, completion: completion) { sqe in
            Self.prepareReceive(sqe, descriptor, provided)
        }
    }

    /// Receives as ``receive(bufferCount:bufferSize:completion:)`` does, lending each
    /// buffer's bytes in place to `received` for the call, with no copy and no allocation;
    /// the final completion (end of stream, failure, cancellation) goes to `completion` or
    /// the channel's handler.
    @discardableResult
    public func receive(
        bufferCount: Int = 16, bufferSize: Int = 16_384, completion: Handler? = nil,
        received: @escaping ReceivedHandler
    ) throws(IOFailure) -> IOOperation {
        let provided = try providedBuffers(bufferCount, bufferSize)
        return try start(.receive, requested: bufferSize, provided: provided, completion: completion, received: received) {
            sqe in Self.prepareReceive(sqe, descriptor, provided)
        }
    }

    /// A provided-buffer ring for a multishot operation of this channel.
    private func providedBuffers(_ count: Int, _ size: Int) throws(IOFailure) -> ProvidedBuffers {
        precondition(count > 0 && size > 0, "a multishot operation needs buffers, not \(count) × \(size)")
        guard let core = loop.waitCore() else { throw .system(.notSupported) }
        do { return try core.makeProvidedBuffers(count: count, size: size) } catch { throw IOFailure(error) }
    }

    /// Reads the descriptor each time it has data, until cancelled, the end of the
    /// stream (``IOCompletion/Outcome/endOfFile``, a pipe's writer gone) or a failure: one
    /// multishot read (Linux 6.7 and later) into `bufferCount` provided buffers of
    /// `bufferSize` bytes, so a read costs no system call — the ring does it and the loop
    /// takes the completion with its wait. For pollable descriptors (pipes, sockets,
    /// character devices such as evdev nodes). A kernel without the operation ends it at
    /// once with a failure (`EINVAL`), an unpollable descriptor with `EBADFD`: read it
    /// another way then.
    @discardableResult
    public func readStream(
        bufferCount: Int = 8, bufferSize: Int = 4096, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        try startReadStream(bufferCount, bufferSize, completion, nil)
    }

    /// Reads as ``readStream(bufferCount:bufferSize:completion:)`` does, lending each
    /// buffer's bytes in place to `received` for the call, as
    /// ``receive(bufferCount:bufferSize:completion:received:)`` lends them.
    @discardableResult
    public func readStream(
        bufferCount: Int = 8, bufferSize: Int = 4096, completion: Handler? = nil, received: @escaping ReceivedHandler
    ) throws(IOFailure) -> IOOperation {
        try startReadStream(bufferCount, bufferSize, completion, received)
    }

    private func startReadStream(
        _ count: Int, _ size: Int, _ completion: Handler?, _ received: ReceivedHandler?
    ) throws(IOFailure) -> IOOperation {
        let provided = try providedBuffers(count, size)
        let descriptor = self.descriptor
        return try start(.readStream, requested: size, provided: provided, completion: completion, received: received) {
            sqe in ringloop_prep_read_multishot(sqe, descriptor, provided.group)
        }
    }
}
