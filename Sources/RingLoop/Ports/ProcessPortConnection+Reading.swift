import CLibURing
import Glibc
import SystemPackage

/// Reading a connection to a port in another process, and waiting on it: on the ring of
/// the waiting thread's loop.
///
/// - What the port sends back is read by whichever thread finds the socket readable,
///   under the connection's reading lock (`reading`): each packet queued is taken with a
///   non-blocking `recv` and handed to the assembler in order (a waiting thread's reader
///   stops at its own reply), and the requests it settles are settled once the lock is
///   let go. There is no reader role to hand over: a
///   thread that finds the lock held waits the few microseconds the holder takes to read
///   what is queued, then finds nothing left. The `recv` stays a plain call, on purpose:
///   it never waits (the ring said the socket is readable, or the sender reads what
///   came before its first send), and the same read as an `IORING_OP_RECV` submitted
///   and completed at once (``WaitCore/performAtOnce(until:_:)``) is one call into the
///   kernel all the same, with the ring's bookkeeping on top: +0.3–0.7 µs a round trip
///   between processes (issue 47, ringloop-bench's `ports.named.roundtrip.process`).
/// - A sender waiting for its reply watches the socket's readiness from its own loop's
///   ring: in the reply mode it gave, or (without one) in a private mode that holds
///   nothing else, so the thread waits as if blocked while its loop's other sources,
///   timers and observers wait. Waiting for room to send is the same, for `POLLOUT`.
/// - The process's port thread (``PortClientThread``) reads only when the connection
///   ends, for what came before the end (a refusal), and runs the invalidation callbacks.
extension ProcessPortConnection {
    /// The mode a thread's loop runs in while the thread waits for a reply or for room
    /// without a reply mode of its own: only the connection's readiness and the reply's
    /// source are in it.
    static let waitingMode = RingRunLoop.Mode("RingLoop.ProcessPortConnection.waiting")

    /// Reads every packet queued, without waiting (any thread: a readiness callout, a
    /// sender before it sends, the port thread at the connection's end); with `awaited`,
    /// only until the packet that settles it (the reader of a waiting thread).
    ///
    /// Stopping at the awaited reply saves the `recv` that would only say nothing is
    /// left: what came after it came after the readiness being handled, so each reader
    /// armed then (every waiting thread's) is told of it again, and late replies to
    /// requests that gave up come before a thread's next reply and are read on the way
    /// to it.
    func readAvailable(until awaited: ReplySlot? = nil) {
        var settled: [Settle] = []
        var failure: (error: MessagePortError, shutDown: Bool)?
        reading.withLock { reader in
            guard !reader.closed else { return }
            while failure == nil {
                let count = recv(socket, reader.bytes.baseAddress, reader.bytes.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    switch received(UnsafeRawBufferPointer(rebasing: reader.bytes[..<count])) {
                    case .success(let settle?):
                        settled.append(settle)
                        if let awaited, settle.slot === awaited { return }
                    case .success(nil): break
                    case .failure(let error): failure = (error, true)
                    }
                    continue
                }
                switch count < 0 ? errno : 0 {
                case EAGAIN:
                    return
                case EINTR, ECONNRESET:
                    // A reset (the port closed with packets of ours unread) is reported before
                    // the packets it sent us, which are still queued: read on.
                    continue
                default:
                    failure = (.becameInvalid(name), false)
                }
            }
            // What ended the connection is known before the packets that said it are
            // released: a sender that reads next (its send found the connection closed) finds
            // them gone and must find the reason instead.
            if let failure { state.withLock { if $0.ended == nil { $0.ended = failure.error } } }
        }
        for settle in settled {
            switch settle {
            case .reply(let slot, let reply): slot.fulfil(reply)
            case .failure(let slot, let error): slot.fail(error)
            }
        }
        if let failure {
            end(failure.error)
            if failure.shutDown { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Waits until `deadline` for `slot`'s reply, running the calling thread's loop in
    /// `replyMode` (or, without one, in ``waitingMode``), its ring watching the socket.
    func awaitReply(
        _ slot: ReplySlot, until deadline: MonotonicInstant, replyMode: RingRunLoop.Mode?
    )
        throws(MessagePortError) -> [UInt8]
    {
        guard let replyMode else {
            // The private mode keeps the thread's reader and the source its replies signal
            // between requests: the reader's multishot poll stays armed, so a request costs
            // no arming and no removal.
            let kept = blockedReader(on: RingRunLoop.current)
            kept.awaited.slot = slot
            defer { kept.awaited.slot = nil }
            return try slot.wait(until: deadline, running: Self.waitingMode, signalling: kept.arrival, name: name)
        }
        let awaited = AwaitedReply()
        awaited.slot = slot
        let reader = makeReader(awaited)
        RingRunLoop.current.add(reader, to: replyMode)
        defer { reader.invalidate() }
        return try slot.wait(until: deadline, replyMode: replyMode, name: name)
    }

    /// A source that reads the socket when it is readable (or ends), until `awaited`'s
    /// reply.
    private func makeReader(_ awaited: AwaitedReply) -> LoopPortSource {
        LoopPortSource(
            fileDescriptor: FileDescriptor(rawValue: socket), events: PollEvents(rawValue: Int16(POLLIN) | PortWire.peerClosed)
        ) {
            [weak self] _ in self?.readAvailable(until: awaited.slot)
        }
    }

    /// `loop`'s reader in ``waitingMode``, made and added on its first blocked wait, kept
    /// until the connection closes.
    private func blockedReader(on loop: RingRunLoop) -> BlockedReader {
        let (kept, isNew) = state.withLock { state -> (BlockedReader, Bool) in
            state.blockedReaders.removeAll { $0.loop == nil }
            if let kept = state.blockedReaders.first(where: { $0.loop === loop }) { return (kept, false) }
            let awaited = AwaitedReply()
            let kept = BlockedReader(
                loop: loop, source: makeReader(awaited), arrival: LoopSource(order: Int.min, label: "message port reply") {},
                awaited: awaited)
            state.blockedReaders.append(kept)
            return (kept, true)
        }
        if isNew {
            loop.add(kept.source, to: Self.waitingMode)
            loop.add(kept.arrival, to: Self.waitingMode)
        }
        return kept
    }

    /// Waits until `deadline` for room to send, running the calling thread's loop in
    /// ``waitingMode``, its ring watching the socket for `POLLOUT`.
    func waitForRoom(until deadline: MonotonicInstant) throws(MessagePortError) {
        guard MonotonicInstant.now < deadline else { throw .sendTimeout(name) }
        let loop = RingRunLoop.current
        let ready = ThreadLock(false)
        let watcher = LoopPortSource(
            fileDescriptor: FileDescriptor(rawValue: socket), events: PollEvents(rawValue: Int16(POLLOUT) | PortWire.peerClosed)
        ) { _ in
            ready.withLock { $0 = true }
        }
        loop.add(watcher, to: Self.waitingMode)
        defer { watcher.invalidate() }
        while !ready.withLock({ $0 }), MonotonicInstant.now < deadline {
            if loop.run(mode: Self.waitingMode, until: deadline, returnAfterSourceHandled: true) == .failed { break }
        }
        // Room, or an error the next send reports.
        guard ready.withLock({ $0 }) else { throw .sendTimeout(name) }
    }
}
