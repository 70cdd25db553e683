import CLibURing
import Glibc

/// One operation of a ``LoopIOChannel`` between its start and its final completion: owns
/// the memory the kernel reads or writes (freed in `deinit`, after the final completion
/// has been routed and performed or dropped). Loop thread only.
///
/// Its ``Role`` says which of three kinds of record it is: an operation submitted as it is
/// (a read, a receive, an accept, a write at an offset, a message socket's send); a write
/// queued on a stream channel (its bytes go out in order, through the channel's flushes);
/// or a flush: the one submission writing the head of a stream channel's queue, or waiting
/// for room to write it.
final class IORecord {
    let channel: LoopIOChannel
    let operation: IOOperation
    let requested: Int
    let buffer: UnsafeMutableRawBufferPointer?
    let provided: ProvidedBuffers?
    let completion: LoopIOChannel.Handler?
    /// Takes a receive's or stream read's bytes in place (instead of the handler's array).
    var bytesHandler: LoopIOChannel.ReceivedHandler?
    /// The wait core's id of the submission in flight (a multishot operation re-armed
    /// after the kernel ended it gets a new one).
    var port = PortID(slot: 0, generation: 0)

    /// Where the operation is between its start and its final completion.
    enum Phase: Equatable {
        /// Submitted: the kernel has it (a queued write: it waits in its channel's queue).
        case inFlight
        /// A multishot receive or read the kernel ended with `ENOBUFS`, every provided
        /// buffer waiting for a callout: re-armed when one comes back.
        case waitingForBuffers
        /// A multishot accept that failed for want of descriptors or memory: its back-off
        /// timeout is in the kernel, and it is re-armed when that completes.
        case backingOff
        /// The final completion has been routed: nothing of the kernel's refers to the record.
        case ended
    }

    /// Where the operation is. Its provided buffers count the receives waiting for them.
    var phase = Phase.inFlight {
        didSet {
            if (oldValue == .waitingForBuffers) != (phase == .waitingForBuffers) {
                provided?.waitingReceives += phase == .waitingForBuffers ? 1 : -1
            }
            checkInvariants()
        }
    }
    /// Its cancellation was asked for (whatever its phase; it ends `cancelled` unless it
    /// finished first).
    var cancelled = false
    /// How long an accept waits before it tries again after such a failure (`nil`: it ends).
    var acceptBackoff: Duration?
    /// The back-off timeout's time, read by the kernel when it takes the submission.
    private var timeout: UnsafeMutablePointer<__kernel_timespec>?

    var waitingForBuffers: Bool { phase == .waitingForBuffers }
    var backingOff: Bool { phase == .backingOff }
    var ended: Bool { phase == .ended }

    // Queued writes and flushes.

    /// What a record is for. Set when it starts; only a queued write's place (waiting, or
    /// in a flush the kernel has) and a flush's writes (taken back when it completes)
    /// change after.
    enum Role {
        /// An operation submitted as it is.
        case operation
        /// A write waiting in its channel's queue, written by flushes. `inKernel`: a flush
        /// in the kernel points at the write's bytes, which stay until it completes.
        case queuedWrite(inKernel: Bool)
        /// A flush: the writes it submitted, kept alive until its completion (empty once
        /// taken back then).
        case flush([IORecord])
        /// A flush that waits for room to write (`POLLOUT`) rather than writing.
        case pollingWritable
    }

    /// What the record is for.
    var role: Role {
        didSet { checkInvariants() }
    }

    /// Whether the record is a write waiting in its channel's queue.
    var isQueuedWrite: Bool {
        if case .queuedWrite = role { true } else { false }
    }

    /// Whether the record is a flush (writing the queue's head, or waiting for room to).
    var isFlush: Bool {
        switch role {
        case .flush, .pollingWritable: true
        case .operation, .queuedWrite: false
        }
    }

    /// Whether a flush in the kernel points at this queued write's bytes (they stay until
    /// it completes); never for another role, which cannot be set so.
    var inKernel: Bool {
        get { if case .queuedWrite(let inKernel) = role { inKernel } else { false } }
        set {
            precondition(isQueuedWrite, "\(operation) is not a queued write")
            role = .queuedWrite(inKernel: newValue)
        }
    }

    /// A flush's writes, taken back when it completes (the flush keeps none, so the array
    /// is reused without a copy).
    func takeFlushedWrites() -> [IORecord] {
        guard case .flush(let writes) = role else { return [] }
        role = .flush([])
        return writes
    }

    /// The bytes a queued write sends, in `buffer` or in a receive's buffer (`lent`).
    var bytes: UnsafeRawPointer?
    /// A receive's buffer the write sends from: released when the kernel is done with it.
    var lent: LentBuffer?
    /// Bytes of a queued write the kernel has written.
    var written = 0

    init(
        channel: LoopIOChannel, operation: IOOperation, requested: Int, buffer: UnsafeMutableRawBufferPointer?,
        provided: ProvidedBuffers?, completion: LoopIOChannel.Handler?, role: Role = .operation
    ) {
        self.role = role
        self.channel = channel
        self.operation = operation
        self.requested = requested
        self.buffer = buffer
        self.provided = provided
        self.completion = completion
    }

    deinit {
        buffer?.deallocate()
        timeout?.deallocate()
    }

    /// Checks (debug builds only) what the phase and the role promise: only a multishot
    /// receive or read with provided buffers waits for them, only an accept with a back-off
    /// timeout backs off, a queued write or a flush is never either; only a queued write
    /// has bytes to send, and never more written than asked; a flush has no handler of its
    /// own.
    func checkInvariants() {
        #if DEBUG
        switch phase {
        case .waitingForBuffers:
            precondition(
                provided != nil && (operation.kind == .receive || operation.kind == .readStream),
                "\(operation) waits for provided buffers it does not use")
        case .backingOff:
            precondition(operation.kind == .accept && timeout != nil, "\(operation) backs off without an accept's timeout")
        case .inFlight, .ended:
            break
        }
        switch role {
        case .operation:
            precondition(bytes == nil && lent == nil && written == 0, "\(operation) has a queued write's bytes")
        case .queuedWrite:
            precondition(phase == .inFlight || phase == .ended, "a queued write is \(phase)")
            precondition(provided == nil && written <= requested, "\(operation) wrote \(written) of \(requested) bytes")
        case .flush, .pollingWritable:
            precondition(phase == .inFlight || phase == .ended, "a flush is \(phase)")
            precondition(completion == nil && bytes == nil && lent == nil, "a flush has a write's handler or bytes")
        }
        #endif
    }

    /// Memory for the back-off timeout's time, kept with the record.
    func backoffTimeout() -> UnsafeMutablePointer<__kernel_timespec> {
        if let timeout { return timeout }
        let made = UnsafeMutablePointer<__kernel_timespec>.allocate(capacity: 1)
        timeout = made
        return made
    }

    /// Asks the kernel to cancel (an accept backing off: its timeout); a receive waiting for
    /// buffers ends at once; a queued write leaves the queue.
    func cancel(_ loop: RingRunLoop) {
        guard !ended, !cancelled else { return }
        if isQueuedWrite {
            channel.cancelQueuedWrite(self)
            return
        }
        cancelled = true
        if phase == .waitingForBuffers {
            phase = .inFlight
            loop.endIO(self, with: .failed(.cancelled))
            return
        }
        do { try loop.core?.cancelOperation(port) } catch {
            RingRunLoop.logger.error("cannot cancel \(operation): \(error)")
        }
    }

    /// Starts the multishot operation again under a new id. Returns the failure when the
    /// ring refuses.
    func rearm(_ loop: RingRunLoop) -> IOFailure? {
        guard let core = loop.core else { return .closed }
        let descriptor = channel.descriptor
        do {
            switch operation.kind {
            case .receive:
                guard let provided else { return .closed }
                port = try core.startOperation { LoopIOChannel.prepareReceive($0, descriptor, provided) }
            case .readStream:
                guard let provided else { return .closed }
                port = try core.startOperation { ringloop_prep_read_multishot($0, descriptor, provided.group) }
            case .accept:
                port = try core.startOperation { LoopIOChannel.prepareAccept($0, descriptor) }
            default:
                return .closed
            }
        } catch {
            return IOFailure(error)
        }
        loop.io.operations.insert(self)
        return nil
    }
}

/// A receive's buffer lent to a write that sends from it (no copy): the buffer goes back
/// to its receive once the kernel has written it.
struct LentBuffer {
    let buffers: ProvidedBuffers
    let id: UInt16
    /// The channel whose receive the buffer belongs to.
    let receiver: LoopIOChannel
}

/// A completion routed to an operation, waiting for its source's callout. Received bytes
/// stay in their provided buffer until then.
struct PendingIO {
    var record: IORecord
    var outcome: IOCompletion.Outcome
    /// The provided buffer holding received bytes, and how many.
    var received: (id: UInt16, count: Int)?
    var isFinal: Bool
    /// A change of the channel's writability, for its writability handler (the record is
    /// only the channel's messenger then).
    var writability: Bool? = nil
}
