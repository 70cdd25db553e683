import Glibc
import RingLoopTestSupport
import Testing

@testable import RingLoop

/// The lead-and-body cut at every boundary, against an independent cut
/// of the joined bytes, and the same sizes sent through the ring to a plain reader.
extension PortWireTests {
    @Test("forEachPacket over lead and body cuts at every boundary as the joined bytes cut by fragmentCapacity")
    func leadBodyBoundaries() {
        let f = PortWire.fragmentCapacity
        let limitData = PortWire.copiedPacketLimit - PortWire.headerSize
        let sizes: [(Int, Int)] = [
            (0, 0), (8, 0), (0, 8), (f, 0), (0, f), (f, 1), (1, f), (f - 1, 1), (f - 8, 8), (8, f - 8), (f + 1, 0),
            (0, f + 1), (f, f), (2 * f, 0), (0, 2 * f), (2 * f + 3, 5), (8, limitData - 8), (8, limitData - 7),
            (limitData, 0), (limitData + 1, 0), (0, limitData), (0, limitData + 1), (f - 1, f + 1),
        ]
        for (leadCount, bodyCount) in sizes {
            let lead = (0..<leadCount).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
            let body = (0..<bodyCount).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            let joined = lead + body
            // Independent cut: fragments of f bytes, at least one packet.
            var expected: [(more: Bool, data: [UInt8])] = []
            var start = 0
            repeat {
                let end = min(joined.count, start + f)
                expected.append((end < joined.count, Array(joined[start..<end])))
                start = end
            } while start < joined.count
            var got: [(header: PortWire.Header, fromLead: Int, fromBody: Int, data: [UInt8])] = []
            let _: Never? = lead.withUnsafeBytes { lead in
                body.withUnsafeBytes { body in
                    PortWire.forEachPacket(msgid: 3, kind: .message, sequence: 7, lead: lead, body: body) { header, fromLead, fromBody in
                        let decoded = try! PortWire.header(of: header)
                        got.append((decoded, fromLead.count, fromBody.count, Array(fromLead) + Array(fromBody)))
                        return nil
                    }
                }
            }
            let label = "lead \(leadCount), body \(bodyCount)"
            #expect(got.count == expected.count, "\(label): \(got.count) packets, \(expected.count) expected")
            for (index, (packet, want)) in zip(got, expected).enumerated() {
                #expect(packet.data == want.data, "\(label) packet \(index)")
                #expect(packet.header.more == want.more, "\(label) packet \(index) more")
                #expect(packet.header.total == UInt64(joined.count), "\(label) packet \(index) total")
                #expect(packet.header.sequence == 7, "\(label) packet \(index) sequence")
            }
        }
    }
}

extension PortOnTheRingTests {
    @Test("lead and body at the copy limit and packet boundaries arrive whole and in order through the ring")
    func leadBodyBoundariesOnTheRing() throws {
        let f = PortWire.fragmentCapacity
        let limitData = PortWire.copiedPacketLimit - PortWire.headerSize
        let sizes: [(Int, Int)] = [
            (8, limitData - 8), (8, limitData - 7), (limitData, 0), (limitData + 1, 0), (0, limitData + 1), (f, 0),
            (0, f), (f, 1), (1, f), (f, f), (2 * f + 3, 5), (f - 1, f + 1), (0, 0),
        ]
        let last = Int32(sizes.count)
        let port = try ReadingPort("rvbound", last: last)
        let sends = sizes.map { (leadCount, bodyCount) in
            (
                (0..<leadCount).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) },
                (0..<bodyCount).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            )
        }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: port.name)
                for (index, send) in sends.enumerated() {
                    try remote.send(msgid: Int32(index), lead: send.0, body: send.1)
                }
                try remote.send(msgid: last, data: [])
            }
        } catch {
            port.finish()
            throw error
        }
        port.finish()
        let messages = port.messages
        let expected = sends.map { $0.0 + $0.1 } + [[]]
        #expect(messages.count == expected.count)
        for (index, (message, data)) in zip(messages, expected).enumerated() {
            #expect(message.data == data, "message \(index) \(sizes[min(index, sizes.count - 1)]): \(message.data.count) bytes")
        }
        #expect(messages.map(\.sequence) == Array(1...UInt64(expected.count)))
    }
}

extension PortOnTheRingTests {
    @Test("multi-packet lead-and-body messages past the socket's room: each packet once, in order")
    func leadBodyThroughWaitsForRoom() throws {
        let count = 64
        let last = Int32(count)
        let port = try ReadingPort("rvroom", last: last)
        let lead = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let body = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: port.name)
                for index in 0..<count {
                    try remote.send(msgid: Int32(index), lead: [UInt8(index)] + lead, body: body)
                }
                try remote.send(msgid: last, data: [])
            }
        } catch {
            port.finish()
            throw error
        }
        port.finish()
        let messages = port.messages
        #expect(messages.count == count + 1)
        for (index, message) in messages.prefix(count).enumerated() {
            #expect(message.msgid == Int32(index))
            #expect(message.data == [UInt8(index)] + lead + body, "message \(index): \(message.data.count) bytes")
        }
        #expect(messages.map(\.sequence) == Array(1...UInt64(count + 1)))
        // Whether a send had to wait for room depends on how fast the reading thread is
        // (under ThreadSanitizer it kept up in a CI run): not required here.
    }
}
