import CLibURing
import Glibc

extension PortWire {
    /// Packets up to this size are copied into one buffer and sent with `IORING_OP_SEND`;
    /// larger ones are gathered from their parts by `IORING_OP_SENDMSG`: the one limit of a
    /// single send (``send(_:_:_:to:on:until:)``) and of a batch's packets
    /// (ProcessPortConnection+Batch).
    ///
    /// Measured on this 2-core machine (a C program of 16 sends of one body, each with 32
    /// bytes of its own, submitted together, copied against gathered with two vectors,
    /// alternated): gathering cost 11 % more at 200 bytes, 9 % at 1 KiB, 5 % at 4 KiB,
    /// 1 % at 8 KiB, and saved 6 % at 16 KiB; the kernel's reading of a message header and
    /// its vectors costs more than the copy it saves until then (the event server's frames
    /// stay under 1 KiB, and `--only server.fanout` told the two ways apart by nothing
    /// beyond its noise).
    ///
    /// A single send pays one call into the kernel a packet, which hides the difference:
    /// `ringloop-bench --only ports.named.send` (the sending thread's CPU time a one-packet
    /// send to another process) measured a 4 KiB packet at 2,134 ns a send gathered (a
    /// 1 KiB limit, the single send's before) and 2,144 ns copied (8 KiB), medians of five
    /// runs each, alternated, load 2-2.5 on 2 cores: no difference beyond the noise of the
    /// 512-byte row, copied by both (1,801-1,961 ns). So the single send takes the limit
    /// the batches measured: one constant for both.
    static let copiedPacketLimit = 8 * 1024

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
