/// A port that sends to a ``LocalMessagePort`` found by name, like
/// `CFMessagePortCreateRemote`.
///
/// A port of this process is reached through its mailbox; a port of another process
/// through a connection to its socket, made here. That connection is checked before
/// anything is sent: the kernel says which user holds the name (`SO_PEERCRED`), and a
/// holder outside `trusting` (by default this process's user and root) is refused with
/// ``MessagePortError/untrustedPort(_:owner:)`` — a process of another user that took the
/// name first cannot receive what was meant for the real port, nor answer for it.
public final class RemoteMessagePort: Sendable {
    /// The name looked up.
    public let name: String
    /// The process holding the port (this process, for a port of this process).
    public let owner: PeerCredentials
    let target: Target
    private let invalidation = ThreadLock<(@Sendable (RemoteMessagePort) -> Void)?>(nil)

    enum Target {
        /// A port of this process.
        case thread(PortCore)
        /// A port of another process, through a connection to its socket.
        case process(ProcessPortConnection)
    }

    /// The default largest reply accepted from a port of another process, in bytes.
    public static let defaultMaximumReplySize = 16 * 1024 * 1024

    /// Looks up the local port named `name`: in this process first, then in the others.
    /// - Parameters:
    ///   - name: The port's name.
    ///   - namespace: Where the port's process put it (the port's own `namespace`).
    ///   - trusting: The users (and groups) a port of another process may run as.
    ///   - maximumReplySize: The largest reply taken from a port of another process; a
    ///     larger one fails its request with ``MessagePortError/tooLarge(size:limit:)``.
    ///   - connectTimeout: How long to keep trying while the port's process leaves
    ///     connections waiting (its backlog full); `.zero`: one try. A loop thread that
    ///     must not wait on another process (a server connecting back to a client) passes
    ///     `.zero`.
    /// - Throws: ``MessagePortError/notFound(_:)``, ``MessagePortError/invalidName(_:)``,
    ///   ``MessagePortError/untrustedPort(_:owner:)``, and
    ///   ``MessagePortError/sendTimeout(_:)`` when the port's backlog stayed full for
    ///   `connectTimeout`;
    ///   ``MessagePortError/accessDenied(_:)`` when a directory namespace's socket file
    ///   does not let this process connect.
    public init(
        name: String, namespace: MessagePortNamespace = .abstract, trusting: PeerPolicy = .sameUserOrRoot,
        maximumReplySize: Int = RemoteMessagePort.defaultMaximumReplySize, connectTimeout: Duration = .seconds(1)
    ) throws(MessagePortError) {
        guard !name.isEmpty, name.utf8.count <= LocalMessagePort.maximumNameLength else { throw .invalidName(name) }
        self.name = name
        if let core = PortRegistry.shared.lookUp(namespace.key(of: name)) {
            target = .thread(core)
            owner = .ofThisProcess
            core.addWatcher(self)
        } else {
            let connection = try ProcessPortConnection(
                name: name, namespace: namespace, trusting: trusting, maximumReplySize: max(0, maximumReplySize),
                connectTimeout: connectTimeout)
            target = .process(connection)
            owner = connection.owner
            connection.watch(self)
        }
    }

    deinit {
        if case .process(let connection) = target { connection.close() }
    }

    /// Whether the local port is still valid (for a port in another process: whether that
    /// process still holds the connection and has not refused it).
    public var isValid: Bool {
        switch target {
        case .thread(let core): core.isValid
        case .process(let connection): connection.isOpen
        }
    }

    /// Calls `body` once when the local port goes (at once if it is gone already): on the
    /// thread that invalidates it, for a port of this process. For a port of another
    /// process, on the process's port thread (`ringloop-ports`) when that process ends or
    /// invalidates it, or on a sending thread whose send or request finds the port gone,
    /// before that call throws (with no lock of the port's held). On the port thread,
    /// `body` should not block: every connection's end-notice waits behind it. Hand
    /// longer work to a loop of your own (`perform(inModes:_:)` and `wakeUp()`).
    public func setInvalidationCallback(_ body: @escaping @Sendable (RemoteMessagePort) -> Void) {
        invalidation.withLock { $0 = body }
        if !isValid { portWentAway() }
    }

    func portWentAway() {
        let body = invalidation.withLock { callback -> (@Sendable (RemoteMessagePort) -> Void)? in
            defer { callback = nil }
            return callback
        }
        body?(self)
    }

    /// Sends a one-way message (`CFMessagePortSendRequest` with no reply mode), waiting at
    /// most `timeout` for room in the port's queue (its mailbox, or the connection to its
    /// process). The message is the port's once this returns: a busy receiver delays its
    /// delivery, not the send. To a port of another process, each packet goes through the
    /// calling thread's loop's ring, one non-blocking send submitted and completed in one
    /// call into the kernel; waiting for room runs that loop in a private mode, its ring
    /// watching the socket (nothing else of the loop's runs meanwhile). With a `timeout` of
    /// zero nothing waits: a full queue fails at once with
    /// ``MessagePortError/sendTimeout(_:)``.
    /// - Throws: ``MessagePortError/tooLarge(size:limit:)``,
    ///   ``MessagePortError/invalidated(_:)``, ``MessagePortError/sendTimeout(_:)``,
    ///   ``MessagePortError/accessDenied(_:)``, ``MessagePortError/tooManyConnections(_:)``.
    public func send(msgid: Int32, data: [UInt8], timeout: Duration = .seconds(5)) throws(MessagePortError) {
        try send(msgid: msgid, lead: [], body: data, timeout: timeout)
    }

    /// Sends a one-way message whose bytes are `lead`, then `body`, as
    /// ``send(msgid:data:timeout:)`` sends them joined, without joining them for a port of
    /// another process: each packet is gathered from its header and its stretches of the
    /// two (a sender whose messages share one body, each with a lead of its own, such as
    /// the event server's batches, sends the body as it is). A port of this process gets
    /// the two joined in one array, its message.
    package func send(msgid: Int32, lead: [UInt8], body: [UInt8], timeout: Duration = .seconds(5)) throws(MessagePortError) {
        let deadline = MonotonicInstant.now.advanced(by: timeout)
        switch target {
        case .thread(let core):
            try noticingInvalidation { () throws(MessagePortError) in
                let data = lead.isEmpty ? body : lead + body
                try core.enqueue(Envelope(msgid: msgid, data: data, reply: nil), deadline: deadline)
            }
        case .process(let connection):
            try noticingInvalidation { () throws(MessagePortError) in
                _ = try connection.send(msgid: msgid, lead: lead, body: body, request: nil, deadline: deadline)
            }
        }
    }

    /// Sends a request and waits for the callback's reply (`CFMessagePortSendRequest` with
    /// a reply mode): at most `sendTimeout` for room in the port's queue, then at most
    /// `replyTimeout` for the reply. A reply that comes later is dropped.
    ///
    /// With a `replyMode`, the calling thread's loop runs in that mode while it waits, as
    /// CF's does: that mode's timers, sources and observers keep running, and a request to
    /// a port on the caller's own loop is answered only if the port's source is in
    /// `replyMode`. Without one, the thread waits as if blocked: for a port of this
    /// process it blocks (on the port's own loop thread such a request can only time
    /// out); for a port of another process its loop runs in a private mode that holds
    /// only the connection (its ring reads the reply), so none of the loop's own sources,
    /// timers or observers run. A loop that must not wait at all sends with
    /// ``sendRequest(msgid:data:replyTimeout:inModes:completion:)``.
    /// - Throws: ``MessagePortError/replyTimeout(_:)``,
    ///   ``MessagePortError/becameInvalid(_:)`` (the port went away while the request
    ///   waited), ``MessagePortError/tooLarge(size:limit:)``,
    ///   ``MessagePortError/invalidated(_:)``, ``MessagePortError/sendTimeout(_:)``,
    ///   ``MessagePortError/accessDenied(_:)``, ``MessagePortError/tooManyConnections(_:)``,
    ///   ``MessagePortError/transportError(_:reason:)``.
    public func sendRequest(
        msgid: Int32, data: [UInt8], sendTimeout: Duration = .seconds(5), replyTimeout: Duration,
        replyMode: RingRunLoop.Mode? = nil
    ) throws(MessagePortError) -> [UInt8] {
        let sendDeadline = MonotonicInstant.now.advanced(by: sendTimeout)
        let slot = ReplySlot()
        try noticingInvalidation { () throws(MessagePortError) in
            switch target {
            case .thread(let core):
                try core.enqueue(Envelope(msgid: msgid, data: data, reply: slot), deadline: sendDeadline)
            case .process(let connection):
                _ = try connection.send(msgid: msgid, data: data, request: slot, deadline: sendDeadline)
            }
        }
        let replyDeadline = MonotonicInstant.now.advanced(by: replyTimeout)
        return try noticingInvalidation { () throws(MessagePortError) in
            do throws(MessagePortError) {
                if case .process(let connection) = target {
                    // The sender's loop reads its reply, in the reply mode or as if blocked.
                    return try connection.awaitReply(slot, until: replyDeadline, replyMode: replyMode)
                }
                return try slot.wait(until: replyDeadline, replyMode: replyMode, name: name)
            } catch {
                if case .process(let connection) = target { connection.abandon(slot) }
                throw error
            }
        }
    }

    /// Runs `body`; when it finds the port gone, calls the invalidation callback.
    func noticingInvalidation<T>(_ body: () throws(MessagePortError) -> T) throws(MessagePortError) -> T {
        do { return try body() } catch {
            notice(error)
            throw error
        }
    }

    /// Calls the invalidation callback when `error`, from a send or a request, says the
    /// port is gone.
    func notice(_ error: MessagePortError) {
        switch error {
        case .invalidated, .becameInvalid, .accessDenied, .tooManyConnections, .transportError: portWentAway()
        default: break
        }
    }
}
