import CLibURing
import Glibc
import SystemPackage

/// The client side of a connection to a port in another process.
///
/// Everything goes through the calling thread's own loop, on its ring: connecting while
/// the port's backlog is full (an `IORING_OP_CONNECT`), each packet sent (an
/// `IORING_OP_SEND` or `SENDMSG`, submitted and completed in one call into the kernel), waiting for
/// room to send, and waiting for a reply (readiness of the socket, then the packets read;
/// see ProcessPortConnection+Reading). A send says `MSG_DONTWAIT`, so a port without room
/// answers at once: that is what lets a send with a zero timeout say at once whether the
/// port had room (the event server's bound on a slow client rests on it); with time left,
/// the loop waits for room and the packet goes again. Nothing sends, polls or sleeps on
/// the caller's thread outside its loop's ring.
///
/// The process's port thread (`ringloop-ports`, ``PortClientThread``) only watches for
/// the connection's end (no readiness for data: it wakes only when a connection ends),
/// reads what is left then (a refusal comes before the end), and runs the invalidation
/// callbacks: a port whose sender never waits still learns that its port went away.
///
/// Threading: sends are serialized by `sending` (one message's packets are never
/// interleaved with another's); reads by `reading`; `state` guards what readers and
/// senders share. Lock order: `sending`, then `reading`, then `state`; the sending locks of
/// several connections (a batch, ProcessPortConnection+Batch) taken together by
/// `ThreadLock.withLocks`, in the order of their addresses.
final class ProcessPortConnection: Sendable {
    let name: String
    let socket: Int32
    let owner: PeerCredentials
    let maximumReplySize: Int
    /// The socket's end on the port thread's loop.
    private let watcher: LoopPortSource
    /// The packet buffer, and whether the descriptor is closed, under the reading lock.
    let reading = ThreadLock(Reader())
    let sending = ThreadLock<UInt64>(0)
    let state: ThreadLock<State>

    struct State {
        /// The port's message size limit, from its hello (`nil` until read).
        var limit: Int?
        /// Why the connection ended or cannot be used: a refusal, a protocol violation, or
        /// the port going away.
        var ended: MessagePortError?
        /// The end was announced: the watcher invalidated, the invalidation callback run
        /// (`ended` can be set earlier, by a reader or a sender that found it).
        var announcedEnd = false
        /// Requests waiting for their reply, by sequence number, with their size.
        var waiting: [UInt64: (slot: ReplySlot, size: Int)] = [:]
        var remote: WeakRemote?
        var assembler: PortWire.Assembler
        /// The descriptor is being closed.
        var closing = false
        /// The readers of the loops that waited without a reply mode (one a loop).
        var blockedReaders: [BlockedReader] = []
    }

    /// A loop's reader of the socket in ``waitingMode``, with the source its requests'
    /// replies signal there and the request it waits for.
    struct BlockedReader {
        weak var loop: RingRunLoop?
        let source: LoopPortSource
        let arrival: LoopSource
        let awaited: AwaitedReply
    }

    /// The request a reader's thread waits for: its reader reads until that one's reply
    /// (or until nothing is queued). Confined to the reader's loop thread.
    final class AwaitedReply: @unchecked Sendable {
        // @unchecked: set and read only on the loop thread of the reader holding it.
        var slot: ReplySlot?
    }

    /// What the reading lock guards: the packet buffer, and whether the descriptor is
    /// closed (nothing reads it then).
    final class Reader: @unchecked Sendable {
        // @unchecked: used only under the connection's reading lock.
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: PortWire.packetSize + 1, alignment: 8)
        var closed = false
        deinit { bytes.deallocate() }
    }

    struct WeakRemote {
        weak var port: RemoteMessagePort?
    }

    /// What a packet from the port settles.
    enum Settle {
        case reply(ReplySlot, [UInt8])
        case failure(ReplySlot, MessagePortError)

        var slot: ReplySlot {
            switch self {
            case .reply(let slot, _), .failure(let slot, _): slot
            }
        }
    }

    /// Connects to the port named `name` in another process and checks who holds it.
    /// While the port's backlog is full, the connect waits in the calling thread's loop's
    /// ring (``waitingMode``) for at most `connectTimeout`; with `.zero`, one try that does
    /// not wait.
    /// - Throws: ``MessagePortError/notFound(_:)`` when no process has a port of that name,
    ///   ``MessagePortError/untrustedPort(_:owner:)`` when its holder is not in `trusting`,
    ///   ``MessagePortError/sendTimeout(_:)`` when its backlog stays full for
    ///   `connectTimeout`.
    init(
        name: String, namespace: MessagePortNamespace, trusting: PeerPolicy, maximumReplySize: Int,
        connectTimeout: Duration = .seconds(1)
    )
        throws(MessagePortError)
    {
        let address = try namespace.address(of: name)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .notFound(name) }
        let failure = Self.connect(descriptor, to: address, timeout: connectTimeout)
        guard failure == 0 else {
            Glibc.close(descriptor)
            // A socket file the kernel does not let this process connect to.
            if failure == EACCES || failure == EPERM { throw .accessDenied(name) }
            throw failure == EAGAIN ? .sendTimeout(name) : .notFound(name)
        }
        guard let owner = PeerCredentials.ofPeer(of: descriptor) else {
            Glibc.close(descriptor)
            throw .notFound(name)
        }
        guard trusting.admits(owner) else {
            Glibc.close(descriptor)
            throw .untrustedPort(name, owner: owner)
        }
        self.name = name
        self.socket = descriptor
        self.owner = owner
        self.maximumReplySize = maximumReplySize
        self.state = ThreadLock(State(assembler: PortWire.Assembler(limit: maximumReplySize)))
        let box = WeakConnection()
        // The port thread only watches for the connection's end; replies are read by the
        // threads waiting for them (see ProcessPortConnection+Reading.swift).
        watcher = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: descriptor), events: PollEvents(rawValue: PortWire.peerClosed)) {
            _ in
            box.connection?.readAvailable()
        }
        box.connection = self
        PortClientThread.loop.add(watcher, to: .default)
        PortClientThread.loop.wakeUp()
    }

    /// Connects `descriptor` (a blocking socket: every send and receive of the connection
    /// says `MSG_DONTWAIT`). Returns 0 or the errno. A listener whose backlog is full
    /// refuses a non-blocking connect with `EAGAIN` (a Unix socket has no pending connect
    /// to poll for); the ring's connect waits for room instead, in a kernel worker, until
    /// `timeout`, when it is cancelled.
    private static func connect(_ descriptor: Int32, to address: SocketAddress, timeout: Duration) -> Int32 {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var result: Int32
        repeat {
            result = address.withSockaddr { Glibc.connect(descriptor, $0, $1) } == 0 ? 0 : errno
        } while result == EINTR
        _ = fcntl(descriptor, F_SETFL, flags)
        guard result == EAGAIN, timeout > .zero else { return result }
        let loop = RingRunLoop.current
        let outcome = ThreadLock<IOCompletion.Outcome?>(nil)
        let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: descriptor), loop: loop, ownsDescriptor: false)
        loop.add(channel.source, to: waitingMode)
        defer { channel.close() }
        let operation: IOOperation
        do {
            operation = try channel.connect(to: address) { _, completion in
                guard completion.isFinal else { return }
                outcome.withLock { $0 = completion.outcome }
            }
        } catch {
            return EAGAIN
        }
        let deadline = MonotonicInstant.now.advanced(by: timeout)
        while outcome.withLock({ $0 }) == nil, MonotonicInstant.now < deadline {
            if loop.run(mode: waitingMode, until: deadline, returnAfterSourceHandled: true) == .failed { break }
        }
        if outcome.withLock({ $0 }) == nil {
            channel.cancel(operation)
            // The cancellation's completion comes at once (the worker is interrupted).
            let limit = MonotonicInstant.now.advanced(by: .seconds(1))
            while outcome.withLock({ $0 }) == nil, MonotonicInstant.now < limit {
                if loop.run(mode: waitingMode, until: limit, returnAfterSourceHandled: true) == .failed { break }
            }
        }
        switch outcome.withLock({ $0 }) {
        case .connected?: return 0
        case .failed(.system(let errno))?: return errno.rawValue == EINTR ? EAGAIN : errno.rawValue
        case .failed(.connectionRefused)?, .failed(.connectionReset)?: return ECONNREFUSED
        default: return EAGAIN
        }
    }

    deinit { close() }

    /// The connection a watcher's callout reads for, without keeping it alive.
    private final class WeakConnection: @unchecked Sendable {
        // @unchecked: set once, before the watcher joins its loop.
        weak var connection: ProcessPortConnection?
    }

    /// One packet from the port (reading lock held): what it settles, or why the
    /// connection must end.
    func received(_ packet: UnsafeRawBufferPointer) -> Result<Settle?, MessagePortError> {
        state.withLock { state -> Result<Settle?, MessagePortError> in
            do throws(PortWire.Violation) {
                switch try state.assembler.take(packet) {
                case .none:
                    return .success(nil)
                case .message(let message):
                    guard message.kind == .reply else {
                        return .failure(.transportError(name, reason: "the port sent a \(message.kind) packet"))
                    }
                    // A reply to a request that gave up is dropped.
                    guard let waiting = state.waiting.removeValue(forKey: message.sequence) else { return .success(nil) }
                    return .success(.reply(waiting.slot, message.data))
                case .tooLarge(let header):
                    guard header.kind == .reply else {
                        return .failure(.transportError(name, reason: "the port sent a \(header.kind) packet"))
                    }
                    guard let waiting = state.waiting.removeValue(forKey: header.sequence) else { return .success(nil) }
                    let size = Int(clamping: header.total)
                    return .success(.failure(waiting.slot, .tooLarge(size: size, limit: maximumReplySize)))
                case .control(let header):
                    return control(header, &state)
                }
            } catch {
                return .failure(.transportError(name, reason: error.description))
            }
        }
    }

    /// A control packet: the hello, a refusal, a request found too large.
    private func control(_ header: PortWire.Header, _ state: inout State) -> Result<Settle?, MessagePortError> {
        switch header.kind {
        case .hello:
            guard header.msgid == PortWire.version else {
                return .failure(.transportError(name, reason: "protocol version \(header.msgid), not \(PortWire.version)"))
            }
            state.limit = Int(clamping: header.total)
        case .refused:
            let refusal: MessagePortError =
                PortWire.Refusal(rawValue: header.msgid) == .tooManyConnections
                ? .tooManyConnections(name) : .accessDenied(name)
            return .failure(refusal)
        case .tooLarge:
            guard let waiting = state.waiting.removeValue(forKey: header.sequence) else { break }
            return .success(.failure(waiting.slot, .tooLarge(size: waiting.size, limit: Int(clamping: header.total))))
        default:
            return .failure(.transportError(name, reason: "the port sent a \(header.kind) control packet"))
        }
        return .success(nil)
    }

    /// The connection ended (a reader, or a sender that found it closed): requests
    /// waiting fail with `error` (or with what ended it first), and the invalidation
    /// callback is queued to the process's port thread, never run here, even on that
    /// thread: a reader may find an end while its thread holds a connection's sending lock
    /// (a send waiting for room runs its loop, whose kept readers may find another port's
    /// end), and a callback that sent to that connection would wait for that lock forever.
    /// (A send that itself finds its port gone runs the callback before it throws, with no
    /// lock held: ``RemoteMessagePort`` `noticingInvalidation`.)
    func end(_ error: MessagePortError) {
        let (waiting, remote, first, reason) = state.withLock { state in
            if state.ended == nil { state.ended = error }
            let first = !state.announcedEnd
            state.announcedEnd = true
            defer { state.waiting = [:] }
            return (state.waiting, state.remote, first, state.ended!)
        }
        for entry in waiting.values { entry.slot.fail(reason) }
        if first {
            watcher.invalidate()
            if let port = remote?.port {
                PortClientThread.loop.perform(inModes: [.default]) { port.portWentAway() }
                PortClientThread.loop.wakeUp()
            }
        }
    }

    /// Whether the connection can still carry messages.
    var isOpen: Bool { state.withLock { $0.ended == nil } }

    /// Notes the remote port whose invalidation callback the connection's end calls.
    func watch(_ remote: RemoteMessagePort) {
        let ended = state.withLock { state -> Bool in
            state.remote = WeakRemote(port: remote)
            return state.ended != nil
        }
        if ended { remote.portWentAway() }
    }

    /// Ends the connection (its remote port is going away): the port sees it end at once;
    /// the descriptor is closed on the port thread, once no thread reads it.
    func close() {
        let (first, readers) = state.withLock { state -> (Bool, [BlockedReader]) in
            defer {
                state.closing = true
                state.blockedReaders = []
            }
            return (!state.closing, state.blockedReaders)
        }
        for reader in readers {
            reader.source.invalidate()
            reader.arrival.invalidate()
        }
        guard first else { return }
        shutdown(socket, Int32(SHUT_RDWR))
        watcher.invalidate()
        let socket = socket
        let reading = reading
        PortClientThread.loop.perform(inModes: [.default]) {
            reading.withLock { $0.closed = true }
            Glibc.close(socket)
        }
        PortClientThread.loop.wakeUp()
    }

    /// Sends one message; with `request`, registers its slot for the reply first.
    /// Returns the message's sequence number.
    func send(
        msgid: Int32, data: [UInt8], request: ReplySlot?, deadline: MonotonicInstant
    ) throws(MessagePortError)
        -> UInt64
    {
        try send(msgid: msgid, lead: [], body: data, request: request, deadline: deadline)
    }

    /// Sends one message whose bytes are `lead`, then `body`, without joining them: each
    /// packet is gathered from its header and its stretches of the two
    /// (``PortWire/forEachPacket(msgid:kind:sequence:lead:body:_:)``). With `request`,
    /// registers its slot for the reply first. Returns the message's sequence number.
    func send(
        msgid: Int32, lead: [UInt8], body: [UInt8], request: ReplySlot?, deadline: MonotonicInstant
    ) throws(MessagePortError)
        -> UInt64
    {
        // Until the port's hello is read, what it sent is read now: the limit is known as
        // soon as it can be. (Late replies need no read here: a reader armed later finds
        // the socket readable at once, and a thread's kept reader has their readiness
        // pending; either drains them, in order, before the next reply.)
        if state.withLock({ $0.limit == nil }) { readAvailable() }
        let size = lead.count + body.count
        let result = sending.withLock { sequence -> Result<(number: UInt64, written: WriteOutcome), MessagePortError> in
            do throws(MessagePortError) {
                let number = try number(ofSize: size, after: &sequence)
                if let request { state.withLock { $0.waiting[number] = (request, size) } }
                let stopped: WriteOutcome?
                do throws(MessagePortError) {
                    let kind: PortWire.Kind = request == nil ? .message : .request
                    // (Array's withUnsafeBytes rethrows untyped: the error travels as a Result.)
                    stopped = try lead.withUnsafeBytes { lead in
                        body.withUnsafeBytes { body in
                            Result { () throws(MessagePortError) -> WriteOutcome? in
                                // The packets stop at the first that does not go: the port
                                // closed the connection.
                                try PortWire.forEachPacket(msgid: msgid, kind: kind, sequence: number, lead: lead, body: body) {
                                    header, fromLead, fromBody throws(MessagePortError) -> WriteOutcome? in
                                    let written = try write(header, fromLead, fromBody, deadline: deadline)
                                    return written == .sent ? nil : written
                                }
                            }
                        }
                    }.get()
                } catch {
                    if request != nil { state.withLock { _ = $0.waiting.removeValue(forKey: number) } }
                    throw error
                }
                if stopped == .foundClosed, request != nil { state.withLock { _ = $0.waiting.removeValue(forKey: number) } }
                return .success((number, stopped ?? .sent))
            } catch {
                return .failure(error)
            }
        }
        let sent = try result.get()
        // Why the port closed is read once the sending lock is let go: reading the end
        // runs the invalidation callback, which may send to this port.
        if sent.written == .foundClosed { throw endedBySend() }
        return sent.number
    }

    /// A request gave up waiting: its reply, if it comes, is dropped.
    func abandon(_ slot: ReplySlot) {
        state.withLock { state in
            if let entry = state.waiting.first(where: { $0.value.slot === slot }) {
                state.waiting.removeValue(forKey: entry.key)
            }
        }
    }

    /// Numbers a message of `size` bytes, the connection's sending lock held (`sequence`
    /// is what it guards): the connection's next sequence number, or why the message
    /// cannot go (what ended the connection, as ``beforeSending(_:name:)`` says it, or its
    /// size over the port's limit). A single send and a batch's
    /// (ProcessPortConnection+Batch) number through it alike.
    func number(ofSize size: Int, after sequence: inout UInt64) throws(MessagePortError) -> UInt64 {
        let (ended, limit) = state.withLock { ($0.ended, $0.limit) }
        if let ended { throw Self.beforeSending(ended, name: name) }
        if let limit, size > limit { throw .tooLarge(size: size, limit: limit) }
        sequence += 1
        return sequence
    }

    /// The error a send reports for a connection that ended before it: what ended it, as
    /// "invalid before sending" rather than "became invalid".
    static func beforeSending(_ ended: MessagePortError, name: String) -> MessagePortError {
        if case .becameInvalid = ended { return .invalidated(name) }
        return ended
    }

    /// Sends one packet, its header and its fragment (the stretches of the message's lead
    /// and of its body it holds, either possibly empty), on the calling thread's loop's
    /// ring (``PortWire/send(_:_:_:to:on:until:)``: a small packet copied into one buffer
    /// for an `IORING_OP_SEND`, a larger one gathered by an `IORING_OP_SENDMSG`), submitted and
    /// completed in one call into the kernel. It says `MSG_DONTWAIT`: a port without room
    /// answers at once, and the wait for room is the loop's (``waitForRoom(until:)``).
    /// Returns ``WriteOutcome/foundClosed`` when the port had closed the connection: the
    /// caller, once it has let go of the sending lock, reads why (``endedBySend()``).
    func write(
        _ header: UnsafeRawBufferPointer, _ fromLead: UnsafeRawBufferPointer, _ fromBody: UnsafeRawBufferPointer,
        deadline: MonotonicInstant
    ) throws(MessagePortError) -> WriteOutcome {
        guard let core = RingRunLoop.current.waitCore() else {
            throw .transportError(name, reason: "the sending thread's loop has no io_uring")
        }
        while true {
            let outcome = Result { () throws(RingError) in
                try PortWire.send(header, fromLead, fromBody, to: socket, on: core, until: deadline)
            }
            let sent: Int32
            switch outcome {
            case .success(let result): sent = result
            case .failure(let error): throw .transportError(name, reason: "the ring refused a send: \(error)")
            }
            if Int(sent) == header.count + fromLead.count + fromBody.count { return .sent }
            switch sent < 0 ? -sent : EMSGSIZE {
            case EINTR:
                continue
            case EAGAIN, ECANCELED:
                try waitForRoom(until: deadline)
            default:
                // The port closed the connection.
                return .foundClosed
            }
        }
    }

    /// What a packet's ``write(_:_:_:deadline:)`` found.
    enum WriteOutcome {
        /// The packet went whole.
        case sent
        /// The port had closed the connection; nothing went.
        case foundClosed
    }
}
