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
