// libFuzzer target: the named ports' wire protocol, as both ends read it. The first byte
// picks the side: even, a port reading a connection (message limit 64 KiB, requests and
// one-way messages expected); odd, a client reading a port (reply limit 1 MiB, replies
// and control packets expected). Then each packet is a 16-bit little-endian length and
// that many bytes (cut at the input's end). A protocol violation ends the "connection"
// (a new assembler takes over), as both ends do. Nothing may trap or allocate more than
// the side's limit; every whole message re-encoded in packets reads back the same.
// Build and run with tools/fuzz.
import RingLoop

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPortWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let side = input.first else { return 0 }
    let limit = side & 1 == 0 ? 64 * 1024 : 1 << 20
    var assembler = PortWire.Assembler(limit: limit)
    var offset = 1
    while offset + 2 <= input.count {
        let length = Int(input[offset]) | Int(input[offset + 1]) << 8
        offset += 2
        let end = min(input.count, offset + length)
        let packet = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(input)[offset..<end])
        offset = end
        do throws(PortWire.Violation) {
            switch try assembler.take(packet) {
            case .message(let message):
                precondition(message.data.count <= limit, "a message of \(message.data.count) bytes past the limit")
                roundTrip(message, limit: limit)
            case .tooLarge(let header):
                precondition(header.total > UInt64(limit), "a message within the limit reported too large")
                _ = Int(clamping: header.total)
            case .control(let header):
                _ = Int(clamping: header.total)
            case .none:
                break
            }
        } catch {
            _ = error.description
            assembler = PortWire.Assembler(limit: limit)
        }
    }
    return 0
}

/// A message's packets, read by a fresh assembler, give the message back.
func roundTrip(_ message: PortWire.Message, limit: Int) {
    var again = PortWire.Assembler(limit: limit)
    var result: PortWire.Assembler.Output = .none
    for packet in PortWire.packets(msgid: message.msgid, kind: message.kind, sequence: message.sequence, data: message.data) {
        precondition(packet.count <= PortWire.packetSize, "a packet of \(packet.count) bytes")
        packet.withUnsafeBytes { raw in
            do throws(PortWire.Violation) {
                result = try again.take(raw)
            } catch {
                preconditionFailure("a message's own packets broke the protocol: \(error)")
            }
        }
    }
    precondition(result == .message(message), "a message did not read back the same")
}
