import CLibURing
import Glibc

extension PortWire {
    /// Packets up to this size are copied into one buffer and sent with `IORING_OP_SEND`;
    /// larger ones are gathered from their parts by `IORING_OP_SENDMSG`.
    static let copiedPacketLimit = 1024

    /// Sends one packet, its header and its fragment (in two parts, the stretches of a
    /// message's lead and of its body, ``forEachPacket(msgid:kind:sequence:lead:body:_:)``;
    /// either may be empty), through `core`'s ring with `MSG_DONTWAIT`, submitted and
    /// completed in one call into the kernel (``WaitCore/performAtOnce(until:_:)``): the
    /// kernel's result, the bytes sent or `-errno` (`-EAGAIN` when the socket has no room;
    /// `-ECANCELED` when the kernel did not finish it by `deadline`). Calling thread:
    /// `core`'s.
    static func send(
        _ header: UnsafeRawBufferPointer, _ fromLead: UnsafeRawBufferPointer, _ fromBody: UnsafeRawBufferPointer,
        to socket: Int32, on core: WaitCore, until deadline: MonotonicInstant
    ) throws(RingError) -> Int32 {
        let flags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
        let count = header.count + fromLead.count + fromBody.count
        if count <= copiedPacketLimit {
            // One buffer: no message header or vectors for the kernel to copy in.
            return try withUnsafeTemporaryAllocation(byteCount: count, alignment: 8) { packet throws(RingError) in
                var offset = 0
                func append(_ part: UnsafeRawBufferPointer) {
                    if let start = part.baseAddress, part.count > 0 {
                        (packet.baseAddress! + offset).copyMemory(from: start, byteCount: part.count)
                    }
                    offset += part.count
                }
                append(header)
                append(fromLead)
                append(fromBody)
                return try core.performAtOnce(until: deadline) { sqe in
                    io_uring_prep_send(sqe, socket, packet.baseAddress, count, flags)
                }
            }
        }
        // One vector a part that has bytes.
        var vectors = (iovec(), iovec(), iovec())
        return try withUnsafeMutableBytes(of: &vectors) { vectors throws(RingError) in
            let vector = vectors.baseAddress!.assumingMemoryBound(to: iovec.self)
            var used = 0
            func gather(_ part: UnsafeRawBufferPointer) {
                guard part.count > 0 else { return }
                vector[used] = iovec(iov_base: UnsafeMutableRawPointer(mutating: part.baseAddress), iov_len: part.count)
                used += 1
            }
            gather(header)
            gather(fromLead)
            gather(fromBody)
            var message = msghdr()
            message.msg_iov = vector
            message.msg_iovlen = used
            return try withUnsafeMutablePointer(to: &message) { message throws(RingError) in
                try core.performAtOnce(until: deadline) { sqe in
                    io_uring_prep_sendmsg(sqe, socket, message, UInt32(bitPattern: flags))
                }
            }
        }
    }
}
