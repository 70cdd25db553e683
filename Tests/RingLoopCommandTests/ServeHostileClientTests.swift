import Foundation
import Glibc
import RingLoop
import RingLoopHID
import RingLoopTestSupport
import Testing

/// A client that says hello like any other, then makes its own port (where the server
/// sends its events) stream the pieces of a 16 MiB "reply" the server never asked for.
final class StreamingHostileClient {
    let portName: String
    private let listener: Int32
    private var connection: Int32 = -1
    private let server: RemoteMessagePort
    private var sequence: UInt64 = 0
    private(set) var written = 0

    init(server name: String, index: Int) throws {
        let portName = "\(name).hostile.\(getpid()).\(index)"
        self.portName = portName
        let listener = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue), 0)
        self.listener = listener
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let abstractName = Array((PortWire.namePrefix + portName).utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (offset, byte) in abstractName.enumerated() { path[offset + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + abstractName.count)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        guard bound == 0, listen(listener, 4) == 0 else { throw MessagePortError.nameInUse(portName) }
        let server = try RemoteMessagePort(name: name)
        self.server = server
        let hello = ServerWire.Hello(
            token: UInt64.random(in: 1...UInt64.max), port: portName, name: "hostile \(index)", kinds: [.switchChanged],
            deviceClasses: [], wantsFocus: false)
        _ = try server.sendRequest(
            msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, sendTimeout: .seconds(10), replyTimeout: .seconds(10))
        connection = accept(listener, nil, nil)
        if connection >= 0 { _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK) }
    }

    /// Writes fragments of a reply of 16 MiB that never ends until the socket is full or
    /// `limit` bytes went; whether the server's connection is still there.
    @discardableResult
    func stream(upTo limit: Int) -> Bool {
        guard connection >= 0 else { return false }
        let header = PortWire.Header(msgid: 0, kind: .reply, more: true, sequence: 1, total: 16 << 20)
        let packet = PortWire.packet(header, ArraySlice(repeating: 0x5A, count: PortWire.fragmentCapacity))
        while written < limit {
            let count = packet.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 { return errno == EAGAIN }
            written += PortWire.fragmentCapacity
        }
        return true
    }

    func close() {
        if connection >= 0 { Glibc.close(connection) }
        Glibc.close(listener)
        connection = -1
    }
}

@Suite("ringloop serve against hostile clients", .enabled(if: FUSEHere.usable, FUSEHere.missing), .disabled(if: runningUnderSanitizer))
struct ServeHostileClientTests {
    @Test(
        "64 clients whose ports stream a 16 MiB reply: the server takes no reply (under 16 MiB more resident memory), and comes back to its baseline when they go"
    )
    func streamingClients() throws {
        let name = "test.hostile.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        // A lid switch that flips every 40 ms for 8 s: every client subscribed to switches
        // gets a batch each time, and the server reads what the client's port sent first.
        let flips: [(Double, [(Int, Int, Int)])] = (0..<200).map { index in
            let time: Double = 0.5 + Double(index) * 0.04
            return (time, [(5, 0, index % 2 == 0 ? 1 : 0)])
        }
        let recording = try testRecording("lid-switch", flips)
        defer { unlink(recording) }
        let server = try Spawned(ringloop, ["serve", name, recording, "--json", "--wait-clients", "64"], directory: repository)
        #expect(server.waitFor("\"serving\""), "\(server.error)")
        let before: Int = try #require(EchoExampleTests.residentBytes(of: server.pid))
        var clients: [StreamingHostileClient] = []
        for index in 0..<64 { clients.append(try StreamingHostileClient(server: name, index: index)) }
        // 1 MiB each at most (64 MiB in all) while the switch flips.
        let limit = MonotonicInstant.now + .seconds(20)
        while clients.contains(where: { $0.written < 1 << 20 }), MonotonicInstant.now < limit {
            var open = 0
            for client in clients where client.stream(upTo: 1 << 20) { open += 1 }
            if open == 0 { break }
            usleep(5_000)
        }
        let during: Int = try #require(EchoExampleTests.residentBytes(of: server.pid))
        let written = clients.reduce(0) { $0 + $1.written }
        let growth = during - before
        #expect(growth < 16 << 20, "the server grew from \(before) to \(during) bytes; the clients wrote \(written)")
        for client in clients { client.close() }
        clients = []
        #expect(waitUntil(timeout: .seconds(20)) { jsonLines(server.output, kind: "detached").count == 64 }, "\(server.output)")
        var after: Int = during
        let settle = MonotonicInstant.now + .seconds(10)
        while MonotonicInstant.now < settle {
            after = EchoExampleTests.residentBytes(of: server.pid) ?? after
            if after <= before + (4 << 20) { break }
            usleep(50_000)
        }
        #expect(after <= before + (4 << 20), "before \(before), during \(during), after \(after) bytes")
        print(
            "serve resident memory with 64 streaming clients: before \(before), during \(during), after \(after) bytes; they wrote \(written)"
        )
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(20)) == 0, "\(server.error)")
    }
}
