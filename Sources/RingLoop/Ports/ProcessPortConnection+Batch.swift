import CLibURing
import Glibc

// One message to each of several connections, their sends submitted together.
extension ProcessPortConnection {
    /// Most connections one submission holds the sending locks of (the locks nest, one
    /// stack frame each): a larger batch goes as several submissions.
    static let batchLimit = 64

    /// One message of a batch: its connection, its packet once numbered, what became of it.
    private struct Member {
        let position: Int
        let connection: ProcessPortConnection
        let msgid: Int32
        let data: [UInt8]
        var sequence: UInt64 = 0
        var outcome: Result<UInt64, MessagePortError>?
    }

    /// Sends one one-way message to each connection without waiting, as
    /// ``send(msgid:data:request:deadline:)`` with a deadline already passed would each in
    /// turn, the sends of one-packet messages submitted together on the calling thread's
    /// loop's ring: one call into the kernel for them all (``WaitCore/performAllAtOnce(_:until:_:)``),
    /// not one a connection. Returns each message's sequence number, or why it was not
    /// sent: ``MessagePortError/sendTimeout(_:)`` when its connection had no room (the
    /// send says `MSG_DONTWAIT`), what ended the connection, or
    /// ``MessagePortError/tooLarge(size:limit:)``.
    ///
    /// Each connection's order holds: its first message goes in the batch when it fits one
    /// packet; a longer one, and any later message to the same connection, go after the
    /// batch, in order, through the one-message path. Each connection's sending lock is
    /// held from the numbering of its message to the end of its send, as for one message,
    /// so no other thread's packets come between; the locks are taken in the order of the
    /// connections' addresses, so two batches cannot wait on each other; the sends go in
    /// the order given.
    static func sendWithoutWaiting(
        _ messages: [(connection: ProcessPortConnection, msgid: Int32, data: [UInt8])]
    ) -> [Result<UInt64, MessagePortError>] {
        let deadline = MonotonicInstant.now
        var results = [Result<UInt64, MessagePortError>?](repeating: nil, count: messages.count)
        var members: [Member] = []
        var afterwards: [Int] = []
        var seen = Set<ObjectIdentifier>()
        for (position, message) in messages.enumerated() {
            let first = seen.insert(ObjectIdentifier(message.connection)).inserted
            if first, message.data.count <= PortWire.fragmentCapacity {
                members.append(Member(position: position, connection: message.connection, msgid: message.msgid, data: message.data))
            } else {
                afterwards.append(position)
            }
        }
        // Until a port's hello is read, what it sent is read now (as a single send does).
        for member in members where member.connection.state.withLock({ $0.limit == nil }) {
            member.connection.readAvailable()
        }
        if let core = RingRunLoop.current.waitCore() {
            var start = 0
            while start < members.count {
                // Sent in the callers' order, locked in the connections' (one chunk's locks at a time).
                var chunk = Array(members[start..<min(members.count, start + batchLimit)])
                let lockOrder = chunk.indices.sorted {
                    ObjectIdentifier(chunk[$0].connection) < ObjectIdentifier(chunk[$1].connection)
                }
                numberingUnderLocks(&chunk, lockOrder[...]) { members in send(&members, on: core, until: deadline) }
                for member in chunk { results[member.position] = member.outcome }
                start += batchLimit
            }
        } else {
            for member in members {
                results[member.position] = .failure(
                    .transportError(member.connection.name, reason: "the sending thread's loop has no io_uring"))
            }
        }
        for position in afterwards {
            let message = messages[position]
            results[position] = Result { () throws(MessagePortError) in
                try message.connection.send(msgid: message.msgid, data: message.data, request: nil, deadline: deadline)
            }
        }
        return results.map { $0! }
    }

    /// Takes the sending locks of the members at `order`, in that order, numbers each
    /// member's message under its lock (or notes why it cannot go), then runs `body` with
    /// every lock held.
    private static func numberingUnderLocks(
        _ members: inout [Member], _ order: ArraySlice<Int>, _ body: (inout [Member]) -> Void
    ) {
        guard let index = order.first else { return body(&members) }
        let connection = members[index].connection
        connection.sending.withLock { sequence in
            let (ended, limit) = connection.state.withLock { ($0.ended, $0.limit) }
            let size = members[index].data.count
            if let ended {
                members[index].outcome = .failure(beforeSending(ended, name: connection.name))
            } else if let limit, size > limit {
                members[index].outcome = .failure(.tooLarge(size: size, limit: limit))
            } else {
                sequence += 1
                members[index].sequence = sequence
            }
            numberingUnderLocks(&members, order.dropFirst(), body)
        }
    }

    /// Sends the numbered members' packets (every member's sending lock held), copied
    /// into one buffer, one `IORING_OP_SEND` each with `MSG_DONTWAIT`, submitted together,
    /// and notes each one's outcome.
    private static func send(_ members: inout [Member], on core: WaitCore, until deadline: MonotonicInstant) {
        let ready = members.indices.filter { members[$0].outcome == nil }
        guard !ready.isEmpty else { return }
        var offsets: [Int] = []
        offsets.reserveCapacity(ready.count + 1)
        var total = 0
        for index in ready {
            offsets.append(total)
            total += PortWire.headerSize + members[index].data.count
        }
        offsets.append(total)
        let packets = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 8)
        defer { packets.deallocate() }
        for (slot, index) in ready.enumerated() {
            let member = members[index]
            let start = packets.baseAddress! + offsets[slot]
            let header = PortWire.Header(
                msgid: member.msgid, kind: .message, sequence: member.sequence, total: UInt64(member.data.count))
            header.withEncodedBytes { start.copyMemory(from: $0.baseAddress!, byteCount: PortWire.headerSize) }
            member.data.withUnsafeBytes { data in
                if let bytes = data.baseAddress, data.count > 0 {
                    (start + PortWire.headerSize).copyMemory(from: bytes, byteCount: data.count)
                }
            }
        }
        let flags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
        let results = core.performAllAtOnce(ready.count, until: deadline) { slot, sqe in
            let socket = members[ready[slot]].connection.socket
            io_uring_prep_send(sqe, socket, packets.baseAddress! + offsets[slot], offsets[slot + 1] - offsets[slot], flags)
        }
        for (slot, index) in ready.enumerated() {
            let connection = members[index].connection
            let packet = UnsafeRawBufferPointer(rebasing: packets[offsets[slot]..<offsets[slot + 1]])
            let sent: Int32
            switch results[slot] {
            case .success(let result):
                sent = result
            case .failure(let error):
                members[index].outcome = .failure(.transportError(connection.name, reason: "the ring refused a send: \(error)"))
                continue
            }
            if Int(sent) == packet.count {
                members[index].outcome = .success(members[index].sequence)
                continue
            }
            switch sent < 0 ? -sent : EMSGSIZE {
            case EINTR:
                // Interrupted before it sent: once more on its own (the lock still held).
                let sequence = members[index].sequence
                members[index].outcome = Result { () throws(MessagePortError) in
                    try connection.write(
                        UnsafeRawBufferPointer(rebasing: packet[..<PortWire.headerSize]),
                        UnsafeRawBufferPointer(rebasing: packet[PortWire.headerSize...]), deadline: deadline)
                    return sequence
                }
            case EAGAIN, ECANCELED:
                members[index].outcome = .failure(.sendTimeout(connection.name))
            default:
                members[index].outcome = .failure(connection.endedBySend())
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
