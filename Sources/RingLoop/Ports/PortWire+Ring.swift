import CLibURing
import Glibc

extension PortWire {
    /// Packets up to this size are copied into one buffer and sent with `IORING_OP_SEND`;
    /// larger ones are gathered from their header and fragment by `IORING_OP_SENDMSG`.
    static let copiedPacketLimit = 1024

    /// Sends one packet, its header and its fragment, through `core`'s ring with
    /// `MSG_DONTWAIT`, submitted and completed in one call into the kernel
    /// (``WaitCore/performAtOnce(until:_:)``): the kernel's result, the bytes sent or
    /// `-errno` (`-EAGAIN` when the socket has no room; `-ECANCELED` when the kernel did
    /// not finish it by `deadline`). Calling thread: `core`'s.
    static func send(
        _ header: UnsafeRawBufferPointer, _ fragment: UnsafeRawBufferPointer, to socket: Int32, on core: WaitCore,
        until deadline: MonotonicInstant
    ) throws(RingError) -> Int32 {
        let flags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
        let count = header.count + fragment.count
        if count <= copiedPacketLimit {
            // One buffer: no message header or vectors for the kernel to copy in.
            return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { packet throws(RingError) in
                if let start = header.baseAddress, header.count > 0 {
                    packet.baseAddress!.copyMemory(from: start, byteCount: header.count)
                }
                if let start = fragment.baseAddress, fragment.count > 0 {
                    (packet.baseAddress! + header.count).copyMemory(from: start, byteCount: fragment.count)
                }
                return try core.performAtOnce(until: deadline) { sqe in
                    io_uring_prep_send(sqe, socket, packet.baseAddress, count, flags)
                }
            }
        }
        var vectors = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: header.baseAddress), iov_len: header.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: fragment.baseAddress), iov_len: fragment.count)
        )
        return try withUnsafeMutableBytes(of: &vectors) { vectors throws(RingError) in
            var message = msghdr()
            message.msg_iov = vectors.baseAddress?.assumingMemoryBound(to: iovec.self)
            message.msg_iovlen = 2
            return try withUnsafeMutablePointer(to: &message) { message throws(RingError) in
                try core.performAtOnce(until: deadline) { sqe in
                    io_uring_prep_sendmsg(sqe, socket, message, UInt32(bitPattern: flags))
                }
            }
        }
    }
}
