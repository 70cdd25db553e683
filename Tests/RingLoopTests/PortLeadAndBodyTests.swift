import Glibc
import RingLoopTestSupport
import Testing

@testable import RingLoop

extension PortOnTheRingTests {
    /// The event server sends a batch as its client's own lead (a sequence number) and a
    /// body every client shares, and a single send takes the two as they are, never joined
    /// into one array: each packet is gathered from its header and its stretches of the
    /// two. What arrives at the port's end, read with plain `recv` and put together by the
    /// wire's assembler, is each message whole (the lead, then the body), in order,
    /// numbered: a message of several packets with a small lead, one whose lead runs past
    /// a packet (the cut between lead and body falls inside the second packet), a small
    /// one (copied into one buffer), an empty one, and a long one that a batch to two ports
    /// sends after the batch, through the single send.
    @Test(
        "A single send of a lead and a body, several packets long, arrives whole and in order at the port's end, however the packets cut the two"
    )
    func leadAndBodyArriveWhole() throws {
        let port = try ReadingPort("leadbody", last: 9)
        let other = try ReadingPort("leadbodyother", last: 9)
        let sequenceLead = (1...8).map { UInt8($0) }
        let body = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let longLead = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let sends: [(lead: [UInt8], body: [UInt8])] = [
            (sequenceLead, body), (longLead, Array(body[..<30_000])), (sequenceLead, [9, 9, 9]), ([], []),
        ]
        let packets = sends.map { max(1, ($0.lead.count + $0.body.count + PortWire.fragmentCapacity - 1) / PortWire.fragmentCapacity) }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: port.name)
                let otherRemote = try RemoteMessagePort(name: other.name)
                for (index, send) in sends.enumerated() {
                    let before = loop.submittedEntryCount
                    try remote.send(msgid: Int32(index), lead: send.lead, body: send.body)
                    // One submission a packet (a wait for room would add one).
                    #expect(loop.submittedEntryCount - before >= UInt64(packets[index]), "send \(index)")
                }
                // Longer than a packet: it goes after the batch, through the single send.
                let failures = RemoteMessagePort.sendWithoutWaiting([
                    (remote, 4, sequenceLead, body), (otherRemote, 4, sequenceLead, [1]),
                ])
                #expect(failures.allSatisfy { $0 == nil }, "\(failures)")
                try remote.send(msgid: 9, data: [])
                try otherRemote.send(msgid: 9, data: [])
            }
        } catch {
            port.finish()
            other.finish()
            throw error
        }
        port.finish()
        other.finish()
        let expected = sends.map { $0.lead + $0.body } + [sequenceLead + body, []]
        let messages = port.messages
        #expect(messages.count == expected.count)
        for (index, (message, data)) in zip(messages, expected).enumerated() {
            #expect(message.data == data, "message \(index): \(message.data.count) bytes, \(data.count) sent")
        }
        #expect(messages.map(\.msgid) == [0, 1, 2, 3, 4, 9])
        #expect(messages.map(\.sequence) == Array(1...UInt64(expected.count)))
        #expect(messages.allSatisfy { $0.kind == .message })
        #expect(other.messages.map(\.data) == [sequenceLead + [1], []])
    }
}

extension PortWireTests {
    /// A sender stops a message's packets at the first that does not go (its port closed
    /// the connection) by what its packet's body returns, with no error thrown to stop it:
    /// the loop gives no packet after that one, and returns what the body returned.
    @Test("The packet loop over a lead and a body stops at the first packet whose body returns a value, and returns it")
    func packetLoopStopsOnAValue() {
        let lead = [UInt8](repeating: 1, count: 8)
        let body = [UInt8](repeating: 2, count: 3 * PortWire.fragmentCapacity)
        var given: [Int] = []
        let stopped: String? = lead.withUnsafeBytes { lead in
            body.withUnsafeBytes { body in
                PortWire.forEachPacket(msgid: 1, kind: .message, sequence: 1, lead: lead, body: body) { header, fromLead, fromBody in
                    given.append(header.count + fromLead.count + fromBody.count)
                    return given.count == 2 ? "closed" : nil
                }
            }
        }
        #expect(stopped == "closed")
        #expect(given == [PortWire.packetSize, PortWire.packetSize], "packets given: \(given)")
        var all = 0
        let none: String? = lead.withUnsafeBytes { lead in
            body.withUnsafeBytes { body in
                PortWire.forEachPacket(msgid: 1, kind: .message, sequence: 1, lead: lead, body: body) { _, _, _ in
                    all += 1
                    return nil
                }
            }
        }
        #expect(none == nil)
        #expect(all == 4, "a message of 8 + 3 fragments' bytes is 4 packets, \(all) given")
    }
}
