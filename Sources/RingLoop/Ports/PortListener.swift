import CLibURing
import Glibc
import Logging

/// The receiving side of a named port's transport between processes: a `SOCK_SEQPACKET`
/// socket listening in the abstract namespace under the port's name, whose connections
/// the port's loop accepts and receives from through its ring (a multishot accept, and a
/// multishot receive into a provided-buffer ring per connection). Messages go into the
/// port's mailbox, and its callback runs when the port's source performs, in the modes
/// the source is in; the transport's own sources are in the loop's common modes.
final class PortListener: Sendable {
    static let logger = Logger(label: "RingLoop.MessagePort")

    let name: String
    let socket: Int32
    let loop: RingRunLoop
    let limit: Int
    private let state = ThreadLock(State())

    private struct State {
        var listener: LoopIOChannel?
        var connections: [Int32: LoopIOChannel] = [:]
        var stopped = false
    }

    /// Binds the port's name.
    /// - Throws: ``MessagePortError/nameInUse(_:)`` when another process has a port (or an
    ///   abstract socket) of that name.
    init(name: String, loop: RingRunLoop, limit: Int) throws(MessagePortError) {
        let address = try PortWire.address(of: name)
        func bind() throws(MessagePortError) -> Int32 {
            do {
                return try address.makeListeningSocket(type: Int32(SOCK_SEQPACKET.rawValue), backlog: 64)
            } catch .system(let errno) where errno == .addressInUse {
                throw .nameInUse(name)
            } catch {
                throw .invalidName(name)
            }
        }
        do {
            socket = try bind()
        } catch .nameInUse(let name) {
            // A port of this process invalidated from another thread than its loop's
            // keeps its socket until that loop closes it: wait for it, briefly.
            guard PortRegistry.shared.waitForRelease(of: name, timeout: .seconds(1)) else { throw .nameInUse(name) }
            socket = try bind()
        }
        self.name = name
        self.loop = loop
        self.limit = limit
    }

    /// Starts accepting on the port's loop.
    func start(delivering core: PortCore, source: LoopPortSource) {
        loop.onLoopThread { loop in
            // Made under the lock: a `stop()` before this closes the socket itself.
            let listener = self.state.withLock { state -> LoopIOChannel? in
                guard !state.stopped else { return nil }
                let listener = LoopIOChannel(fileDescriptor: self.socket, loop: loop) { _, completion in
                    switch completion.outcome {
                    case .accepted(let descriptor):
                        self.adopt(descriptor, core: core, source: source)
                    case .failed(let failure) where completion.isFinal && failure != .cancelled:
                        Self.logger.error("port '\(self.name)' stops accepting connections: \(failure)")
                    default:
                        break
                    }
                }
                // The name is free once the channel has closed the socket.
                listener.descriptorClosed = { PortRegistry.shared.released(self.name) }
                state.listener = listener
                return listener
            }
            guard let listener else { return }
            loop.add(listener.source, to: .common)
            do { try listener.accept() } catch {
                Self.logger.error("port '\(self.name)' cannot accept connections: \(error)")
            }
        }
    }

    /// A connection from another process: say hello (the size limit), then receive.
    private func adopt(_ descriptor: Int32, core: PortCore, source: LoopPortSource) {
        let connection = LoopIOChannel(fileDescriptor: descriptor, loop: loop) { connection, completion in
            switch completion.outcome {
            case .bytes(let packet):
                self.received(packet, on: connection, core: core, source: source)
            case .endOfFile, .failed:
                self.drop(connection)
            default:
                break
            }
        }
        let adopted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.connections[descriptor] = connection
            return true
        }
        guard adopted else { return connection.close() }
        loop.add(connection.source, to: .common)
        do {
            try connection.send(PortWire.encode(msgid: 0, kind: .hello, sequence: UInt64(limit)))
            try connection.receive(bufferCount: 4, bufferSize: limit + PortWire.headerSize + 1)
        } catch {
            Self.logger.error("port '\(name)' drops a connection: \(error)")
            drop(connection)
        }
    }

    private func received(_ packet: [UInt8], on connection: LoopIOChannel, core: PortCore, source: LoopPortSource) {
        guard let frame = PortWire.decode(packet) else {
            Self.logger.error("port '\(name)' drops a connection that sent a malformed packet of \(packet.count) bytes")
            return drop(connection)
        }
        guard packet.count <= limit + PortWire.headerSize else {
            if frame.kind == .request {
                _ = try? connection.send(PortWire.encode(msgid: frame.msgid, kind: .tooLarge, sequence: frame.sequence))
            }
            return
        }
        switch frame.kind {
        case .message:
            try? core.enqueue(Envelope(msgid: frame.msgid, data: Array(frame.data), reply: nil))
        case .request:
            let reply = ReplyTarget.process(connection, msgid: frame.msgid, sequence: frame.sequence)
            try? core.enqueue(Envelope(msgid: frame.msgid, data: Array(frame.data), reply: reply))
        default:
            return
        }
        // When the port's source is in the mode running now, its callback runs here, in
        // this callout, rather than one pass later (the source's own perform then finds
        // the mailbox empty).
        if loop.isInRunningMode(source) { core.deliver() }
    }

    private func drop(_ connection: LoopIOChannel) {
        state.withLock { _ = $0.connections.removeValue(forKey: connection.fileDescriptor) }
        connection.close()
    }

    /// Stops the transport: peers see their connection end at once (the sockets are shut
    /// down here, on any thread); the loop closes them.
    func stop() {
        let taken = state.withLock { state -> (LoopIOChannel?, [LoopIOChannel])? in
            guard !state.stopped else { return nil }
            state.stopped = true
            shutdown(socket, Int32(SHUT_RDWR))
            for descriptor in state.connections.keys { shutdown(descriptor, Int32(SHUT_RDWR)) }
            if state.listener == nil {
                Glibc.close(socket)
            } else {
                PortRegistry.shared.releasing(name)
            }
            defer { (state.listener, state.connections) = (nil, [:]) }
            return (state.listener, Array(state.connections.values))
        }
        guard let (listener, connections) = taken else { return }
        listener?.close()
        for connection in connections { connection.close() }
    }
}

/// Where a request's reply goes: a thread of this process waiting for it, or a
/// connection from another process.
enum ReplyTarget: Sendable {
    case thread(ReplySlot)
    case process(LoopIOChannel, msgid: Int32, sequence: UInt64)

    /// Hands over the callback's reply (on the port's loop thread).
    func fulfil(_ reply: [UInt8]?) {
        switch self {
        case .thread(let slot):
            slot.fulfil(reply)
        case .process(let connection, let msgid, let sequence):
            // A connection closed meanwhile drops the reply.
            let frame = PortWire.encode(
                msgid: msgid, kind: reply == nil ? .noReply : .reply, sequence: sequence, data: reply ?? [])
            _ = try? connection.send(frame)
        }
    }

    /// Fails the request (the port went away; a connection learns it as its end).
    func fail(_ error: MessagePortError) {
        if case .thread(let slot) = self { slot.fail(error) }
    }
}
