import CLibURing
import Glibc

/// Completion-based I/O on one descriptor — a file, a pipe or a socket — with the results
/// delivered through a port source, as `CFSocket` delivers its callbacks.
///
/// The loop's ring does the I/O itself: a read, write, send, connect or accept is one
/// submission, and its completion arrives with the loop's next wait, which makes no other
/// system call. ``receive(bufferCount:bufferSize:completion:)`` and ``accept(completion:)``
/// stay armed (multishot) until cancelled. Each completion is performed as a callout of
/// ``source`` in the modes the source is in; completions that arrive while the loop runs
/// another mode wait for one of them.
///
/// ```swift
/// let listener = try SocketAddress.loopback(port: 7).makeListeningSocket()
/// let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { channel, completion in
///     guard case .accepted(let socket) = completion.outcome else { return }
///     let connection = LoopIOChannel(fileDescriptor: socket, loop: channel.loop) { connection, completion in
///         switch completion.outcome {
///         case .bytes(let bytes): _ = try? connection.send(bytes)      // echo
///         case .endOfFile, .failed: connection.close()
///         default: break
///         }
///     }
///     loop.add(connection.source, to: .common)
///     _ = try? connection.receive()
/// }
/// loop.add(server.source, to: .common)
/// try server.accept()
/// ```
///
/// Buffers belong to an operation until its final completion: the bytes given to a write
/// are copied once into memory the kernel writes from, a read's buffer and a receive's
/// provided-buffer ring live until the kernel is done with them, even after a cancel.
/// Received bytes are copied out of the ring's buffer when the completion is performed,
/// and the buffer goes back to the kernel after the callout; while every buffer waits for
/// a callout (the source is not in the running mode), the kernel stops receiving and the
/// data waits in the socket, so nothing is lost and memory stays bounded.
///
/// Thread rules: operations start, are cancelled and complete on the loop's thread (the
/// ring takes submissions from its thread only); `close()` and the source's `invalidate()`
/// work from any thread.
public final class LoopIOChannel: @unchecked Sendable {
    // @unchecked: `inFlight`, `nextNumber` and `closing` are used on the loop's thread only
    // (checked); everything else is constant.

    /// A callback for the completions of one channel.
    public typealias Handler = @Sendable (LoopIOChannel, IOCompletion) -> Void

    /// The descriptor the channel works on.
    public let fileDescriptor: Int32
    /// The loop whose ring does the I/O.
    public let loop: RingRunLoop
    /// The source to add to the modes completions should be delivered in.
    public let source: LoopPortSource
    /// Whether ``close()`` closes the descriptor.
    public let ownsDescriptor: Bool
    let handler: Handler?
    /// Takes the bytes of each ``readStream(bufferCount:bufferSize:completion:)`` or
    /// ``receive(bufferCount:bufferSize:completion:)`` completion in place, valid for the
    /// call only, instead of the handler's array (no copy, no allocation per read). Set
    /// before starting the operation; loop thread. Final completions still go to the handler.
    package var rawBytesHandler: ((UnsafeRawBufferPointer) -> Void)?

    var inFlight: [UInt64: IORecord] = [:]
    /// Called once the channel has closed its descriptor (loop thread).
    var descriptorClosed: (@Sendable () -> Void)?
    private var nextNumber: UInt64 = 0
    private var closing = false
    private var isDescriptorClosed = false

    /// Creates a channel for `fileDescriptor` on `loop`. Completions of operations started
    /// without their own `completion` closure go to `handler`.
    ///
    /// - Parameters:
    ///   - fileDescriptor: A file, pipe or socket.
    ///   - loop: The loop whose ring does the I/O and whose thread runs the callouts.
    ///   - ownsDescriptor: Whether ``close()`` closes the descriptor (after every
    ///     operation has finished: the kernel may still be using it until then).
    ///   - order: The source's order among the loop's port sources.
    ///   - handler: Where completions go when their operation has no closure of its own.
    public init(
        fileDescriptor: Int32, loop: RingRunLoop, ownsDescriptor: Bool = true, order: Int = 0,
        handler: Handler? = nil
    ) {
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        self.ownsDescriptor = ownsDescriptor
        self.handler = handler
        self.source = LoopPortSource(channelOf: fileDescriptor, order: order)
        source.channel = self
    }

    deinit {
        if ownsDescriptor, !isDescriptorClosed { Glibc.close(fileDescriptor) }
    }

    /// Operations started and not finished yet (loop thread).
    public var operationsInFlight: Int {
        loop.preconditionOnLoopThread("LoopIOChannel.operationsInFlight")
        return inFlight.count
    }

    // MARK: Operations

    /// Reads at most `count` bytes, at `offset` of a file or at the descriptor's position
    /// (`nil`, the only choice for pipes and sockets).
    @discardableResult
    public func read(
        upTo count: Int, at offset: UInt64? = nil, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        precondition(count > 0, "a read needs room for at least one byte, not \(count)")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        return try start(.read, requested: count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_read(sqe, fileDescriptor, buffer.baseAddress, UInt32(count), offset ?? UInt64.max)
        }
    }

    /// Writes `bytes` at `offset` of a file or at the descriptor's position (`nil`). A
    /// short write (``IOCompletion/isShort``) leaves the rest to write again; writing to a
    /// pipe with no reader fails with ``IOFailure/brokenPipe`` (and raises `SIGPIPE`, as
    /// `write` does: ignore it in programs that write to pipes).
    @discardableResult
    public func write(
        _ bytes: [UInt8], at offset: UInt64? = nil, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(bytes)
        return try start(.write, requested: bytes.count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_write(sqe, fileDescriptor, buffer.baseAddress, UInt32(bytes.count), offset ?? UInt64.max)
        }
    }

    /// Sends all of `bytes` on a connected socket (`MSG_WAITALL`; no `SIGPIPE`: a closed
    /// peer is ``IOFailure/brokenPipe`` or ``IOFailure/connectionReset``).
    @discardableResult
    public func send(_ bytes: [UInt8], completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(bytes)
        return try start(.send, requested: bytes.count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_send(
                sqe, fileDescriptor, buffer.baseAddress, bytes.count, Int32(MSG_WAITALL) | Int32(MSG_NOSIGNAL))
        }
    }

    /// Receives on a socket until cancelled, the peer ends the stream
    /// (``IOCompletion/Outcome/endOfFile``) or a failure: one multishot receive, with
    /// `bufferCount` buffers (rounded up to a power of two) of `bufferSize` bytes that the
    /// kernel fills and the channel hands back after each callout.
    @discardableResult
    public func receive(
        bufferCount: Int = 16, bufferSize: Int = 16_384, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        let provided = try providedBuffers(bufferCount, bufferSize)
        return try start(.receive, requested: bufferSize, provided: provided, completion: completion) { sqe in
            Self.prepareReceive(sqe, fileDescriptor, provided)
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
        let provided = try providedBuffers(bufferCount, bufferSize)
        let descriptor = fileDescriptor
        return try start(.readStream, requested: bufferSize, provided: provided, completion: completion) { sqe in
            ringloop_prep_read_multishot(sqe, descriptor, provided.group)
        }
    }

    /// Accepts connections on a listening socket until cancelled (multishot). Each
    /// ``IOCompletion/Outcome/accepted(_:)`` hands over a new close-on-exec descriptor.
    @discardableResult
    public func accept(completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        try start(.accept, requested: 0, completion: completion) { sqe in
            Self.prepareAccept(sqe, fileDescriptor)
        }
    }

    /// Connects a socket to `address`.
    @discardableResult
    public func connect(to address: SocketAddress, completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(address.bytes)
        return try start(.connect, requested: 0, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_connect(
                sqe, fileDescriptor, buffer.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                socklen_t(buffer.count))
        }
    }

    /// Cancels an operation. Its final completion still comes, with
    /// ``IOFailure/cancelled`` unless it finished first.
    public func cancel(_ operation: IOOperation) {
        loop.preconditionOnLoopThread("LoopIOChannel.cancel")
        guard let record = inFlight[operation.number] else { return }
        record.cancel(loop)
    }

    /// Cancels every operation, invalidates the source, and closes the descriptor (when
    /// the channel owns it) once the kernel has finished with every operation. Safe from
    /// any thread; completions not yet performed are dropped.
    public func close() {
        guard loop.isOnLoopThread else {
            loop.onLoopThread { _ in self.close() }
            return
        }
        closing = true
        source.invalidate()
        cancelAll()
        loop.flushIO { inFlight.isEmpty }
        closeDescriptorIfIdle()
    }

    /// Cancels every operation in flight (loop thread).
    func cancelAll() {
        for record in inFlight.values { record.cancel(loop) }
    }

    // MARK: Internals

    static func prepareReceive(_ sqe: UnsafeMutablePointer<io_uring_sqe>, _ descriptor: Int32, _ provided: ProvidedBuffers) {
        io_uring_prep_recv_multishot(sqe, descriptor, nil, 0, 0)
        sqe.pointee.flags |= UInt8(1 << IOSQE_BUFFER_SELECT_BIT)
        sqe.pointee.buf_group = provided.group
    }

    static func prepareAccept(_ sqe: UnsafeMutablePointer<io_uring_sqe>, _ descriptor: Int32) {
        io_uring_prep_multishot_accept(sqe, descriptor, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
    }

    private static func copy(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 16)
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        return buffer
    }

    private func start(
        _ kind: IOOperation.Kind, requested: Int, buffer: UnsafeMutableRawBufferPointer? = nil,
        provided: ProvidedBuffers? = nil, completion: Handler?,
        prepare: (UnsafeMutablePointer<io_uring_sqe>) -> Void
    ) throws(IOFailure) -> IOOperation {
        loop.preconditionOnLoopThread("LoopIOChannel.\(kind)")
        guard !closing, source.isValid else {
            buffer?.deallocate()
            throw .closed
        }
        guard let core = loop.waitCore() else {
            buffer?.deallocate()
            throw .system(.notSupported)
        }
        nextNumber += 1
        let operation = IOOperation(kind: kind, number: nextNumber)
        let record = IORecord(
            channel: self, operation: operation, requested: requested, buffer: buffer, provided: provided,
            completion: completion)
        do {
            record.port = try core.startOperation(prepare)
        } catch {
            throw IOFailure(error)  // the record frees the buffer
        }
        inFlight[operation.number] = record
        loop.ioOperations[record.port] = record
        return operation
    }

    /// The record's operation has delivered its final completion (or was dropped).
    func finished(_ record: IORecord) {
        inFlight[record.operation.number] = nil
        closeDescriptorIfIdle()
    }

    private func closeDescriptorIfIdle() {
        guard closing, inFlight.isEmpty, ownsDescriptor, !isDescriptorClosed else { return }
        isDescriptorClosed = true
        Glibc.close(fileDescriptor)
        descriptorClosed?()
    }
}
