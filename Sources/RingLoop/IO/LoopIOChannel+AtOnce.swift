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
    /// to a worker), posting its completion then, which ends that wait: the completion
    /// is performed at once, whether the send went or found no room (a wait that slept on
    /// past a failed send would leave the packet unsent until something else came).
    @discardableResult
    func sendAtOnce(
        _ header: UnsafeRawBufferPointer, _ fragment: UnsafeRawBufferPointer, completion: Handler?
    ) throws(IOFailure) -> IOOperation {
        let count = header.count + fragment.count
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count), alignment: 16)
        if let start = header.baseAddress, header.count > 0 {
            buffer.baseAddress!.copyMemory(from: start, byteCount: header.count)
        }
        if let start = fragment.baseAddress, fragment.count > 0 {
            (buffer.baseAddress! + header.count).copyMemory(from: start, byteCount: fragment.count)
        }
        let descriptor = fileDescriptor.rawValue
        return try start(.send, requested: count, buffer: buffer, completion: completion) { sqe in
            io_uring_prep_send(sqe, descriptor, buffer.baseAddress, count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
    }
}
