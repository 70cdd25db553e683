import CLibURing
import Glibc

/// One operation of a ``LoopIOChannel`` between its start and its final completion: owns
/// the memory the kernel reads or writes (freed in `deinit`, after the final completion
/// has been routed and performed or dropped). Loop thread only.
final class IORecord {
    let channel: LoopIOChannel
    let operation: IOOperation
    let requested: Int
    let buffer: UnsafeMutableRawBufferPointer?
    let provided: ProvidedBuffers?
    let completion: LoopIOChannel.Handler?
    /// The wait core's id of the submission in flight (a multishot operation re-armed
    /// after the kernel ended it gets a new one).
    var port = PortID(slot: 0, generation: 0)
    var cancelled = false
    /// A receive the kernel ended with `ENOBUFS`: re-armed when a buffer comes back.
    var waitingForBuffers = false
    /// The final completion has been routed: nothing of the kernel's refers to the record.
    var ended = false

    init(
        channel: LoopIOChannel, operation: IOOperation, requested: Int, buffer: UnsafeMutableRawBufferPointer?,
        provided: ProvidedBuffers?, completion: LoopIOChannel.Handler?
    ) {
        self.channel = channel
        self.operation = operation
        self.requested = requested
        self.buffer = buffer
        self.provided = provided
        self.completion = completion
    }

    deinit { buffer?.deallocate() }

    /// Asks the kernel to cancel; a receive waiting for buffers has nothing in the kernel
    /// and ends at once.
    func cancel(_ loop: RingRunLoop) {
        guard !ended, !cancelled else { return }
        cancelled = true
        if waitingForBuffers {
            waitingForBuffers = false
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
        let descriptor = channel.fileDescriptor
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
        loop.ioOperations[port] = self
        return nil
    }
}

/// A completion routed to an operation, waiting for its source's callout. Received bytes
/// stay in their provided buffer until then.
struct PendingIO {
    var record: IORecord
    var outcome: IOCompletion.Outcome
    /// The provided buffer holding received bytes, and how many.
    var received: (id: UInt16, count: Int)?
    var isFinal: Bool
}
