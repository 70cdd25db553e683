import Foundation
import RingLoopTestSupport
import Testing

/// The examples under Examples/, built with the package, run as a user would.
@Suite("Examples")
struct ExampleTests {
    static func example(_ name: String) -> String {
        URL(fileURLWithPath: ringloop).deletingLastPathComponent().appendingPathComponent(name).path
    }

    @Test("tcp-echo: the server echoes what the client sends and stops cleanly on SIGTERM; a refused connection is a typed error")
    func tcpEcho() throws {
        let server = try Spawned(Self.example("tcp-echo"), ["serve", "--port", "0"])
        #expect(server.waitFor("listening on 127.0.0.1:"), "\(server.output)\(server.error)")
        let port = try #require(
            server.output.split(separator: "\n").first?.split(separator: ":").last.map { String($0) })
        let client = try Spawned(Self.example("tcp-echo"), ["send", "--port", port, "hello", "second message"])
        #expect(client.finish(timeout: .seconds(30)) == 0, "\(client.error)")
        #expect(client.output == "hello\nsecond message\n")
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(30)) == 0, "\(server.error)")
        #expect(server.output.hasSuffix("served 1 connections, 19 bytes\n"), "\(server.output)")
        // A port nobody listens on any more: a typed failure, exit status 1, no usage text.
        let refused = try Spawned(Self.example("tcp-echo"), ["send", "--port", port, "x"])
        #expect(refused.finish(timeout: .seconds(30)) == 1)
        #expect(refused.error == "Error: 127.0.0.1:\(port): connection refused\n")
    }
}
