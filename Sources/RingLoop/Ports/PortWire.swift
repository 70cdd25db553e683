import CLibURing
import Glibc

/// The packets named message ports exchange between processes, one per `SOCK_SEQPACKET`
/// packet: a 24-byte header (little-endian) and up to ``fragmentCapacity`` bytes of a
/// message. A longer message is cut into fragments sent back to back, each with the same
/// header but for its flags.
///
/// | bytes | field    | meaning                                                           |
/// |-------|----------|-------------------------------------------------------------------|
/// | 0–3   | msgid    | the message id (`Int32`); a hello's protocol version; a refusal's reason |
/// | 4–5   | kind     | ``Kind``                                                          |
/// | 6–7   | flags    | bit 0: more fragments of this message follow                      |
/// | 8–15  | sequence | the message's number on its connection, echoed by a request's reply |
/// | 16–23 | total    | the whole message's size in bytes; a hello's or a refusal's limit |
/// | 24…   | data     | this fragment's bytes                                             |
///
/// Everything here is what a peer sends, so every field is checked before use: a packet
/// shorter than the header, an unknown kind or flag, a fragment that runs past its
/// message's `total`, or a message that ends short of it is a ``Violation``, and a
/// message larger than the receiver's limit is skipped (never allocated) and reported
/// once. A new sequence number abandons a message still being assembled: a sender that
/// gave up half-way (its send timeout expired) loses only that message.
package enum PortWire {
    /// What a packet carries.
    package enum Kind: UInt16, Sendable {
        /// A one-way message.
        case message = 1
        /// A request; the receiver answers with `reply` (or `tooLarge`).
        case request = 2
        /// The callback's reply to the request with the same sequence number.
        case reply = 3
        /// The port's first packet on an accepted connection: its protocol version
        /// (msgid) and message size limit (total).
        case hello = 5
        /// The request with the same sequence number was larger than the port's limit
        /// (total).
        case tooLarge = 6
        /// The port refused the connection; msgid says why (``Refusal``). The port closes
        /// the connection after it.
        case refused = 7
    }

    /// Why a port refused a connection.
    package enum Refusal: Int32, Sendable {
        /// The peer's user and groups are not in the port's access policy.
        case accessDenied = 1
        /// The port (or the peer's user) has as many connections as it allows.
        case tooManyConnections = 2
    }

    package static let headerSize = 24
    /// The largest packet either side sends: the header and one fragment.
    package static let packetSize = 16 * 1024
    /// Bytes of a message in one packet.
    package static let fragmentCapacity = packetSize - headerSize
    /// The protocol version a hello carries.
    package static let version: Int32 = 2
    /// `POLLRDHUP` (glibc declares it only with `_GNU_SOURCE`): the peer closed its end.
    static let peerClosed: Int16 = 0x2000
    /// Flag: more fragments of the same message follow.
    static let moreFragments: UInt16 = 1

    /// The abstract socket name of a port: a prefix, so ports do not collide with other
    /// programs' abstract sockets, and the port's name.
    package static let namePrefix = "rlport:"

    /// One packet's header.
    package struct Header: Sendable, Equatable {
        package var msgid: Int32
        package var kind: Kind
        package var more: Bool
        package var sequence: UInt64
        package var total: UInt64

        package init(msgid: Int32, kind: Kind, more: Bool = false, sequence: UInt64, total: UInt64) {
            self.msgid = msgid
            self.kind = kind
            self.more = more
            self.sequence = sequence
            self.total = total
        }

        /// Calls `body` with the header's ``PortWire/headerSize`` bytes as they go on the
        /// wire (the table above), written on the stack.
        package func withEncodedBytes<Result, Failure: Error>(
            _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            return try withUnsafeMutableBytes(of: &words) { bytes throws(Failure) -> Result in
                bytes.storeBytes(of: msgid.littleEndian, toByteOffset: 0, as: Int32.self)
                bytes.storeBytes(of: kind.rawValue.littleEndian, toByteOffset: 4, as: UInt16.self)
                bytes.storeBytes(of: (more ? PortWire.moreFragments : 0).littleEndian, toByteOffset: 6, as: UInt16.self)
                bytes.storeBytes(of: sequence.littleEndian, toByteOffset: 8, as: UInt64.self)
                bytes.storeBytes(of: total.littleEndian, toByteOffset: 16, as: UInt64.self)
                return try body(UnsafeRawBufferPointer(bytes))
            }
        }
    }

    /// A whole message, reassembled.
    package struct Message: Sendable, Equatable {
        package var msgid: Int32
        package var kind: Kind
        package var sequence: UInt64
        package var data: [UInt8]
    }

    /// A packet that breaks the protocol: the receiver ends the connection.
    package enum Violation: Error, Equatable, CustomStringConvertible {
        case shortPacket(Int)
        case oversizedPacket(Int)
        case unknownKind(UInt16)
        case unknownFlags(UInt16)
        case fragmentPastTotal(sequence: UInt64)
        case endedShort(sequence: UInt64, got: Int, total: UInt64)

        package var description: String {
            switch self {
            case .shortPacket(let count): "a packet of \(count) bytes, shorter than the \(PortWire.headerSize)-byte header"
            case .oversizedPacket(let count): "a packet of \(count) bytes or more, larger than \(PortWire.packetSize)"
            case .unknownKind(let kind): "a packet of unknown kind \(kind)"
            case .unknownFlags(let flags): "a packet with unknown flags 0x\(String(flags, radix: 16))"
            case .fragmentPastTotal(let sequence): "message \(sequence) runs past the size its header declares"
            case .endedShort(let sequence, let got, let total):
                "message \(sequence) ended after \(got) of the \(total) bytes its header declares"
            }
        }
    }

    /// Decodes a packet's header.
    package static func header(of packet: UnsafeRawBufferPointer) throws(Violation) -> Header {
        guard packet.count >= headerSize else { throw .shortPacket(packet.count) }
        let rawKind = UInt16(littleEndian: packet.loadUnaligned(fromByteOffset: 4, as: UInt16.self))
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        let flags = UInt16(littleEndian: packet.loadUnaligned(fromByteOffset: 6, as: UInt16.self))
        guard flags & ~moreFragments == 0 else { throw .unknownFlags(flags) }
        return Header(
            msgid: Int32(littleEndian: packet.loadUnaligned(as: Int32.self)), kind: kind,
            more: flags & moreFragments != 0,
            sequence: UInt64(littleEndian: packet.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
            total: UInt64(littleEndian: packet.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
    }

    /// One packet: `header` and `data` (at most ``fragmentCapacity`` bytes).
    package static func packet(_ header: Header, _ data: ArraySlice<UInt8> = []) -> [UInt8] {
        precondition(data.count <= fragmentCapacity, "a fragment of \(data.count) bytes")
        var packet = [UInt8]()
        packet.reserveCapacity(headerSize + data.count)
        header.withEncodedBytes { packet += $0 }
        packet += data
        return packet
    }

    /// The packets of one message, in order: one for a message up to
    /// ``fragmentCapacity`` bytes (an empty one included), more for a longer one.
    package static func packets(msgid: Int32, kind: Kind, sequence: UInt64, data: [UInt8]) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        data.withUnsafeBytes { bytes in
            forEachPacket(msgid: msgid, kind: kind, sequence: sequence, data: bytes) { header, fragment in
                packets.append(Array(header) + fragment)
            }
        }
        return packets
    }

    /// The packets of one message as ``packets(msgid:kind:sequence:data:)`` cuts them,
    /// without building any: `body` gets each packet's encoded header (on the stack) and
    /// its fragment (a view into `data`), to be gathered by one `sendmsg`.
    package static func forEachPacket<Failure: Error>(
        msgid: Int32, kind: Kind, sequence: UInt64, data: UnsafeRawBufferPointer,
        _ body: (_ header: UnsafeRawBufferPointer, _ fragment: UnsafeRawBufferPointer) throws(Failure) -> Void
    ) throws(Failure) {
        let _: Never? = try forEachPacket(msgid: msgid, kind: kind, sequence: sequence, lead: noBytes, body: data) {
            header, _, fragment throws(Failure) in
            try body(header, fragment)
            return nil
        }
    }

    /// The packets of one message whose bytes are `lead` then `body`, cut as
    /// ``packets(msgid:kind:sequence:data:)`` cuts the two joined, without joining them:
    /// `each` gets each packet's encoded header (on the stack) and its fragment in two
    /// parts, the stretch of `lead` it holds and the stretch of `body` (views into them,
    /// either possibly empty), to be gathered by one `sendmsg`. The first packet for which
    /// `each` returns a value ends the loop (a sender whose packet found the connection
    /// closed sends no more of the message), and that value is returned; `nil` when every
    /// packet was given. A sender whose messages
    /// share a body, each with a lead of its own (the event server's batches: the client's
    /// sequence number, then a frame's encoding every client is sent), sends one without
    /// copying it into a message of its own.
    package static func forEachPacket<Stop, Failure: Error>(
        msgid: Int32, kind: Kind, sequence: UInt64, lead: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer,
        _ each: (
            _ header: UnsafeRawBufferPointer, _ fromLead: UnsafeRawBufferPointer, _ fromBody: UnsafeRawBufferPointer
        ) throws(Failure) -> Stop?
    ) throws(Failure) -> Stop? {
        let total = lead.count + body.count
        var start = 0
        repeat {
            let end = min(total, start + fragmentCapacity)
            let header = Header(msgid: msgid, kind: kind, more: end < total, sequence: sequence, total: UInt64(total))
            let stop = try header.withEncodedBytes { encoded throws(Failure) in
                try each(
                    encoded, stretch(of: lead, from: start, to: end),
                    stretch(of: body, from: start - lead.count, to: end - lead.count))
            }
            if let stop { return stop }
            start = end
        } while start < total
        return nil
    }

    /// No bytes: an empty part of a packet.
    static var noBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: nil, count: 0) }

    /// The bytes of `buffer` from `start` to `end`, both clamped to it (empty when the two
    /// do not overlap it).
    private static func stretch(of buffer: UnsafeRawBufferPointer, from start: Int, to end: Int) -> UnsafeRawBufferPointer {
        let lower = min(max(start, 0), buffer.count)
        let upper = min(max(end, lower), buffer.count)
        return UnsafeRawBufferPointer(rebasing: buffer[lower..<upper])
    }

    /// Reads the packets still queued on `socket` without waiting, calling `body` with
    /// each, until none is left, the stream ended or `limit` reads were tried: each read
    /// an `IORING_OP_RECV` with `MSG_DONTWAIT` on `core`'s ring, submitted and completed
    /// in one call into the kernel (``WaitCore/performAtOnce(until:_:)``). For a receive
    /// that ended with `ECONNRESET`: the kernel reports a peer that closed with data of
    /// ours unread before the packets it sent us, and those packets still matter (the last
    /// one-way messages of a peer that sent and closed; a refusal). Calling thread:
    /// `core`'s (the port's loop).
    static func drainQueued(
        _ socket: Int32, on core: WaitCore, atMost limit: Int = .max, _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: packetSize + 1, alignment: 8)
        defer { buffer.deallocate() }
        var read = 0
        while read < limit {
            read += 1
            // `.now`: a read the kernel does not finish as it takes it is cancelled at once.
            let result = try? core.performAtOnce(until: .now) { sqe in
                io_uring_prep_recv(sqe, socket, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            }
            guard let count = result else { return }
            if count == -EINTR || count == -ECONNRESET { continue }
            guard count > 0 else { return }
            body(UnsafeRawBufferPointer(rebasing: buffer[..<Int(count)]))
        }
    }

}

extension PortWire {
    /// Puts messages back together from their packets, for one connection, with a limit
    /// on a message's size: memory for a message is reserved only once its declared size
    /// is known to be within the limit.
    package struct Assembler: Sendable {
        /// What a packet completed.
        package enum Output: Sendable, Equatable {
            /// Nothing yet: more fragments follow.
            case none
            /// A whole message.
            case message(Message)
            /// The first packet of a message larger than the limit (its other fragments
            /// are dropped as they come).
            case tooLarge(Header)
            /// A control packet (hello, refusal) or another packet with no data to
            /// assemble, as it came.
            case control(Header)
        }

        /// The largest message accepted, in bytes.
        package let limit: Int
        private var partial: (header: Header, data: [UInt8])?
        /// A message over the limit whose remaining fragments are dropped.
        private var skipping: UInt64?

        package init(limit: Int) { self.limit = max(0, limit) }

        /// Whether a message is half assembled.
        package var isAssembling: Bool { partial != nil }

        /// Takes one packet as received.
        package mutating func take(_ packet: UnsafeRawBufferPointer) throws(Violation) -> Output {
            guard packet.count <= PortWire.packetSize else { throw .oversizedPacket(packet.count) }
            let header = try PortWire.header(of: packet)
            let data = UnsafeRawBufferPointer(rebasing: packet[PortWire.headerSize...])
            switch header.kind {
            case .hello, .refused, .tooLarge:
                guard !header.more, data.isEmpty else { throw .fragmentPastTotal(sequence: header.sequence) }
                return .control(header)
            case .message, .request, .reply:
                break
            }
            if let skipped = skipping {
                if skipped == header.sequence {
                    if !header.more { skipping = nil }
                    return .none
                }
                skipping = nil  // a new message: the skipped one was abandoned
            }
            if let current = partial?.header, current.sequence != header.sequence || current.kind != header.kind {
                partial = nil  // abandoned by its sender half-way
            }
            guard header.total <= UInt64(limit) else {
                if header.more { skipping = header.sequence }
                partial = nil
                return .tooLarge(header)
            }
            let total = Int(header.total)
            if partial == nil {
                guard data.count <= total else { throw .fragmentPastTotal(sequence: header.sequence) }
                if !header.more {
                    guard data.count == total else {
                        throw .endedShort(sequence: header.sequence, got: data.count, total: header.total)
                    }
                    return .message(Message(msgid: header.msgid, kind: header.kind, sequence: header.sequence, data: Array(data)))
                }
                var bytes = [UInt8]()
                bytes.reserveCapacity(total)
                partial = (header, bytes)
            }
            guard partial!.data.count + data.count <= total else {
                partial = nil
                throw .fragmentPastTotal(sequence: header.sequence)
            }
            partial!.data.append(contentsOf: data)
            guard !header.more else { return .none }
            let (first, bytes) = partial!
            partial = nil
            guard bytes.count == total else {
                throw .endedShort(sequence: header.sequence, got: bytes.count, total: header.total)
            }
            return .message(Message(msgid: first.msgid, kind: first.kind, sequence: first.sequence, data: bytes))
        }
    }
}
