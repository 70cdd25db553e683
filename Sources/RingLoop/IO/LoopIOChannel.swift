import CLibURing
import Glibc
import SystemPackage

/// Completion-based I/O on one descriptor — a file, a pipe or a socket — with the results
/// delivered through a port source, as `CFSocket` delivers its callbacks.
///
/// The loop's ring does the I/O itself: a read, write, send, connect or accept is one
/// submission, and its completion arrives with the loop's next wait, which makes no other
/// system call. ``receive(bufferCount:bufferSize:completion:)`` and ``accept(backoff:completion:)``
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
///         case .endOfFile: connection.closeAfterWrites()
///         case .failed: connection.close()
///         default: break
///         }
///     }
///     loop.add(connection.source, to: .common)
///     // Echo: each received buffer is sent as it is, behind the bytes sent before it.
///     _ = try? connection.receive { connection, bytes in _ = try? connection.send(bytes) }
/// }
/// loop.add(server.source, to: .common)
/// try server.accept()
/// ```
///
/// Writes on a stream — a `SOCK_STREAM` socket, a pipe, a terminal, a file written at its
/// position — keep their order whatever the caller does: they wait in the channel's queue
/// and go out one submission at a time (several queued writes in one `sendmsg` or
/// `writev`), a partial write continued before the next, as swift-nio's pending writes.
/// Above ``writeBufferWaterMark``'s high mark of queued bytes the channel is not
/// ``isWritable`` until the queue falls below the low mark; ``writabilityHandler`` hears
/// each change, the async ``sendBytes(_:)`` waits for it, and with
/// ``pausesReceivingWhileUnwritable`` the channel's own receive stops taking bytes in the
/// meantime, so a peer that sends and never reads is held back by TCP, not buffered. A
/// datagram or sequenced-packet socket's sends are messages, each submitted as given.
///
/// Buffers belong to an operation until its final completion: the bytes given to a write
/// are copied once into memory the kernel writes from, a read's buffer and a receive's
/// provided-buffer ring live until the kernel is done with them, even after a cancel.
/// A receive's bytes reach the callout in the ring's buffer: lent in place to a
/// ``ReceivedHandler`` (``receive(bufferCount:bufferSize:completion:received:)``), which
/// may send them on from that buffer with no copy, or copied into the completion's array
/// otherwise. The buffer goes back to the kernel after the callout (after the send, for
/// bytes sent on); while every buffer is out, the kernel stops receiving and the data
/// waits in the socket, so nothing is lost and memory stays bounded.
///
/// Thread rules: operations start, are cancelled and complete on the loop's thread (the
/// ring takes submissions from its thread only); `close()` and the source's `invalidate()`
/// work from any thread.
public final class LoopIOChannel: @unchecked Sendable {
    // @unchecked: `inFlight`, `nextNumber`, `closing`, the write queue and the handlers set
    // after init are used on the loop's thread only (checked); everything else is constant,
    // and every closure is `@Sendable`.

    /// A callback for the completions of one channel.
    public typealias Handler = @Sendable (LoopIOChannel, IOCompletion) -> Void
    /// A callback for received bytes lent in place, valid for the call only.
    public typealias ReceivedHandler = @Sendable (LoopIOChannel, borrowing ReceivedBytes) -> Void

    /// The descriptor the channel works on.
    public let fileDescriptor: FileDescriptor
    /// The descriptor, for the ring's submissions.
    var descriptor: Int32 { fileDescriptor.rawValue }
    /// The loop whose ring does the I/O.
    public let loop: RingRunLoop
    /// The source to add to the modes completions should be delivered in.
    public let source: LoopPortSource
    /// Whether ``close()`` closes the descriptor.
    public let ownsDescriptor: Bool
    let handler: Handler?

    // Touched for every operation on the loop's thread, never lent (`inout`) across a call
    // that reaches them again: unchecked, as the wait core's tables.
    @exclusivity(unchecked) var inFlight: [UInt64: IORecord] = [:]
    /// Called once the channel has closed its descriptor (loop thread).
    var descriptorClosed: (@Sendable () -> Void)?
    private var nextNumber: UInt64 = 0
    var closing = false
    private var isDescriptorClosed = false
    @exclusivity(unchecked) var writeQueue = WriteQueue()
    /// How writes without an offset go out (found at the first one).
    var writeMode = WriteMode.unknown
    var writabilityCallback: (@Sendable (LoopIOChannel, Bool) -> Void)?
    var pausesReceiving = false

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
        fileDescriptor: FileDescriptor, loop: RingRunLoop, ownsDescriptor: Bool = true, order: Int = 0,
        handler: Handler? = nil
    ) {
        self.fileDescriptor = fileDescriptor
        self.loop = loop
        self.ownsDescriptor = ownsDescriptor
        self.handler = handler
        self.source = LoopPortSource(channelOf: fileDescriptor, order: order)
    }

    deinit {
        writeQueue.deallocate()
        if ownsDescriptor, !isDescriptorClosed { Glibc.close(descriptor) }
    }

    /// Operations started and not finished yet, queued writes included (loop thread).
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
            io_uring_prep_read(sqe, descriptor, buffer.baseAddress, UInt32(count), offset ?? UInt64.max)
        }
    }

    /// Writes `bytes` at `offset` of a file, or (`nil`) next on the stream: behind the
    /// channel's earlier writes, all of them (a partial write is continued), as
    /// ``send(_:completion:)-([UInt8],_)`` does. Writing to a pipe with no reader fails with
    /// ``IOFailure/brokenPipe`` (and raises `SIGPIPE`, as `write` does: ignore it in
    /// programs that write to pipes). Once a write fails, every write queued behind it
    /// fails the same way, and so do later ones.
    @discardableResult
    public func write(
        _ bytes: [UInt8], at offset: UInt64? = nil, completion: Handler? = nil
    ) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(bytes)
        if offset == nil, resolvedWriteMode != .messages {
            return try enqueueWrite(
                .write, bytes: UnsafeRawPointer(buffer.baseAddress), count: bytes.count, buffer: buffer, lent: nil,
                completion: completion)
        }
        return try start(.write, requested: bytes.count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_write(sqe, descriptor, buffer.baseAddress, UInt32(bytes.count), offset ?? UInt64.max)
        }
    }

    /// Sends all of `bytes`: on a stream (a `SOCK_STREAM` socket, a pipe) behind the
    /// channel's earlier writes, in order, a partial send continued; on a datagram or
    /// sequenced-packet socket as one message. No `SIGPIPE`: a closed peer is
    /// ``IOFailure/brokenPipe`` or ``IOFailure/connectionReset``.
    @discardableResult
    public func send(_ bytes: [UInt8], completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(bytes)
        if resolvedWriteMode != .messages {
            return try enqueueWrite(
                .send, bytes: UnsafeRawPointer(buffer.baseAddress), count: bytes.count, buffer: buffer, lent: nil,
                completion: completion)
        }
        return try start(.send, requested: bytes.count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_send(sqe, descriptor, buffer.baseAddress, bytes.count, Int32(MSG_WAITALL) | Int32(MSG_NOSIGNAL))
        }
    }

    /// Sends received bytes from the buffer they arrived in, with no copy, as
    /// ``send(_:completion:)-([UInt8],_)`` sends an array. The buffer stays out of its receive until
    /// the kernel has sent it (so a receive whose bytes all wait to be sent pauses, and the
    /// data waits in the socket). The bytes may come from any channel of this loop.
    @discardableResult
    public func send(_ received: borrowing ReceivedBytes, completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        loop.preconditionOnLoopThread("LoopIOChannel.send")
        received.buffers.retain(received.id)
        let lent = LentBuffer(buffers: received.buffers, id: received.id, receiver: received.receiver)
        let bytes = received.buffers.bytes(received.id, length: received.count).baseAddress
        if resolvedWriteMode != .messages {
            return try enqueueWrite(.send, bytes: bytes, count: received.count, buffer: nil, lent: lent, completion: completion)
        }
        let count = received.count
        do {
            return try start(.send, requested: count, lent: lent, completion: completion) { sqe in
                io_uring_prep_send(sqe, descriptor, bytes, count, Int32(MSG_WAITALL) | Int32(MSG_NOSIGNAL))
            }
        } catch {
            lent.receiver.returnBuffer(lent.buffers, lent.id)
            throw error
        }
    }

    /// Accepts connections on a listening socket until cancelled (multishot). Each
    /// ``IOCompletion/Outcome/accepted(_:)`` hands over a new close-on-exec descriptor.
    ///
    /// When the process or the system runs out of descriptors or memory (`EMFILE`,
    /// `ENFILE`, `ENOBUFS`, `ENOMEM`) the accept is not ended: the channel gets that
    /// failure in a completion that is not final, and the accept is armed again after
    /// `backoff` (swift-nio's `acceptBackoff`); connections wait in the listen queue
    /// meanwhile. `nil` ends the accept with the failure instead.
    @discardableResult
    public func accept(backoff: Duration? = .seconds(1), completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        if let backoff {
            precondition(backoff > .zero, "an accept's back-off must be longer than zero, not \(backoff)")
        }
        return try start(.accept, requested: 0, completion: completion, acceptBackoff: backoff) { sqe in
            Self.prepareAccept(sqe, descriptor)
        }
    }

    /// Connects a socket to `address`.
    @discardableResult
    public func connect(to address: SocketAddress, completion: Handler? = nil) throws(IOFailure) -> IOOperation {
        let buffer = Self.copy(address.bytes)
        return try start(.connect, requested: 0, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_connect(
                sqe, descriptor, buffer.baseAddress!.assumingMemoryBound(to: sockaddr.self),
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

    /// Cancels every operation — queued writes too, unwritten bytes are dropped —
    /// invalidates the source, and closes the descriptor (when the channel owns it) once
    /// the kernel has finished with every operation. Safe from any thread; completions not
    /// yet performed are dropped. In a run of the loop the close itself is handed to the
    /// ring at once and done by one of the kernel's workers, off the loop's thread.
    public func close() {
        guard loop.isOnLoopThread else {
            loop.onLoopThread { _ in self.close() }
            return
        }
        guard !closing else { return }
        closing = true
        source.invalidate()
        cancelAll()
        loop.flushIO { inFlight.isEmpty && writeQueue.flushing == nil }
        closeDescriptorIfIdle()
    }

    /// Stops reading, receiving and accepting now, and closes the channel (``close()``)
    /// once every queued write has been written, or one has failed: an echo that reached
    /// the end of its input still sends what it owes. Safe from any thread. A peer that
    /// never reads keeps the channel open: close it when it has waited too long.
    public func closeAfterWrites() {
        guard loop.isOnLoopThread else {
            loop.onLoopThread { _ in self.closeAfterWrites() }
            return
        }
        guard !closing, !writeQueue.closeWhenWritten else { return }
        writeQueue.closeWhenWritten = true
        for record in inFlight.values where !record.isQueuedWrite { record.cancel(loop) }
        if writeQueue.writes.isEmpty, writeQueue.flushing == nil { close() }
    }

    /// Cancels every operation in flight, queued writes first (loop thread).
    func cancelAll() {
        cancelWrites()
        for record in inFlight.values where !record.isQueuedWrite { record.cancel(loop) }
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

    /// How writes without an offset go out, looked up at the first.
    var resolvedWriteMode: WriteMode {
        if writeMode == .unknown { writeMode = WriteMode.of(descriptor) }
        return writeMode
    }

    /// The next operation of `kind`.
    func nextOperation(_ kind: IOOperation.Kind) -> IOOperation {
        nextNumber += 1
        return IOOperation(kind: kind, number: nextNumber)
    }

    /// Starts an operation of `kind` on the loop's ring (`prepare` fills its entry); with
    /// `endingWaitOnFailure`, one whose success does not end the loop's wait
    /// (``WaitCore/startOperationEndingWaitOnFailure(_:)``), which is handed the ticket.
    func start(
        _ kind: IOOperation.Kind, requested: Int, buffer: UnsafeMutableRawBufferPointer? = nil,
        provided: ProvidedBuffers? = nil, lent: LentBuffer? = nil, completion: Handler?, received: ReceivedHandler? = nil,
        acceptBackoff: Duration? = nil, endingWaitOnFailure: ((WaitCore.SubmissionTicket?) -> Void)? = nil,
        prepare: (UnsafeMutablePointer<io_uring_sqe>) -> Void
    ) throws(IOFailure) -> IOOperation {
        loop.preconditionOnLoopThread("LoopIOChannel.\(kind)")
        guard !closing, !writeQueue.closeWhenWritten, source.isValid else {
            buffer?.deallocate()
            throw .closed
        }
        guard let core = loop.waitCore() else {
            buffer?.deallocate()
            throw .system(.notSupported)
        }
        let record = IORecord(
            channel: self, operation: nextOperation(kind), requested: requested, buffer: buffer, provided: provided,
            completion: completion)
        record.bytesHandler = received
        record.acceptBackoff = acceptBackoff
        do {
            if let endingWaitOnFailure {
                let (id, ticket) = try core.startOperationEndingWaitOnFailure(prepare)
                record.port = id
                endingWaitOnFailure(ticket)
            } else {
                record.port = try core.startOperation(prepare)
            }
        } catch {
            throw IOFailure(error)  // the record frees the buffer
        }
        record.lent = lent
        track(record)
        loop.io.operations.insert(record)
        return record.operation
    }

    /// Counts an operation in flight. A channel with operations in flight is known to its
    /// loop by its source, so invalidating the source cancels them.
    func track(_ record: IORecord) {
        inFlight[record.operation.number] = record
        if inFlight.count == 1 { loop.io.busyChannels[ObjectIdentifier(source)] = self }
    }

    /// The record's operation has delivered its final completion (or was dropped).
    func finished(_ record: IORecord) {
        inFlight[record.operation.number] = nil
        if inFlight.isEmpty {
            loop.io.busyChannels[ObjectIdentifier(source)] = nil
            // Nothing keeps the channel alive now: its spare flush must not either.
            writeQueue.spareFlush = nil
        }
        closeDescriptorIfIdle()
    }

    func closeDescriptorIfIdle() {
        guard closing, inFlight.isEmpty, writeQueue.flushing == nil, ownsDescriptor, !isDescriptorClosed else { return }
        isDescriptorClosed = true
        if closeThroughRing() { return }
        Glibc.close(descriptor)
        descriptorClosed?()
    }

    /// Hands the descriptor's close to the ring, which has one of the kernel's workers do
    /// it: closing a TCP socket (its shutdown, its memory freed) was a third of the loop's
    /// time to close many connections. Only in a run of the loop (outside one, the
    /// descriptor is closed at once, as before), and not when someone waits to hear it is
    /// closed (``descriptorClosed``, called at once); returns whether it did.
    private func closeThroughRing() -> Bool {
        guard descriptorClosed == nil, loop.modes.current != nil, let core = loop.core else { return false }
        return core.closeAsynchronously(descriptor)
    }
}
