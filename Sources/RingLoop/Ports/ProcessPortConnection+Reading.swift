import CLibURing
import Glibc
import SystemPackage

/// Reading a connection to a port in another process: one reader at a time (the *reader
/// role*), so a message's fragments are taken in order.
///
/// - A sender blocked waiting for its reply takes the role and polls the socket itself;
///   senders that find it taken wait as *followers*, and the reader hands the role to one
///   of them when it lets go (leader and followers).
/// - A sender running its loop in a reply mode watches the socket's readiness from that
///   loop and reads when it can take the role; a reader that settles its reply wakes its
///   loop.
/// - The port thread reads only when the connection ends, for what came before the end.
///
/// A thread that finds the role taken while data is ready leaves a note (`readPending`);
/// the holder reads again before it lets go, so nothing is left unread by a race.
extension ProcessPortConnection {
    /// Takes the reader role; when it is taken, registers `follower` to be handed it, or
    /// (without one) leaves a note that data is ready.
    private func takeRole(orFollowWith follower: ReplySlot?) -> Bool {
        state.withLock { state in
            guard !state.closing else { return false }
            if state.readerActive {
                if let follower { state.followers.append(follower) } else { state.readPending = true }
                return false
            }
            state.readerActive = true
            state.readPending = false
            return true
        }
    }

    /// Gives the role up, unless a note says to read again (then keeps it: `true`); a
    /// waiting follower is woken to take it.
    private func resignReader() -> Bool {
        let (again, next) = state.withLock { state -> (Bool, ReplySlot?) in
            if state.readPending, !state.closing {
                state.readPending = false
                return (true, nil)
            }
            state.readerActive = false
            return (false, state.followers.popLast())
        }
        next?.nudge()
        return again
    }

    /// Reads what is queued if no other thread reads (a readiness callout, a sender
    /// before it sends, the port thread at the connection's end).
    func readAvailable() {
        guard takeRole(orFollowWith: nil) else { return }
        repeat { drain() } while resignReader()
    }

    /// Reads every packet queued, without waiting (reader role held).
    private func drain() {
        while true {
            let count = recv(socket, buffer.bytes.baseAddress, buffer.bytes.count, Int32(MSG_DONTWAIT))
            if count > 0 {
                received(UnsafeRawBufferPointer(rebasing: buffer.bytes[..<count]))
                continue
            }
            let failure = count < 0 ? errno : 0
            switch failure {
            case EAGAIN:
                return
            case EINTR, ECONNRESET:
                // A reset (the port closed with packets of ours unread) is reported before
                // the packets it sent us, which are still queued: read on.
                continue
            default:
                end(.becameInvalid(name))
                return
            }
        }
    }

    /// Blocks until `deadline` for `slot`'s reply, reading the socket itself as the reader
    /// or, while another thread reads, as a follower.
    func awaitReply(_ slot: ReplySlot, until deadline: MonotonicInstant) {
        while !slot.isSettled, MonotonicInstant.now < deadline {
            guard takeRole(orFollowWith: slot) else {
                slot.block(until: deadline)
                state.withLock { $0.followers.removeAll { $0 === slot } }
                continue
            }
            while !slot.isSettled, isOpen {
                let now = MonotonicInstant.now
                guard now < deadline else { break }
                let milliseconds = Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
                var entry = pollfd(fd: socket, events: Int16(POLLIN) | PortWire.peerClosed, revents: 0)
                if poll(&entry, 1, milliseconds) > 0 { drain() }
            }
            while resignReader() { drain() }
            return
        }
    }

    /// Waits until `deadline` for `slot`'s reply running the calling thread's loop in
    /// `mode`, reading the socket from that loop when it is readable.
    func awaitReply(
        _ slot: ReplySlot, until deadline: MonotonicInstant, replyMode mode: RingRunLoop.Mode
    )
        throws(MessagePortError) -> [UInt8]
    {
        let reader = LoopPortSource(
            fileDescriptor: FileDescriptor(rawValue: socket), events: PollEvents(rawValue: Int16(POLLIN) | PortWire.peerClosed)
        ) {
            [weak self] _ in self?.readAvailable()
        }
        RingRunLoop.current.add(reader, to: mode)
        defer { reader.invalidate() }
        return try slot.wait(until: deadline, replyMode: mode, name: name)
    }
}
