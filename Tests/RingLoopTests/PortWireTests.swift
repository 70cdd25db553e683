import Testing

@testable import RingLoop

/// The packets of named ports between processes, taken apart as a receiver does, with
/// what a hostile peer sends.
@Suite("Port wire: packets, fragments and their limits")
struct PortWireTests {
    private func take(
        _ assembler: inout PortWire.Assembler, _ packet: [UInt8]
    ) throws(PortWire.Violation)
        -> PortWire.Assembler.Output
    {
        let result = packet.withUnsafeBytes { raw -> Result<PortWire.Assembler.Output, PortWire.Violation> in
            do throws(PortWire.Violation) { return .success(try assembler.take(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    @Test("A message round-trips through its packets, one fragment or many", arguments: [0, 1, 16_360, 16_361, 100_000])
    func roundTrip(size: Int) throws {
        let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let packets = PortWire.packets(msgid: -5, kind: .request, sequence: 9, data: data)
        #expect(packets.count == max(1, (size + PortWire.fragmentCapacity - 1) / PortWire.fragmentCapacity))
        #expect(packets.allSatisfy { $0.count <= PortWire.packetSize })
        var assembler = PortWire.Assembler(limit: 100_000)
        var outputs: [PortWire.Assembler.Output] = []
        for packet in packets { outputs.append(try take(&assembler, packet)) }
        #expect(outputs.dropLast().allSatisfy { $0 == .none })
        #expect(outputs.last == .message(PortWire.Message(msgid: -5, kind: .request, sequence: 9, data: data)))
        #expect(!assembler.isAssembling)
    }

    @Test("A message over the limit is reported once, never allocated, and its other fragments are dropped")
    func overLimit() throws {
        var assembler = PortWire.Assembler(limit: 20_000)
        let packets = PortWire.packets(msgid: 1, kind: .message, sequence: 4, data: [UInt8](repeating: 1, count: 40_000))
        #expect(packets.count == 3)
        guard case .tooLarge(let header) = try take(&assembler, packets[0]) else {
            Issue.record("the first fragment of an oversized message was not reported")
            return
        }
        #expect(header.total == 40_000 && header.sequence == 4)
        #expect(try take(&assembler, packets[1]) == .none)
        #expect(try take(&assembler, packets[2]) == .none)
        // The next message is read as usual.
        let next = PortWire.packets(msgid: 2, kind: .message, sequence: 5, data: [3])[0]
        #expect(try take(&assembler, next) == .message(PortWire.Message(msgid: 2, kind: .message, sequence: 5, data: [3])))
    }

    @Test("A sender that gives up half-way loses that message only")
    func abandoned() throws {
        var assembler = PortWire.Assembler(limit: 100_000)
        let first = PortWire.packets(msgid: 1, kind: .message, sequence: 1, data: [UInt8](repeating: 1, count: 20_000))
        #expect(try take(&assembler, first[0]) == .none)
        #expect(assembler.isAssembling)
        let second = PortWire.packets(msgid: 2, kind: .message, sequence: 2, data: [9, 9])[0]
        #expect(try take(&assembler, second) == .message(PortWire.Message(msgid: 2, kind: .message, sequence: 2, data: [9, 9])))
        #expect(!assembler.isAssembling)
    }

    /// What a hostile or broken peer may send, and what the receiver makes of it.
    static let violations: [(String, [UInt8], PortWire.Violation)] = [
        ("shorter than a header", [1, 2, 3], .shortPacket(3)),
        (
            "an unknown kind", PortWire.packet(PortWire.Header(msgid: 0, kind: .message, sequence: 0, total: 0)).patched(4, 99),
            .unknownKind(99)
        ),
        (
            "unknown flags", PortWire.packet(PortWire.Header(msgid: 0, kind: .message, sequence: 0, total: 0)).patched(6, 0x80),
            .unknownFlags(0x80)
        ),
        (
            "more data than its total", PortWire.packet(PortWire.Header(msgid: 0, kind: .message, sequence: 3, total: 1), [1, 2]),
            .fragmentPastTotal(sequence: 3)
        ),
        (
            "a last fragment short of its total",
            PortWire.packet(PortWire.Header(msgid: 0, kind: .reply, sequence: 3, total: 10), [1, 2]),
            .endedShort(sequence: 3, got: 2, total: 10)
        ),
        (
            "a control packet with data",
            PortWire.packet(PortWire.Header(msgid: 2, kind: .hello, sequence: 0, total: 1), [1]),
            .fragmentPastTotal(sequence: 0)
        ),
        (
            "a packet larger than any sender makes", [UInt8](repeating: 0, count: PortWire.packetSize + 1),
            .oversizedPacket(PortWire.packetSize + 1)
        ),
    ]

    @Test("Every field is checked before use", arguments: violations)
    func violation(_ what: String, _ packet: [UInt8], _ expected: PortWire.Violation) {
        var assembler = PortWire.Assembler(limit: 1 << 20)
        #expect(throws: expected, "\(what)") { try take(&assembler, packet) }
    }

    @Test("Huge declared sizes and limits are numbers, never allocations")
    func hugeNumbers() throws {
        var assembler = PortWire.Assembler(limit: 64)
        let claim = PortWire.packet(PortWire.Header(msgid: 0, kind: .reply, more: true, sequence: 1, total: .max), [1])
        guard case .tooLarge(let header) = try take(&assembler, claim) else {
            Issue.record("a reply declaring UInt64.max bytes was not refused")
            return
        }
        #expect(header.total == .max)
        let hello = PortWire.packet(PortWire.Header(msgid: PortWire.version, kind: .hello, sequence: 0, total: .max))
        #expect(try take(&assembler, hello) == .control(try hello.withUnsafeBytes { raw in try PortWire.header(of: raw) }))
        #expect(Int(clamping: UInt64.max) == Int.max)
    }
}

extension Array where Element == UInt8 {
    /// The array with byte `index` replaced by `value`.
    fileprivate func patched(_ index: Int, _ value: UInt8) -> [UInt8] {
        var copy = self
        copy[index] = value
        return copy
    }
}
