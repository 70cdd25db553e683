import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

/// `tcp-echo serve` against peers that misbehave: one that never reads, and more
/// connections than the server has descriptors for.
@Suite("tcp-echo against hostile peers")
struct EchoExampleTests {
    /// Starts `tcp-echo serve` (through `sh` when `limit` lowers its descriptor limit);
    /// returns it and its port.
    static func startServer(descriptorLimit limit: Int? = nil) throws -> (Spawned, UInt16) {
        let echo = ExampleTests.example("tcp-echo")
        let server =
            if let limit {
                try Spawned("/bin/sh", ["-c", "ulimit -n \(limit) && exec \"$0\" serve --port 0", echo])
            } else {
                try Spawned(echo, ["serve", "--port", "0"])
            }
        guard server.waitFor("listening on 127.0.0.1:"),
            let port = server.output.split(separator: "\n").first?.split(separator: ":").last.flatMap({ UInt16($0) })
        else {
            server.signal(SIGKILL)
            _ = server.finish()
            throw EchoTestFailure("the server did not start: \(server.output)\(server.error)")
        }
        return (server, port)
    }

    struct EchoTestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The process's resident memory in bytes (`VmRSS`).
    static func residentBytes(of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    static func connect(_ port: UInt16) throws -> Int32 {
        let address = SocketAddress.loopback(port: port)
        let socket = try address.makeSocket().rawValue
        guard address.withSockaddr({ Glibc.connect(socket, $0, $1) }) == 0 else {
            let failure = IOFailure(errno: errno)
            close(socket)
            throw failure
        }
        return socket
    }

    /// Sends `message` and reads its echo, waiting at most `timeout` for each part.
    static func echo(_ message: [UInt8], on socket: Int32, timeout: Duration = .seconds(10)) -> [UInt8]? {
        guard message.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == message.count
        else { return nil }
        var echoed: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let limit = MonotonicInstant.now + timeout
        while echoed.count < message.count, MonotonicInstant.now < limit {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 100) >= 0 || errno == EINTR else { return nil }
            guard entry.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            echoed += buffer[..<count]
        }
        return echoed
    }

    // Not under AddressSanitizer: its quarantine keeps the freed memory this test bounds.
    @Test(
        "A peer that sends and never reads is held back: the server's memory stays under the mark and returns after it goes",
        .disabled(if: runningUnderAddressSanitizer))
    func readerThatNeverReads() throws {
        let (server, port) = try Self.startServer()
        defer {
            server.signal(SIGTERM)
            _ = server.finish()
        }
        let warm = try Self.connect(port)
        #expect(Self.echo(Array("warm up".utf8), on: warm) == Array("warm up".utf8))
        let before = try #require(Self.residentBytes(of: server.pid))

        // Writes until the stream has taken nothing for a second (or 512 MB, which the
        // server would be holding if nothing held the peer back).
        let flooder = try Self.connect(port)
        _ = fcntl(flooder, F_SETFL, fcntl(flooder, F_GETFL) | O_NONBLOCK)
        let chunk = [UInt8](repeating: 0x5A, count: 65_536)
        var written = 0
        while written < 512 << 20 {
            var entry = pollfd(fd: flooder, events: Int16(POLLOUT), revents: 0)
            guard poll(&entry, 1, 1000) > 0 else { break }
            let count = chunk.withUnsafeBytes { send(flooder, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 { written += count }
        }
        let during = try #require(Self.residentBytes(of: server.pid))
        #expect(written < 256 << 20, "the peer was never held back: \(written) bytes written")
        #expect(during - before < 16 << 20, "the server grew from \(before) to \(during) bytes")

        // The peer goes: the server's memory comes back (bounded wait).
        close(flooder)
        var after = during
        // A sanitizer's allocator keeps freed blocks in its caches and quarantine.
        let allowance = runningUnderSanitizer ? 8 << 20 : 2 << 20
        let limit = MonotonicInstant.now + .seconds(10)
        while MonotonicInstant.now < limit {
            after = Self.residentBytes(of: server.pid) ?? after
            if after <= before + allowance { break }
            usleep(50_000)
        }
        #expect(
            after <= before + allowance,
            "tcp-echo resident memory: before \(before), during \(during), after \(after) bytes; peer wrote \(written)")
        // And the server still serves.
        #expect(Self.echo(Array("still here".utf8), on: warm) == Array("still here".utf8))
        close(warm)
    }

    @Test("Out of descriptors (ulimit -n 24): accept backs off and resumes; later connections are served")
    func acceptSurvivesRunningOutOfDescriptors() throws {
        let (server, port) = try Self.startServer(descriptorLimit: 24)
        // More connections than the server has descriptors for: the kernel completes them
        // all into the listen queue; the server accepts until EMFILE.
        var clients: [Int32] = []
        for _ in 0..<40 { clients.append(try Self.connect(port)) }
        #expect(server.waitFor("cannot accept for now (Too many open files"), "\(server.output)\(server.error)")
        #expect(!server.exited, "the server kept running")
        // Descriptors come back as the peers go; waiting connections are taken in.
        for client in clients { close(client) }
        let late = try Self.connect(port)
        #expect(Self.echo(Array("served after EMFILE".utf8), on: late, timeout: .seconds(20)) == Array("served after EMFILE".utf8))
        close(late)
        server.signal(SIGTERM)
        #expect(server.finish(timeout: .seconds(30)) == 0, "\(server.error)")
        #expect(!server.output.contains("stopped accepting"), "\(server.output)")
    }
}
