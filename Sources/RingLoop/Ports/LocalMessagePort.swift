import Glibc

/// A named port that receives messages — a message id and bytes — on its loop and may
/// answer them, like `CFMessagePortCreateLocal`. Other threads and processes reach it by
/// name through a ``RemoteMessagePort``.
///
/// The callback runs on the loop's thread, as the port's ``source`` performs: add the
/// source to the modes it should serve (`CFMessagePortCreateRunLoopSource`); messages from
/// other processes follow the source into those modes too. Messages from one sender are
/// delivered in the order they were sent; what the callback returns answers a request
/// (`nil` is an empty reply, as in CF) and is ignored for a one-way message.
///
/// ```swift
/// let port = try LocalMessagePort(name: "com.example.main", loop: .current) { msgid, data in
///     msgid == checkIn ? Array("welcome".utf8) : nil
/// }
/// RingRunLoop.current.add(port.source, to: .common)
/// ```
///
/// Within a process a message goes through the port's mailbox: one queue and one lock, no
/// copy beyond the bytes themselves, and one wake-up of the loop for a burst of messages
/// (the port's doorbell rings when the mailbox was empty). Other processes reach the port by the same name
/// through a `SOCK_SEQPACKET` socket in Linux's abstract namespace (`rlport:` and the
/// port's name), whose connections the port's loop accepts and receives from through its
/// ring, in packets of at most 16 KiB; the package's README ("Security") says who can
/// reach a port and what every limit is.
///
/// **Who may send.** The abstract namespace has no permissions: any process in the same
/// network namespace can connect. The port therefore checks each connection's peer
/// credentials (`SO_PEERCRED`, from the kernel) against `access` before reading a byte of
/// it — by default only processes of the port's own user — and refuses the rest
/// (``MessagePortError/accessDenied(_:)`` at the sender). The callback learns who sent each
/// message through ``ReceivedMessage/sender`` when made with
/// ``init(name:loop:maximumMessageSize:access:limits:namespace:receiver:)``.
///
/// **Bounds.** Every queue has a limit (``Limits``): messages waiting for the callback, a
/// message's size, connections per port and per user, replies a peer has not read. A full
/// queue holds the sender back, and it fails with ``MessagePortError/sendTimeout(_:)``
/// when its send timeout passes first, as `CFMessagePortSendRequest` does.
public final class LocalMessagePort: Sendable {
    /// The callback: a message id and its bytes in, the reply (to a request) out.
    public typealias Callback = @Sendable (_ msgid: Int32, _ data: [UInt8]) -> [UInt8]?
    /// The callback with the whole message: id, bytes and sender.
    public typealias Receiver = @Sendable (ReceivedMessage) -> [UInt8]?

    /// The longest name accepted, in bytes of UTF-8 (an abstract Unix socket name's room).
    public static let maximumNameLength = 100
    /// The default size limit of one message, in bytes.
    public static let defaultMaximumMessageSize = 64 * 1024

    /// The bounds of a port's queues and connections. Each has a default that suits a
    /// device's service; all hold for a hostile peer.
    public struct Limits: Sendable, Hashable {
        /// Messages (from threads of this process) waiting for the callback; a sender
        /// finding the mailbox full waits up to its send timeout.
        public var maximumQueuedMessages = 1024
        /// Bytes of those messages (a single message larger than this is still taken when
        /// the mailbox is empty).
        public var maximumQueuedBytes = 16 * 1024 * 1024
        /// Connections from other processes at once. Users other than the port's own
        /// have at most this less ``maximumConnectionsPerUser`` together, so the port's
        /// own user always has room, however many other users connect.
        public var maximumConnections = 256
        /// Connections from the processes of one user at once.
        public var maximumConnectionsPerUser = 64
        /// Reply bytes one connection has not read yet: past this the port stops reading
        /// that connection's requests until the peer catches up, and its sends wait.
        public var maximumUnreadReplyBytes = 1024 * 1024

        /// The default limits.
        public init() {}
    }

    /// The port's name.
    public let name: String
    /// The loop whose thread runs the callback.
    public let loop: RingRunLoop
    /// The largest message the port accepts, in bytes.
    public let maximumMessageSize: Int
    /// Who may send from another process.
    public let access: PeerPolicy
    /// Where other processes find the port.
    public let namespace: MessagePortNamespace
    /// The port's queue and connection limits.
    public let limits: Limits
    /// The source to add to the loop's modes; it performs once per wake-up and delivers
    /// every message waiting.
    public let source: LoopPortSource
    let core: PortCore
    private let invalidation = ThreadLock<InvalidationState>(.waiting(nil))

    private enum InvalidationState {
        case waiting((@Sendable (LocalMessagePort) -> Void)?)
        case done
    }

    /// Creates a port named `name` on `loop` whose callback gets the message id and bytes.
    /// See ``init(name:loop:maximumMessageSize:access:limits:namespace:receiver:)``.
    public convenience init(
        name: String, loop: RingRunLoop, maximumMessageSize: Int = LocalMessagePort.defaultMaximumMessageSize,
        access: PeerPolicy = .sameUser, limits: Limits = Limits(), namespace: MessagePortNamespace = .abstract,
        callback: @escaping Callback
    ) throws(MessagePortError) {
        try self.init(
            name: name, loop: loop, maximumMessageSize: maximumMessageSize, access: access, limits: limits,
            namespace: namespace
        ) { message in callback(message.msgid, message.data) }
    }

    /// Creates a port named `name` on `loop`.
    /// - Parameters:
    ///   - name: 1 to ``maximumNameLength`` bytes of UTF-8, unique among the ports of
    ///     every process in the network namespace.
    ///   - loop: The loop whose thread runs `receiver`.
    ///   - maximumMessageSize: The largest message accepted; larger ones fail at the sender
    ///     with ``MessagePortError/tooLarge(size:limit:)``.
    ///   - access: The processes served, checked at connect (default: the same user).
    ///   - limits: The bounds of the port's queues and connections.
    ///   - namespace: Where other processes find the port (default: the abstract
    ///     namespace).
    ///   - receiver: Called on the loop's thread with each message; returns the reply to a
    ///     request (`nil`: an empty reply).
    /// - Throws: ``MessagePortError/nameInUse(_:)`` when this or another process has a
    ///   port of that name, ``MessagePortError/invalidName(_:)`` for an empty or too long
    ///   name. A name whose holder has ended (a process killed with SIGKILL leaves its
    ///   socket to the kernel for a moment) is waited for: tried again after 5 ms, doubling
    ///   to 200 ms, for up to 5 s, so a restarted server takes its name back; a name a
    ///   live process holds fails at once.
    public init(
        name: String, loop: RingRunLoop, maximumMessageSize: Int = LocalMessagePort.defaultMaximumMessageSize,
        access: PeerPolicy = .sameUser, limits: Limits = Limits(), namespace: MessagePortNamespace = .abstract,
        receiver: @escaping Receiver
    ) throws(MessagePortError) {
        guard !name.isEmpty, name.utf8.count <= Self.maximumNameLength else { throw .invalidName(name) }
        let doorbell = loop.makeDoorbell()
        let limit = max(0, maximumMessageSize)
        let listener = try PortListener(
            name: name, loop: loop, limit: limit, access: access, limits: limits, namespace: namespace)
        let core = PortCore(
            name: name, loop: loop, doorbell: doorbell, limit: limit, limits: limits, listener: listener,
            receiver: receiver)
        do { try PortRegistry.shared.register(core) } catch {
            listener.stop()
            throw error
        }
        let source = LoopPortSource(doorbell: doorbell) { _ in core.deliver() }
        listener.start(delivering: core, following: source)
        self.name = name
        self.loop = loop
        self.maximumMessageSize = limit
        self.access = access
        self.namespace = namespace
        self.limits = limits
        self.core = core
        self.source = source
    }

    deinit {
        invalidate()
    }

    /// Whether the port still receives messages.
    public var isValid: Bool { core.isValid }

    /// Stops the port: its name is free again, its source leaves the loop, requests still
    /// waiting fail with ``MessagePortError/becameInvalid(_:)``, remote ports that refer to
    /// it call their invalidation callbacks, and so does this port's
    /// (``setInvalidationCallback(_:)``). Safe from any thread.
    public func invalidate() {
        core.invalidate()
        source.invalidate()
        let body = invalidation.withLock { state -> (@Sendable (LocalMessagePort) -> Void)? in
            guard case .waiting(let body) = state else { return nil }
            state = .done
            return body
        }
        body?(self)
    }

    /// Calls `body` once when the port is invalidated, on the thread that invalidates it
    /// (`CFMessagePortSetInvalidationCallBack`); at once if it is invalid already.
    public func setInvalidationCallback(_ body: @escaping @Sendable (LocalMessagePort) -> Void) {
        let runNow = invalidation.withLock { state -> Bool in
            guard case .waiting = state else { return true }
            state = .waiting(body)
            return false
        }
        if runNow { body(self) }
    }
}

/// A message as a ``LocalMessagePort``'s receiver gets it.
public struct ReceivedMessage: Sendable, Hashable {
    /// The message id the sender gave.
    public var msgid: Int32
    /// The message's bytes.
    public var data: [UInt8]
    /// Whether the sender waits for a reply.
    public var isRequest: Bool
    /// Who sent it.
    public var sender: MessageSender
}

/// Where a message came from.
public enum MessageSender: Sendable, Hashable {
    /// A thread of this process.
    case thisProcess
    /// Another process, as the kernel recorded it when that process connected.
    case process(PeerCredentials)
}
