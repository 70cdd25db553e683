import CLibURing
import Glibc

// One message to each of several connections, their sends submitted together.
extension ProcessPortConnection {
    /// One message of a batch: its connection, its bytes (`lead`, then `body`), what became
    /// of it.
    private struct Member {
        let position: Int
        let connection: ProcessPortConnection
        let msgid: Int32
        let lead: [UInt8]
        let body: [UInt8]
        var sequence: UInt64 = 0
        var outcome: Result<UInt64, MessagePortError>?
        /// The send found the connection closed: why is read once the locks are let go.
        var foundClosed = false

        var size: Int { lead.count + body.count }
    }

    /// Sends one one-way message to each connection without waiting, as
    /// ``send(msgid:data:request:deadline:)`` with a deadline already passed would each in
    /// turn, the sends of one-packet messages submitted together on the calling thread's
    /// loop's ring: one call into the kernel for them all (``WaitCore/performAllAtOnce(_:until:_:)``),
    /// not one a connection. A message's bytes are its `lead` then its `body`: messages
    /// that share a body (one array, as the event server's clients share a frame's
    /// encoding, each with its own sequence number in its lead) have it copied once for
    /// the batch, not once a message, when their packets are gathered (see
    /// `BatchPackets`). Returns each message's sequence number, or why it was not sent:
    /// ``MessagePortError/sendTimeout(_:)`` when its connection had no room (the send says
    /// `MSG_DONTWAIT`), what ended the connection, or
    /// ``MessagePortError/tooLarge(size:limit:)``.
    ///
    /// Each connection's order holds: its first message goes in the batch when it fits one
    /// packet; a longer one, and any later message to the same connection, go after the
    /// batch, in order, through the one-message path. The batch's connections' sending
    /// locks are all held from the numbering of their messages (``number(ofSize:after:)``,
    /// as for one message) to the end of their sends, so no other thread's packets come
    /// between and each connection's packets go in the order of their numbers; they are
    /// taken in a loop, in the order of the connections' addresses
    /// (`ThreadLock.withLocks`), so two batches cannot wait on each other. The sends go in
    /// the order given.
    static func sendWithoutWaiting(
        _ messages: [(connection: ProcessPortConnection, msgid: Int32, lead: [UInt8], body: [UInt8])]
    ) -> [Result<UInt64, MessagePortError>] {
        let deadline = MonotonicInstant.now
        var results = [Result<UInt64, MessagePortError>?](repeating: nil, count: messages.count)
        var members: [Member] = []
        var afterwards: [Int] = []
        var seen = Set<ObjectIdentifier>()
        for (position, message) in messages.enumerated() {
            let first = seen.insert(ObjectIdentifier(message.connection)).inserted
            if first, message.lead.count + message.body.count <= PortWire.fragmentCapacity {
                members.append(
                    Member(
                        position: position, connection: message.connection, msgid: message.msgid, lead: message.lead,
                        body: message.body))
            } else {
                afterwards.append(position)
            }
        }
        // Until a port's hello is read, what it sent is read now (as a single send does).
        for member in members where member.connection.state.withLock({ $0.limit == nil }) {
            member.connection.readAvailable()
        }
        if let core = RingRunLoop.current.waitCore() {
            ThreadLock.withLocks(members.map(\.connection.sending)) { sequences in
                for index in members.indices {
                    let member = members[index]
                    do throws(MessagePortError) {
                        members[index].sequence = try member.connection.number(ofSize: member.size, after: &sequences[index])
                    } catch {
                        members[index].outcome = .failure(error)
                    }
                }
                send(&members, on: core, until: deadline)
            }
            // Read with no lock of the batch held: reading the end runs the port's
            // invalidation callback, which may send.
            for index in members.indices where members[index].foundClosed {
                members[index].outcome = .failure(members[index].connection.endedBySend())
            }
            for member in members { results[member.position] = member.outcome }
        } else {
            for member in members {
                results[member.position] = .failure(
                    .transportError(member.connection.name, reason: "the sending thread's loop has no io_uring"))
            }
        }
        for position in afterwards {
            let message = messages[position]
            results[position] = Result { () throws(MessagePortError) in
                try message.connection.send(
                    msgid: message.msgid, lead: message.lead, body: message.body, request: nil, deadline: deadline)
            }
        }
        return results.map { $0! }
    }

    /// Sends the numbered members' packets (every member's sending lock held), one
    /// operation each with `MSG_DONTWAIT`, submitted together, and notes each one's outcome
    /// (or that it found its connection closed).
    private static func send(_ members: inout [Member], on core: WaitCore, until deadline: MonotonicInstant) {
        let ready = members.indices.filter { members[$0].outcome == nil }
        guard !ready.isEmpty else { return }
        let packets = BatchPackets(ready.map { (members[$0].msgid, members[$0].sequence, members[$0].lead, members[$0].body) })
        let flags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
        let results = core.performAllAtOnce(ready.count, until: deadline) { slot, sqe in
            packets.prepare(slot, sqe, socket: members[ready[slot]].connection.socket, flags: flags)
        }
        for (slot, index) in ready.enumerated() {
            let connection = members[index].connection
            let sent: Int32
            switch results[slot] {
            case .success(let result):
                sent = result
            case .failure(let error):
                members[index].outcome = .failure(.transportError(connection.name, reason: "the ring refused a send: \(error)"))
                continue
            }
            if Int(sent) == packets.count(slot) {
                members[index].outcome = .success(members[index].sequence)
                continue
            }
            switch sent < 0 ? -sent : EMSGSIZE {
            case EINTR:
                // Interrupted before it sent: once more on its own (the lock still held).
                let sequence = members[index].sequence
                let written = Result { () throws(MessagePortError) in
                    try packets.withParts(slot) { own, body throws(MessagePortError) in
                        try connection.write(own, PortWire.noBytes, body, deadline: deadline)
                    }
                }
                switch written {
                case .success(.sent): members[index].outcome = .success(sequence)
                case .success(.foundClosed): members[index].foundClosed = true
                case .failure(let error): members[index].outcome = .failure(error)
                }
            case EAGAIN, ECANCELED:
                members[index].outcome = .failure(.sendTimeout(connection.name))
            default:
                members[index].foundClosed = true
            }
        }
    }

    /// A send found the connection closed: why (a refusal comes before the end) is in
    /// what the port sent before, read now; the error a send reports for it.
    func endedBySend() -> MessagePortError {
        readAvailable()
        let ended = state.withLock { state -> MessagePortError in
            if state.ended == nil { state.ended = .becameInvalid(name) }
            return state.ended!
        }
        return Self.beforeSending(ended, name: name)
    }
}

/// A batch's packets, in memory it owns until it is dropped (after every send's
/// completion: ``WaitCore/performAllAtOnce(_:until:_:)`` returns only then). Each packet
/// is the wire's header, the message's lead and its body. One of at most
/// `PortWire.copiedPacketLimit` bytes (the limit a single send copies up to; every event
/// server frame) is copied whole into one stretch, for an `IORING_OP_SEND`;
/// a larger one is gathered from two stretches, its own (header and lead) and its body's,
/// by an `IORING_OP_SENDMSG` with two vectors, and a body that several messages share
/// (one array) is copied once for all of them.
private struct BatchPackets: ~Copyable {
    /// Where one packet lies in `bytes`: its own stretch (the header and the lead; the
    /// body follows at once when the packet is copied whole), its body's, and its message
    /// header in `messages` when gathered.
    private struct Place {
        var own: Int
        var ownCount: Int
        var body: Int
        var bodyCount: Int
        var gathered: Int?
    }

    private let bytes: UnsafeMutableRawBufferPointer
    private let vectors: UnsafeMutableBufferPointer<iovec>?
    private let messages: UnsafeMutableBufferPointer<msghdr>?
    private let places: [Place]

    init(_ packets: [(msgid: Int32, sequence: UInt64, lead: [UInt8], body: [UInt8])]) {
        var places: [Place] = []
        places.reserveCapacity(packets.count)
        var total = 0
        var gatheredCount = 0
        // Bodies already given a stretch, by their storage's address alone: every array is
        // alive until this returns, so one address is one array's storage, and arrays that
        // share a storage (copies of one array) have the same bytes and the same count.
        var bodies: [UInt: Int] = [:]
        for packet in packets {
            let own = PortWire.headerSize + packet.lead.count
            let size = own + packet.body.count
            if size <= PortWire.copiedPacketLimit || packet.body.isEmpty {
                places.append(Place(own: total, ownCount: own, body: total + own, bodyCount: packet.body.count))
                total += size
                continue
            }
            let address = packet.body.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            var place = Place(own: total, ownCount: own, body: 0, bodyCount: packet.body.count, gathered: gatheredCount)
            total += own
            gatheredCount += 1
            if let body = bodies[address] {
                place.body = body
            } else {
                place.body = total
                bodies[address] = total
                total += packet.body.count
            }
            places.append(place)
        }
        bytes = .allocate(byteCount: max(total, 1), alignment: 8)
        vectors = gatheredCount > 0 ? .allocate(capacity: 2 * gatheredCount) : nil
        messages = gatheredCount > 0 ? .allocate(capacity: gatheredCount) : nil
        self.places = places
        var copiedBodies = Set<Int>()
        for (packet, place) in zip(packets, places) {
            let start = bytes.baseAddress!
            let header = PortWire.Header(
                msgid: packet.msgid, kind: .message, sequence: packet.sequence,
                total: UInt64(packet.lead.count + packet.body.count))
            header.withEncodedBytes { (start + place.own).copyMemory(from: $0.baseAddress!, byteCount: PortWire.headerSize) }
            Self.copy(packet.lead, to: start + place.own + PortWire.headerSize)
            guard let gathered = place.gathered, let vectors, let messages else {
                Self.copy(packet.body, to: start + place.body)
                continue
            }
            if copiedBodies.insert(place.body).inserted { Self.copy(packet.body, to: start + place.body) }
            vectors[2 * gathered] = iovec(iov_base: start + place.own, iov_len: place.ownCount)
            vectors[2 * gathered + 1] = iovec(iov_base: start + place.body, iov_len: place.bodyCount)
            var message = msghdr()
            message.msg_iov = vectors.baseAddress! + 2 * gathered
            message.msg_iovlen = 2
            messages[gathered] = message
        }
    }

    deinit {
        bytes.deallocate()
        vectors?.deallocate()
        messages?.deallocate()
    }

    private static func copy(_ array: [UInt8], to destination: UnsafeMutableRawPointer) {
        array.withUnsafeBytes { source in
            if let start = source.baseAddress, source.count > 0 { destination.copyMemory(from: start, byteCount: source.count) }
        }
    }

    /// The packet's size in bytes.
    func count(_ slot: Int) -> Int { places[slot].ownCount + places[slot].bodyCount }

    /// Calls `body` with the packet's two parts, its own (the header and the lead) and its
    /// body, and returns what it returns.
    func withParts<Value, Failure: Error>(
        _ slot: Int, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let place = places[slot]
        let start = UnsafeRawPointer(bytes.baseAddress!)
        return try body(
            UnsafeRawBufferPointer(start: start + place.own, count: place.ownCount),
            UnsafeRawBufferPointer(start: start + place.body, count: place.bodyCount))
    }

    /// Fills in the entry that sends the packet on `socket`.
    func prepare(_ slot: Int, _ entry: UnsafeMutablePointer<io_uring_sqe>, socket: Int32, flags: Int32) {
        let place = places[slot]
        if let gathered = place.gathered, let messages {
            io_uring_prep_sendmsg(entry, socket, messages.baseAddress! + gathered, UInt32(bitPattern: flags))
        } else {
            io_uring_prep_send(entry, socket, bytes.baseAddress! + place.own, place.ownCount + place.bodyCount, flags)
        }
    }
}
