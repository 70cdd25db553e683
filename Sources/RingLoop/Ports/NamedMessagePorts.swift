import DequeModule
import Dispatch
import Glibc
import Synchronization

/// Why a named message port call failed.
public enum MessagePortError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A local port with this name exists already in the process.
    case nameInUse(String)
    /// No local port has this name.
    case notFound(String)
    /// The port (or the local port a remote one refers to) was invalidated.
    case invalidated(String)
    /// The message is larger than the receiving port accepts.
    case tooLarge(size: Int, limit: Int)
    /// No reply came within the reply timeout; a reply that comes later is dropped.
    case replyTimeout(String)
    /// The receiving port's callback returned no reply to a request.
    case noReply(String)
    /// The message could not be handed to the port (in another process) within the send
    /// timeout.
    case sendTimeout(String)
    /// The name is empty or longer than ``LocalMessagePort/maximumNameLength`` bytes.
    case invalidName(String)

    public var description: String {
        switch self {
        case .nameInUse(let name): "a message port named '\(name)' exists already"
        case .notFound(let name): "no message port named '\(name)'"
        case .invalidated(let name): "the message port '\(name)' was invalidated"
        case .tooLarge(let size, let limit): "a message of \(size) bytes is larger than the port's limit of \(limit) bytes"
        case .replyTimeout(let name): "no reply from '\(name)' within the reply timeout"
        case .noReply(let name): "'\(name)' returned no reply to a request"
        case .sendTimeout(let name): "could not send to '\(name)' within the send timeout"
        case .invalidName(let name):
            "'\(name)' is not a valid port name (1 to \(LocalMessagePort.maximumNameLength) bytes of UTF-8)"
        }
    }
}

/// A named port that receives messages — a message id and bytes — on its loop and may
/// answer them, like `CFMessagePortCreateLocal`. Other threads reach it by name through a
/// ``RemoteMessagePort``.
///
/// The callback runs on the loop's thread, as the port's ``source`` performs: add the
/// source to the modes it should serve (`CFMessagePortCreateRunLoopSource`). Messages are
/// delivered in the order they were sent; what the callback returns answers a request
/// (``RemoteMessagePort/sendRequest(msgid:data:sendTimeout:replyTimeout:)``) and is ignored for a
/// one-way ``RemoteMessagePort/send(msgid:data:timeout:)``.
///
/// ```swift
/// let port = try LocalMessagePort(name: "com.example.main", loop: .current) { msgid, data in
///     msgid == checkIn ? Array("welcome".utf8) : nil
/// }
/// RingRunLoop.current.add(port.source, to: .common)
/// ```
///
/// Within a process a message goes through the loop's inbox (one wake-up of the loop, no
/// copy beyond the bytes themselves). Other processes reach the port by the same name
/// through a `SOCK_SEQPACKET` socket in Linux's abstract namespace (named `rlport:` and the
/// port's name), which the port's loop accepts and receives from through its ring; a
/// message is then one packet of a 16-byte header and its bytes, and a port's limit is at
/// most what a packet can carry (the socket's send buffer, about 200 KiB by default).
public final class LocalMessagePort: Sendable {
    /// The callback: a message id and its bytes in, the reply (to a request) out.
    public typealias Callback = @Sendable (_ msgid: Int32, _ data: [UInt8]) -> [UInt8]?

    /// The longest name accepted, in bytes of UTF-8 (an abstract Unix socket name's room).
    public static let maximumNameLength = 100
    /// The default size limit of one message, in bytes.
    public static let defaultMaximumMessageSize = 64 * 1024

    /// The port's name.
    public let name: String
    /// The loop whose thread runs the callback.
    public let loop: RingRunLoop
    /// The largest message the port accepts, in bytes.
    public let maximumMessageSize: Int
    /// The source to add to the loop's modes; it performs once per wake-up and delivers
    /// every message waiting.
    public let source: LoopPortSource
    let core: PortCore

    /// Creates a port named `name` on `loop`.
    /// - Throws: ``MessagePortError/nameInUse(_:)`` when this or another process has a
    ///   port of that name, ``MessagePortError/invalidName(_:)`` for an empty or too long
    ///   name.
    public init(
        name: String, loop: RingRunLoop, maximumMessageSize: Int = LocalMessagePort.defaultMaximumMessageSize,
        callback: @escaping Callback
    ) throws(MessagePortError) {
        guard !name.isEmpty, name.utf8.count <= Self.maximumNameLength else { throw .invalidName(name) }
        let wake = loop.makeDoorbell()
        let limit = max(0, maximumMessageSize)
        let listener = try PortListener(name: name, loop: loop, limit: limit)
        let core = PortCore(
            name: name, loop: loop, wake: wake, limit: limit, listener: listener, callback: callback)
        do { try PortRegistry.shared.register(core) } catch {
            listener.stop()
            throw error
        }
        let source = LoopPortSource(doorbell: wake) { _ in core.deliver() }
        listener.start(delivering: core, source: source)
        self.name = name
        self.loop = loop
        self.maximumMessageSize = max(0, maximumMessageSize)
        self.core = core
        self.source = source
    }

    deinit {
        core.invalidate()
        source.invalidate()
    }

    /// Whether the port still receives messages.
    public var isValid: Bool { core.isValid }

    /// Stops the port: its name is free again, its source leaves the loop, requests still
    /// waiting fail with ``MessagePortError/invalidated(_:)``, and remote ports that refer
    /// to it call their invalidation callbacks. Safe from any thread.
    public func invalidate() {
        core.invalidate()
        source.invalidate()
    }
}

/// A port that sends to a ``LocalMessagePort`` found by name, like
/// `CFMessagePortCreateRemote`.
public final class RemoteMessagePort: Sendable {
    /// The name looked up.
    public let name: String
    let target: Target
    private let invalidation = ThreadLock<(@Sendable (RemoteMessagePort) -> Void)?>(nil)
    private let watch = ThreadLock<LoopPortSource?>(nil)

    enum Target {
        /// A port of this process.
        case thread(PortCore)
        /// A port of another process, through a connection to its socket.
        case process(ProcessPortConnection)
    }

    /// Looks up the local port named `name`: in this process first, then in the others.
    /// - Throws: ``MessagePortError/notFound(_:)``, ``MessagePortError/invalidName(_:)``.
    public init(name: String) throws(MessagePortError) {
        guard !name.isEmpty, name.utf8.count <= LocalMessagePort.maximumNameLength else { throw .invalidName(name) }
        self.name = name
        if let core = PortRegistry.shared.lookUp(name) {
            target = .thread(core)
            core.addWatcher(self)
        } else {
            target = .process(try ProcessPortConnection(name: name))
        }
    }

    deinit {
        watch.withLock { $0 }?.invalidate()
    }

    /// Whether the local port is still valid (for a port in another process: whether that
    /// process still holds the connection).
    public var isValid: Bool {
        switch target {
        case .thread(let core): core.isValid
        case .process(let connection): connection.isOpen
        }
    }

    /// Calls `body` once when the local port goes (at once if it is gone already): on the
    /// thread that invalidates it, for a port of this process; on a watcher thread when
    /// the process of the port ends or invalidates it.
    public func setInvalidationCallback(_ body: @escaping @Sendable (RemoteMessagePort) -> Void) {
        invalidation.withLock { $0 = body }
        switch target {
        case .thread(let core):
            if !core.isValid { portWentAway() }
        case .process(let connection):
            guard connection.isOpen else { return portWentAway() }
            watch.withLock { watch in
                guard watch == nil else { return }
                watch = PortWatcher.watch(connection.socket) { [weak self] in
                    connection.markClosed()
                    self?.portWentAway()
                }
            }
        }
    }

    func portWentAway() {
        let body = invalidation.withLock { callback -> (@Sendable (RemoteMessagePort) -> Void)? in
            defer { callback = nil }
            return callback
        }
        body?(self)
    }

    /// Sends a one-way message (`CFMessagePortSendRequest` with no reply mode). Within a
    /// process it never blocks: the message is queued for the port's loop, which is woken.
    /// To another process it waits at most `timeout` for room in the connection.
    /// - Throws: ``MessagePortError/tooLarge(size:limit:)``,
    ///   ``MessagePortError/invalidated(_:)``, ``MessagePortError/sendTimeout(_:)``.
    public func send(msgid: Int32, data: [UInt8], timeout: Duration = .seconds(5)) throws(MessagePortError) {
        switch target {
        case .thread(let core):
            try core.enqueue(Envelope(msgid: msgid, data: data, reply: nil))
        case .process(let connection):
            _ = try noticingInvalidation {
                () throws(MessagePortError) in
                try connection.send(
                    msgid: msgid, data: data, request: false, deadline: .now.advanced(by: timeout))
            }
        }
    }

    /// Runs `body`; when it finds the port gone, calls the invalidation callback.
    private func noticingInvalidation<T>(_ body: () throws(MessagePortError) -> T) throws(MessagePortError) -> T {
        do { return try body() } catch {
            if case .invalidated = error { portWentAway() }
            throw error
        }
    }

    /// Sends a request and waits for the callback's reply, at most `replyTimeout` (and at
    /// most `sendTimeout` to hand the request to a port in another process).
    ///
    /// Called on the port's own loop thread, the callback runs at once (a wait there could
    /// never be answered). A reply that comes after the timeout is dropped.
    /// - Throws: ``MessagePortError/replyTimeout(_:)``, ``MessagePortError/noReply(_:)``,
    ///   ``MessagePortError/tooLarge(size:limit:)``, ``MessagePortError/invalidated(_:)``,
    ///   ``MessagePortError/sendTimeout(_:)``.
    public func sendRequest(
        msgid: Int32, data: [UInt8], sendTimeout: Duration = .seconds(5), replyTimeout: Duration
    ) throws(MessagePortError) -> [UInt8] {
        let core: PortCore
        switch target {
        case .thread(let local):
            core = local
        case .process(let connection):
            return try noticingInvalidation { () throws(MessagePortError) in
                try connection.request(
                    msgid: msgid, data: data, sendDeadline: .now.advanced(by: sendTimeout), replyTimeout: replyTimeout)
            }
        }
        if core.loop.isOnLoopThread {
            try core.check(data.count)
            guard let reply = core.callback(msgid, data) else { throw .noReply(name) }
            return reply
        }
        let slot = ReplySlot()
        try core.enqueue(Envelope(msgid: msgid, data: data, reply: .thread(slot)))
        return try slot.wait(timeout: replyTimeout, name: name)
    }
}

/// One message on its way to a local port.
struct Envelope: Sendable {
    var msgid: Int32
    var data: [UInt8]
    var reply: ReplyTarget?
}

/// What a local port and the remote ports that refer to it share.
final class PortCore: Sendable {
    let name: String
    let loop: RingRunLoop
    let wake: LoopDoorbell
    let limit: Int
    let callback: LocalMessagePort.Callback
    let listener: PortListener
    private let state = ThreadLock(State())

    private struct State {
        var mailbox: Deque<Envelope> = []
        var valid = true
        var watchers: [WeakRemote] = []
    }

    private struct WeakRemote {
        weak var port: RemoteMessagePort?
    }

    init(
        name: String, loop: RingRunLoop, wake: LoopDoorbell, limit: Int, listener: PortListener,
        callback: @escaping LocalMessagePort.Callback
    ) {
        self.listener = listener
        self.name = name
        self.loop = loop
        self.wake = wake
        self.limit = limit
        self.callback = callback
    }

    var isValid: Bool { state.withLock { $0.valid } }

    func check(_ size: Int) throws(MessagePortError) {
        guard isValid else { throw .invalidated(name) }
        guard size <= limit else { throw .tooLarge(size: size, limit: limit) }
    }

    func enqueue(_ envelope: Envelope) throws(MessagePortError) {
        guard envelope.data.count <= limit else { throw .tooLarge(size: envelope.data.count, limit: limit) }
        let accepted = state.withLock { state -> Bool in
            guard state.valid else { return false }
            state.mailbox.append(envelope)
            return true
        }
        guard accepted else { throw .invalidated(name) }
        wake.send(0)
    }

    /// Runs the callback for every message waiting (loop thread, from the port's source).
    func deliver() {
        while let envelope = state.withLock({ $0.valid ? $0.mailbox.popFirst() : nil }) {
            let reply = callback(envelope.msgid, envelope.data)
            envelope.reply?.fulfil(reply)
        }
    }

    func addWatcher(_ remote: RemoteMessagePort) {
        state.withLock { state in
            state.watchers.removeAll { $0.port == nil }
            state.watchers.append(WeakRemote(port: remote))
        }
    }

    func invalidate() {
        let taken = state.withLock { state -> (Deque<Envelope>, [WeakRemote])? in
            guard state.valid else { return nil }
            state.valid = false
            defer { (state.mailbox, state.watchers) = ([], []) }
            return (state.mailbox, state.watchers)
        }
        guard let (pending, watchers) = taken else { return }
        PortRegistry.shared.unregister(self)
        listener.stop()
        wake.close()
        for envelope in pending { envelope.reply?.fail(.invalidated(name)) }
        for watcher in watchers { watcher.port?.portWentAway() }
    }
}
