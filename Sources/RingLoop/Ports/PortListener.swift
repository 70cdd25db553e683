import CLibURing
import Glibc
import Logging
import SystemPackage

/// The receiving side of a named port's transport between processes: a `SOCK_SEQPACKET`
/// socket listening in the abstract namespace under the port's name, whose connections
/// the port's loop accepts and reads through its ring.
///
/// Each connection is checked before a byte of it is read: the kernel's record of the peer
/// (`SO_PEERCRED`, `SO_PEERGROUPS`) against the port's ``PeerPolicy``, then the port's
/// connection limits, overall and per user. A refused peer gets a refusal packet and its
/// connection is closed at once, so it holds no memory of the port's.
///
/// The transport's channels follow the port's source: they are performed in exactly the
/// modes the source is in, nested runs included, so a port in a custom mode hears from
/// other processes when that mode runs, and only then. While the port's mode does not
/// run, what arrives waits in the kernel (a connection's two receive buffers, then its
/// socket), and senders are held back by the kernel, not by this process's memory.
final class PortListener: Sendable {
    static let logger = Logger(label: "RingLoop.MessagePort")
    /// The most packets read (and dropped) from a refused peer before its connection is
    /// closed.
    static let refusedPacketsRead = 16
    /// A failed accept (out of descriptors or memory) is tried again after this long.
    static let acceptBackoff: Duration = .milliseconds(100)

    let name: String
    let socket: Int32
    let loop: RingRunLoop
    let limit: Int
    let access: PeerPolicy
    let limits: LocalMessagePort.Limits
    /// The port's user (this process's effective user when it was made): it always has room.
    let ownUser: UInt32
    let namespace: MessagePortNamespace
    /// The socket file a directory namespace's port made (removed when it stops).
    private let file: FileIdentity?
    private let state = ThreadLock(State())

    private struct State {
        var listener: LoopIOChannel?
        var connections: [ObjectIdentifier: PortConnection] = [:]
        var perUser: [UInt32: Int] = [:]
        var stopped = false
        /// Users whose refusal was logged (once each, up to 64).
        var loggedRefusals: Set<UInt32> = []
        /// Lines about what a peer did (a connection dropped, a message too large).
        var peerLines = LogBudget(burst: PortListener.peerLinesPerSecond)
    }

    /// The most lines about peers' doings logged a second, per port.
    static let peerLinesPerSecond = 10

    /// Logs a line about what a peer did, within the port's budget: a peer that breaks the
    /// protocol on every connection cannot flood the log (the next line that goes out
    /// says how many were held back).
    func logAboutPeer(_ level: Logger.Level, _ line: @autoclosure () -> String) {
        guard let held = state.withLock({ $0.peerLines.admit() }) else { return }
        Self.logger.log(level: level, "\(LogBudget.line(line(), afterHolding: held))")
    }

    /// The longest a new port waits for a name whose holder has ended (see
    /// ``MessagePortNamespace/holderIsGone(of:)``), in milliseconds, and its first and
    /// longest pause between tries (doubling).
    static let reclaimTimeoutMilliseconds = 5000
    static let reclaimPausesMilliseconds = (first: 5, longest: 200)

    /// Binds the port's name.
    /// - Throws: ``MessagePortError/nameInUse(_:)`` when another process has a port (or an
    ///   abstract socket) of that name.
    init(
        name: String, loop: RingRunLoop, limit: Int, access: PeerPolicy, limits: LocalMessagePort.Limits,
        namespace: MessagePortNamespace
    ) throws(MessagePortError) {
        do {
            (socket, file) = try namespace.listen(as: name)
        } catch .nameInUse(let name) {
            // A port of this process invalidated from another thread than its loop's
            // keeps its socket until that loop closes it: wait for it, briefly.
            guard PortRegistry.shared.waitForRelease(of: namespace.key(of: name), timeout: .seconds(1)) else {
                throw .nameInUse(name)
            }
            (socket, file) = try Self.reclaim(name, in: namespace)
        } catch {
            throw error
        }
        self.namespace = namespace
        self.name = name
        ownUser = geteuid()
        self.loop = loop
        self.limit = limit
        self.access = access
        self.limits = limits
    }

    /// Binds a name another process may hold: while its holder has ended or is ending,
    /// tries again after a pause (5 ms, doubling to 200 ms) for up to 5 s; a live holder
    /// fails at once with ``MessagePortError/nameInUse(_:)``, as it always did.
    private static func reclaim(
        _ name: String, in namespace: MessagePortNamespace
    ) throws(MessagePortError) -> (socket: Int32, file: FileIdentity?) {
        let deadline = MonotonicInstant.now + .milliseconds(reclaimTimeoutMilliseconds)
        var pause = reclaimPausesMilliseconds.first
        while true {
            do {
                return try namespace.listen(as: name)
            } catch .nameInUse {
                guard MonotonicInstant.now < deadline, namespace.holderIsGone(of: name) else { throw .nameInUse(name) }
            } catch {
                throw error
            }
            var time = timespec(tv_sec: pause / 1000, tv_nsec: (pause % 1000) * 1_000_000)
            var left = timespec()
            while nanosleep(&time, &left) != 0, errno == EINTR { time = left }
            pause = min(pause * 2, reclaimPausesMilliseconds.longest)
        }
    }

    /// Starts accepting on the port's loop, in the modes of the port's source.
    func start(delivering core: PortCore, following portSource: LoopPortSource) {
        loop.onLoopThread { loop in
            // Made under the lock: a `stop()` before this closes the socket itself.
            let listener = self.state.withLock { state -> LoopIOChannel? in
                guard !state.stopped else { return nil }
                let listener = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: self.socket), loop: loop)
                listener.source.follow(portSource)
                // The name is free once the channel has closed the socket.
                listener.descriptorClosed = { PortRegistry.shared.released(self.namespace.key(of: self.name)) }
                state.listener = listener
                return listener
            }
            guard let listener else { return }
            self.accept(on: listener, core: core, portSource: portSource)
        }
    }

    private func accept(on listener: LoopIOChannel, core: PortCore, portSource: LoopPortSource) {
        do {
            try listener.accept { _, completion in
                switch completion.outcome {
                case .accepted(let descriptor):
                    self.adopt(descriptor.rawValue, core: core, portSource: portSource)
                case .failed(let failure) where completion.isFinal && failure != .cancelled && failure != .closed:
                    self.acceptFailed(failure, listener: listener, core: core, portSource: portSource)
                default:
                    break
                }
            }
        } catch {
            acceptFailed(error, listener: listener, core: core, portSource: portSource)
        }
    }

    /// Accepting stopped (out of descriptors, or memory): connections wait in the
    /// listener's backlog, and the accept starts again after a back-off.
    private func acceptFailed(_ failure: IOFailure, listener: LoopIOChannel, core: PortCore, portSource: LoopPortSource) {
        guard !state.withLock({ $0.stopped }) else { return }
        Self.logger.warning("port '\(name)' cannot accept connections (\(failure)); trying again in \(Self.acceptBackoff)")
        let timer = LoopTimer(after: Self.acceptBackoff) { _ in
            guard !self.state.withLock({ $0.stopped }) else { return }
            self.accept(on: listener, core: core, portSource: portSource)
        }
        loop.add(timer, to: .common)
        for mode in loop.allModes where !loop.commonModes.contains(mode) && loop.contains(portSource, in: mode) {
            loop.add(timer, to: mode)
        }
    }

    /// A connection from another process: checked, then served or refused.
    private func adopt(_ descriptor: Int32, core: PortCore, portSource: LoopPortSource) {
        guard let peer = PeerCredentials.ofPeer(of: descriptor) else {
            Glibc.close(descriptor)
            return
        }
        let refusal = state.withLock { state -> PortWire.Refusal? in
            if state.stopped { return .accessDenied }
            if !access.admits(peer) { return .accessDenied }
            if state.connections.count >= limits.maximumConnections
                || state.perUser[peer.uid, default: 0] >= limits.maximumConnectionsPerUser
            {
                return .tooManyConnections
            }
            // Users other than the port's own share what is left of one user's share: the
            // port's user always has room (several other users could fill it otherwise).
            if peer.uid != ownUser {
                let ofOthers = state.perUser.reduce(0) { $0 + ($1.key == ownUser ? 0 : $1.value) }
                if ofOthers >= limits.maximumConnections - limits.maximumConnectionsPerUser { return .tooManyConnections }
            }
            state.perUser[peer.uid, default: 0] += 1
            return nil
        }
        if let refusal { return refuse(descriptor, peer: peer, refusal) }
        let connection = PortConnection(
            descriptor: descriptor, peer: peer, listener: self, core: core, portSource: portSource)
        state.withLock { $0.connections[ObjectIdentifier(connection)] = connection }
        connection.start()
    }

    private func refuse(_ descriptor: Int32, peer: PeerCredentials, _ refusal: PortWire.Refusal) {
        let packet = PortWire.packet(
            PortWire.Header(msgid: refusal.rawValue, kind: .refused, sequence: 0, total: UInt64(limit)))
        // On the port's loop's ring, without waiting: a peer without room misses the
        // reason, not its connection's end.
        if let ring = loop.waitCore() {
            _ = packet.withUnsafeBytes { packet in
                try? PortWire.send(packet, PortWire.noBytes, PortWire.noBytes, to: descriptor, on: ring, until: .now)
            }
            // Unread packets of the peer's would make its end see a reset before the
            // refusal: what a peer sends before it reads its answer (a hello, a request of
            // a few packets) is read and dropped first — but no more than that, so a
            // refused peer that keeps sending cannot keep the port's loop reading.
            shutdown(descriptor, Int32(SHUT_WR))
            PortWire.drainQueued(descriptor, on: ring, atMost: Self.refusedPacketsRead) { _ in }
        }
        Glibc.close(descriptor)
        let first = state.withLock { state -> Bool in
            guard state.loggedRefusals.count < 64 else { return false }
            return state.loggedRefusals.insert(peer.uid).inserted
        }
        if first {
            let why = refusal == .accessDenied ? "not in its access policy (\(access))" : "over its connection limits"
            Self.logger.warning("port '\(name)' refuses a process of uid \(peer.uid) (\(peer)): \(why)")
        }
    }

    /// A connection ended or was dropped (loop thread).
    func remove(_ connection: PortConnection) {
        state.withLock { state in
            guard state.connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
            let uid = connection.peer.uid
            state.perUser[uid, default: 1] -= 1
            if state.perUser[uid] == 0 { state.perUser[uid] = nil }
        }
    }

    /// How many connections from other processes the port serves.
    var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Bytes the port has sent that its peers have not read yet, as the kernel holds them
    /// (`SIOCOUTQ` of each connection): the kernel's side of the unread-replies bound.
    var bytesUnreadByPeers: Int {
        state.withLock { state in
            state.connections.values.reduce(0) { total, connection in
                var queued: Int32 = 0
                let ok = ioctl(connection.channel.fileDescriptor.rawValue, UInt(TIOCOUTQ), &queued) == 0
                return total + (ok ? Int(queued) : 0)
            }
        }
    }

    /// Stops the transport: peers see their connection end at once (the sockets are shut
    /// down here, on any thread); the loop closes them.
    func stop() {
        let taken = state.withLock { state -> (LoopIOChannel?, [PortConnection])? in
            guard !state.stopped else { return nil }
            state.stopped = true
            namespace.removeFile(file, name: name)
            shutdown(socket, Int32(SHUT_RDWR))
            for connection in state.connections.values { shutdown(connection.channel.fileDescriptor.rawValue, Int32(SHUT_RDWR)) }
            if state.listener == nil {
                Glibc.close(socket)
            } else {
                PortRegistry.shared.releasing(namespace.key(of: name))
            }
            defer { (state.listener, state.connections, state.perUser) = (nil, [:], [:]) }
            return (state.listener, Array(state.connections.values))
        }
        guard let (listener, connections) = taken else { return }
        listener?.close()
        for connection in connections { connection.channel.close() }
    }
}
