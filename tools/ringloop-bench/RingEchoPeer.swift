import CLibURing
import Glibc
import RingLoop

/// The io_uring floor the named ports are measured against: on a connected
/// `SOCK_SEQPACKET` socket, a packet sent and the next one received in one call into the
/// kernel (`IORING_OP_SEND` linked to `IORING_OP_RECV`, the send's success not reported),
/// with no run loop, no framing and no locks. It is what any wait on a ring costs on this
/// machine, beside the socket pair's `poll` peer.
///
/// Owns a ring of its own (single issuer: used only by the thread that made it) and one
/// receive buffer, the only unsafe memory here.
final class RingEchoPeer {
    private let ring: UnsafeMutablePointer<io_uring>
    private let buffer: UnsafeMutableRawBufferPointer
    private let socket: Int32

    init(socket: Int32) throws {
        let ring = UnsafeMutablePointer<io_uring>.allocate(capacity: 1)
        ring.initialize(to: io_uring())
        // Single issuer and deferred completion work (Linux 6.1) as the loop's own ring
        // has them where it can; without them on an older kernel.
        var result: Int32 = -EINVAL
        for flags in [UInt32(IORING_SETUP_SINGLE_ISSUER) | UInt32(IORING_SETUP_DEFER_TASKRUN), 0] where result == -EINVAL {
            var params = io_uring_params()
            params.flags = flags
            result = io_uring_queue_init_params(8, ring, &params)
        }
        guard result == 0 else {
            ring.deallocate()
            throw IOFailure(errno: -result)
        }
        self.ring = ring
        self.buffer = .allocate(byteCount: 65_536, alignment: 16)
        self.socket = socket
    }

    deinit {
        io_uring_queue_exit(ring)
        ring.deallocate()
        buffer.deallocate()
    }

    /// Echoes every packet until the socket ends: each reply goes out with the receive of
    /// the next request, one call into the kernel per request.
    func serve() {
        var count = exchange(sending: nil, 0)
        while count > 0 {
            count = exchange(sending: UnsafeRawPointer(buffer.baseAddress), Int(count))
        }
    }

    /// One request and its reply, as the client side: one call into the kernel. Whether
    /// a reply as long as the request came within 10 s.
    func roundTrip(_ request: [UInt8]) -> Bool {
        request.withUnsafeBytes { exchange(sending: $0.baseAddress, $0.count) } == request.count
    }

    /// Sends `count` bytes from `bytes` (when given), then receives one packet into the
    /// buffer: the received count, or `-errno` (the send's when it failed, `-ETIMEDOUT`
    /// after 10 s). Returns only once the kernel is done with the buffer: the receive's
    /// completion always comes (its result, `-ECANCELED` after a failed send, or after
    /// the cancellation a timeout asks for).
    private func exchange(sending bytes: UnsafeRawPointer?, _ count: Int) -> Int32 {
        if let bytes, let send = io_uring_get_sqe(ring) {
            io_uring_prep_send(send, socket, bytes, count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            send.pointee.flags |= UInt8(1 << IOSQE_IO_LINK_BIT) | UInt8(1 << IOSQE_CQE_SKIP_SUCCESS_BIT)
            io_uring_sqe_set_data64(send, Self.sendTag)
        }
        guard let receive = io_uring_get_sqe(ring) else { return -EBUSY }
        io_uring_prep_recv(receive, socket, buffer.baseAddress, buffer.count, 0)
        io_uring_sqe_set_data64(receive, Self.receiveTag)
        var timeout = __kernel_timespec(tv_sec: 10, tv_nsec: 0)
        var completion: UnsafeMutablePointer<io_uring_cqe>?
        var sendFailure: Int32?
        var timedOut = false
        var waited = io_uring_submit_and_wait_timeout(ring, &completion, 1, &timeout, nil)
        while true {
            while io_uring_peek_cqe(ring, &completion) == 0, let done = completion {
                let (tag, result) = (done.pointee.user_data, done.pointee.res)
                io_uring_cqe_seen(ring, done)
                if tag == Self.sendTag { sendFailure = result }
                if tag == Self.receiveTag { return timedOut ? -ETIMEDOUT : sendFailure ?? result }
            }
            if waited == -ETIME, !timedOut, let cancel = io_uring_get_sqe(ring) {
                timedOut = true
                io_uring_prep_cancel64(cancel, Self.receiveTag, 0)
                io_uring_sqe_set_data64(cancel, Self.cancelTag)
                io_uring_submit(ring)
            }
            waited = timedOut ? io_uring_wait_cqe(ring, &completion) : io_uring_wait_cqe_timeout(ring, &completion, &timeout)
        }
    }

    private static let sendTag: UInt64 = 1
    private static let receiveTag: UInt64 = 2
    private static let cancelTag: UInt64 = 3
}
