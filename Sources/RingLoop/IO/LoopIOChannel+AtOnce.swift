import CLibURing
import Glibc

extension LoopIOChannel {
    /// Sends one packet, `header` then `fragment` copied into one buffer the operation
    /// owns until its completion, as one message of a datagram or sequenced-packet socket,
    /// without waiting for room (`MSG_DONTWAIT`): a socket without room fails it with
    /// ``IOFailure/system(_:)`` `EAGAIN` rather than holding it in the kernel.
    ///
    /// The entry goes to the kernel with the loop's next call into it — its wait, as a
    /// rule, so a reply made in a callout costs no call of its own — and the kernel
    /// finishes it as it takes it (a `MSG_DONTWAIT` send is neither waited on nor handed
    /// to a worker). That wait does not end for its success alone, and ends for its
    /// failure (``WaitCore/startOperationEndingWaitOnFailure(_:)``): a send that found no
    /// room is performed at once. Returns the operation and the ticket that makes its
    /// success end the wait after all (``WaitCore/needCompletion(of:)``), for a caller
    /// that queues more behind it and so needs its completion at once.
    func sendAtOnce(
        _ header: UnsafeRawBufferPointer, _ fragment: UnsafeRawBufferPointer, completion: Handler?
    ) throws(IOFailure) -> (operation: IOOperation, ticket: WaitCore.SubmissionTicket?) {
        let count = header.count + fragment.count
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
        if let start = header.baseAddress, header.count > 0 {
            buffer.baseAddress!.copyMemory(from: start, byteCount: header.count)
        }
        if let start = fragment.baseAddress, fragment.count > 0 {
            (buffer.baseAddress! + header.count).copyMemory(from: start, byteCount: fragment.count)
        }
        let descriptor = fileDescriptor.rawValue
        var ticket: WaitCore.SubmissionTicket?
        let operation = try start(.send, requested: count, buffer: buffer, completion: completion, endingWaitOnFailure: { ticket = $0 }) {
            sqe in
            io_uring_prep_send(sqe, descriptor, buffer.baseAddress, count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
        return (operation, ticket)
    }
}
