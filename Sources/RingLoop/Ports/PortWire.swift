import CLibURing
import Glibc

/// The frames named message ports exchange between processes, one per `SOCK_SEQPACKET`
/// packet: a 16-byte header (little-endian) and the message's bytes.
///
/// | bytes | field    | meaning                                                      |
/// |-------|----------|--------------------------------------------------------------|
/// | 0–3   | msgid    | the message id (`Int32`)                                     |
/// | 4–7   | kind     | ``Kind``                                                     |
/// | 8–15  | sequence | a request's number, echoed by its reply; the hello's limit   |
/// | 16…   | data     | the message's bytes                                          |
enum PortWire {
    enum Kind: UInt32 {
        /// A one-way message.
        case message = 1
        /// A request; the receiver answers with `reply` or `noReply`.
        case request = 2
        /// The callback's reply to the request with the same sequence number.
        case reply = 3
        /// The callback returned no reply.
        case noReply = 4
        /// The local port's first packet on a connection: its message size limit.
        case hello = 5
        /// The request was larger than the port accepts.
        case tooLarge = 6
    }

    static let headerSize = 16
    /// The abstract socket name of a port: a prefix, so ports do not collide with other
    /// programs' abstract sockets, and the port's name.
    static let namePrefix = "rlport:"

    struct Frame {
        var msgid: Int32
        var kind: Kind
        var sequence: UInt64
        var data: ArraySlice<UInt8>
    }

    static func encode(msgid: Int32, kind: Kind, sequence: UInt64, data: [UInt8] = []) -> [UInt8] {
        var frame = [UInt8]()
        frame.reserveCapacity(headerSize + data.count)
        withUnsafeBytes(of: msgid.littleEndian) { frame += $0 }
        withUnsafeBytes(of: kind.rawValue.littleEndian) { frame += $0 }
        withUnsafeBytes(of: sequence.littleEndian) { frame += $0 }
        frame += data
        return frame
    }

    /// Decodes a packet; `nil` for one too short or of an unknown kind.
    static func decode(_ packet: [UInt8]) -> Frame? {
        guard packet.count >= headerSize else { return nil }
        return packet.withUnsafeBytes { raw -> Frame? in
            guard let kind = Kind(rawValue: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
            else { return nil }
            return Frame(
                msgid: Int32(littleEndian: raw.loadUnaligned(as: Int32.self)), kind: kind,
                sequence: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                data: packet[headerSize...])
        }
    }

    static func address(of name: String) throws(MessagePortError) -> SocketAddress {
        do { return try SocketAddress.abstract(namePrefix + name) } catch { throw .invalidName(name) }
    }
}

/// The sending side of a connection to a port in another process: the caller's thread
/// sends and waits for replies itself (blocking system calls bounded by the timeouts),
/// one request at a time per remote port.
final class ProcessPortConnection: Sendable {
    let name: String
    let socket: Int32
    private let state = ThreadLock(State())
    /// Held for a whole send or request-and-reply, so exchanges do not interleave.
    private let exchange = ThreadLock<Void>(())
    /// Where replies are received (grown to the largest room asked for).
    private let receiveBuffer = ThreadLock<[UInt8]>([])

    private struct State {
        /// The port's message size limit, from its hello (`nil` until read).
        var limit: Int?
        var sequence: UInt64 = 0
        var closed = false
    }

    /// Connects to the port named `name` in another process.
    /// - Throws: ``MessagePortError/notFound(_:)`` when no process has a port of that name.
    init(name: String) throws(MessagePortError) {
        let address = try PortWire.address(of: name)
        let descriptor: Int32
        do { descriptor = try address.makeSocket(type: Int32(SOCK_SEQPACKET.rawValue)) } catch {
            throw .notFound(name)
        }
        let connected = address.withSockaddr { Glibc.connect(descriptor, $0, $1) }
        guard connected == 0 else {
            Glibc.close(descriptor)
            throw .notFound(name)
        }
        self.name = name
        self.socket = descriptor
    }

    deinit { Glibc.close(socket) }

    /// Whether the port's process still holds the connection (a poll, no wait).
    var isOpen: Bool {
        if state.withLock({ $0.closed }) { return false }
        var entry = pollfd(fd: socket, events: PortWatcher.peerClosed, revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    func markClosed() { state.withLock { $0.closed = true } }

    /// Sends one message (a request when `request`), after reading the port's hello.
    /// Returns the request's sequence number.
    @discardableResult
    func send(msgid: Int32, data: [UInt8], request: Bool, deadline: MonotonicInstant) throws(MessagePortError) -> UInt64 {
        try serialized { () throws(MessagePortError) -> UInt64 in
            let limit = try readHello(deadline: deadline)
            guard data.count <= limit else { throw .tooLarge(size: data.count, limit: limit) }
            let sequence = state.withLock { state -> UInt64 in
                state.sequence += 1
                return state.sequence
            }
            let frame = PortWire.encode(
                msgid: msgid, kind: request ? .request : .message, sequence: sequence, data: data)
            try write(frame, deadline: deadline)
            return sequence
        }
    }

    /// Sends a request and waits for its reply; replies to earlier requests that timed
    /// out are dropped on the way.
    func request(msgid: Int32, data: [UInt8], sendDeadline: MonotonicInstant, replyTimeout: Duration) throws(MessagePortError) -> [UInt8] {
        try serialized { () throws(MessagePortError) -> [UInt8] in
            let limit = try readHello(deadline: sendDeadline)
            guard data.count <= limit else { throw .tooLarge(size: data.count, limit: limit) }
            let sequence = state.withLock { state -> UInt64 in
                state.sequence += 1
                return state.sequence
            }
            try write(PortWire.encode(msgid: msgid, kind: .request, sequence: sequence, data: data), deadline: sendDeadline)
            let deadline = MonotonicInstant.now.advanced(by: replyTimeout)
            while true {
                guard let frame = try readFrame(capacity: max(65_536, limit) + PortWire.headerSize, deadline: deadline) else {
                    throw .replyTimeout(name)
                }
                guard frame.sequence == sequence else { continue }  // a late reply
                switch frame.kind {
                case .reply: return Array(frame.data)
                case .noReply: throw .noReply(name)
                case .tooLarge: throw .tooLarge(size: data.count, limit: limit)
                default: continue
                }
            }
        }
    }

    private func serialized<T>(_ body: () throws(MessagePortError) -> T) throws(MessagePortError) -> T {
        let result = exchange.locked { () -> Result<T, MessagePortError> in
            do throws(MessagePortError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The limit from the port's hello, read on first use (the port sends it when its
    /// loop accepts the connection).
    private func readHello(deadline: MonotonicInstant) throws(MessagePortError) -> Int {
        if let limit = state.withLock({ $0.limit }) { return limit }
        guard let frame = try readFrame(capacity: PortWire.headerSize, deadline: deadline) else {
            throw .sendTimeout(name)
        }
        guard frame.kind == .hello else { throw .invalidated(name) }
        let limit = Int(clamping: frame.sequence)
        state.withLock { $0.limit = limit }
        return limit
    }

    /// Reads one packet of at most `capacity` bytes before `deadline`; `nil` at the
    /// deadline. A longer packet (a reply larger than the room made for it) is consumed
    /// and reported as too large.
    private func readFrame(capacity: Int, deadline: MonotonicInstant) throws(MessagePortError) -> PortWire.Frame? {
        while true {
            guard try waitFor(Int16(POLLIN), until: deadline) else { return nil }
            // One buffer per connection, reused: replies need no allocation of their room.
            let (count, packet) = receiveBuffer.withLock { buffer -> (Int, [UInt8]) in
                if buffer.count < capacity { buffer = [UInt8](repeating: 0, count: capacity) }
                let count = buffer.withUnsafeMutableBytes {
                    recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_TRUNC))
                }
                return (count, count > 0 && count <= buffer.count ? Array(buffer[..<count]) : [])
            }
            if count < 0, errno == EAGAIN || errno == EINTR { continue }
            if count > capacity {
                throw .tooLarge(size: count - PortWire.headerSize, limit: capacity - PortWire.headerSize)
            }
            guard count > 0, let frame = PortWire.decode(packet) else {
                markClosed()
                throw .invalidated(name)
            }
            return frame
        }
    }

    private func write(_ frame: [UInt8], deadline: MonotonicInstant) throws(MessagePortError) {
        while true {
            let sent = frame.withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            if sent == frame.count { return }
            switch errno {
            case EAGAIN, EINTR:
                guard try waitFor(Int16(POLLOUT), until: deadline) else { throw .sendTimeout(name) }
            case EMSGSIZE:
                throw .tooLarge(size: frame.count - PortWire.headerSize, limit: frame.count - PortWire.headerSize - 1)
            default:
                markClosed()
                throw .invalidated(name)
            }
        }
    }

    /// Waits for `events` on the socket until `deadline`; `false` at the deadline.
    private func waitFor(_ events: Int16, until deadline: MonotonicInstant) throws(MessagePortError) -> Bool {
        while true {
            let now = MonotonicInstant.now
            guard now < deadline else { return false }
            let milliseconds = Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            var entry = pollfd(fd: socket, events: events, revents: 0)
            let result = poll(&entry, 1, milliseconds)
            if result < 0, errno == EINTR { continue }
            if result == 0 { continue }
            if entry.revents & events != 0 { return true }
            markClosed()
            throw .invalidated(name)
        }
    }
}
