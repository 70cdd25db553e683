import ArgumentParser
import Foundation
import Glibc
import RingLoop
import SystemPackage

/// Servers the I/O benchmarks talk to, each in a process of its own so every side gets the
/// same treatment (a process, a loop thread, the client in the bench's process). Prints
/// `ready PORT` (0 where there is no port) and serves until its standard input closes.
struct BenchServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-server", abstract: "Run one benchmark server (used by bench).", shouldDisplay: false)

    static let kinds = ["echo-ringloop", "echo-foundation", "port", "seqpacket", "seqpacket-ring", "close-ringloop", "hid"]

    @Argument(help: "echo-ringloop, echo-foundation, port, seqpacket, seqpacket-ring, close-ringloop or hid (an event server).")
    var kind: String
    @Argument(help: "The port or socket name (port, seqpacket); the connections to wait for (close-ringloop).")
    var name: String = ""

    func validate() throws {
        guard Self.kinds.contains(kind) else {
            throw ValidationError("unknown server '\(kind)'; valid: \(Self.kinds.joined(separator: ", "))")
        }
        if ["port", "seqpacket", "seqpacket-ring", "hid"].contains(kind), name.isEmpty { throw ValidationError("\(kind) needs a name") }
        if kind == "close-ringloop", (Int(name) ?? 0) < 1 {
            throw ValidationError("close-ringloop needs a number of connections (1 or more), not '\(name)'")
        }
    }

    func run() throws {
        // The event server reads its standard input itself (its CPU time on request).
        if kind == "hid" { return try ServerBench.serve(name) }
        // The parent closing our standard input ends the server (the RingLoop echo reads
        // it itself: it answers `stats`).
        if kind != "echo-ringloop" {
            Thread.detachNewThread {
                while readLine() != nil {}
                Glibc.exit(0)
            }
        }
        switch kind {
        case "echo-ringloop": try Self.ringLoopEcho()
        case "echo-foundation": try Self.foundationEcho()
        case "port": try Self.namedPort(name)
        case "close-ringloop": try IOCloseBench.serve(Int(name) ?? 1)
        case "seqpacket-ring": try Self.seqpacketEcho(name, onRing: true)
        default: try Self.seqpacketEcho(name, onRing: false)
        }
    }

    static func ready(_ port: UInt16) { say("ready \(port)") }

    /// Writes a line to standard output at once (the benchmark reads it as it comes).
    static func say(_ text: String) {
        let line = Array((text + "\n").utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }

    /// Buffers the RingLoop echo has received (loop thread only).
    final class EchoCount: @unchecked Sendable {
        // @unchecked: used on the server's loop thread only.
        var chunks: UInt64 = 0
        var bytes: UInt64 = 0
    }

    /// RingLoop: a multishot accept, a multishot receive per connection into its provided
    /// buffers, each buffer sent back from where it arrived (no copy; sends queued behind
    /// one in flight go out together in one `sendmsg`). `stats` on standard input prints
    /// `stats ENTERS ENTRIES CHUNKS BYTES`: the loop's calls into the kernel, the submission
    /// entries they handed over, the buffers received (one per receive completion) and
    /// the bytes in them, so far.
    static func ringLoopEcho() throws {
        let loop = RingRunLoop.current
        let count = EchoCount()
        Thread.detachNewThread {
            while let line = readLine() {
                guard line == "stats" else { continue }
                loop.perform(inModes: [.default]) {
                    say("stats \(loop.enterCount) \(loop.submittedEntryCount) \(count.chunks) \(count.bytes)")
                }
                loop.wakeUp()
            }
            Glibc.exit(0)
        }
        let listener = try SocketAddress.loopback(port: 0).makeListeningSocket(backlog: 256)
        let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { server, completion in
            guard case .accepted(let socket) = completion.outcome else { return }
            var one: Int32 = 1
            setsockopt(socket.rawValue, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                switch completion.outcome {
                case .endOfFile, .failed: connection.close()
                default: break
                }
            }
            server.loop.add(connection.source, to: .default)
            _ = try? connection.receive(bufferCount: 16, bufferSize: 16_384) { connection, bytes in
                count.chunks &+= 1
                count.bytes &+= UInt64(bytes.count)
                _ = try? connection.send(bytes)
            }
        }
        loop.add(server.source, to: .default)
        try server.accept()
        ready(try SocketAddress.local(of: listener).port ?? 0)
        loop.run()
    }

    /// Foundation: `FileHandle`'s "wait for data in background and notify" on the
    /// thread's `RunLoop`, reading and writing back what each notification finds.
    /// (`acceptConnectionInBackgroundAndNotify` is not used: swift-corelibs-foundation
    /// posts its notification with an empty `userInfo`, so the accepted handle is lost.)
    static func foundationEcho() throws {
        let listener = try SocketAddress.loopback(port: 0).makeListeningSocket(backlog: 256).rawValue
        let handle = FileHandle(fileDescriptor: listener, closeOnDealloc: true)
        let center = NotificationCenter.default
        nonisolated(unsafe) var kept: [Any] = []
        kept.append(
            center.addObserver(forName: .NSFileHandleDataAvailable, object: handle, queue: nil) { _ in
                defer { handle.waitForDataInBackgroundAndNotify() }
                let socket = accept(listener, nil, nil)
                guard socket >= 0 else { return }
                var one: Int32 = 1
                setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                let connection = FileHandle(fileDescriptor: socket, closeOnDealloc: true)
                kept.append(connection)
                nonisolated(unsafe) var buffer = [UInt8](repeating: 0, count: 16_384)
                kept.append(
                    center.addObserver(forName: .NSFileHandleDataAvailable, object: connection, queue: nil) { _ in
                        let count = buffer.withUnsafeMutableBytes { read(socket, $0.baseAddress, $0.count) }
                        guard count > 0 else { return }
                        var written = 0
                        while written < count {
                            let result = buffer.withUnsafeBytes { write(socket, $0.baseAddress! + written, count - written) }
                            guard result > 0 else { return }
                            written += result
                        }
                        connection.waitForDataInBackgroundAndNotify()
                    })
                connection.waitForDataInBackgroundAndNotify()
            })
        handle.waitForDataInBackgroundAndNotify()
        ready(try SocketAddress.local(of: FileDescriptor(rawValue: listener)).port ?? 0)
        RunLoop.current.run()
    }

    /// A named message port answering each request with its data.
    static func namedPort(_ name: String) throws {
        let loop = RingRunLoop.current
        let port = try LocalMessagePort(name: name, loop: loop) { _, data in data }
        loop.add(port.source, to: .default)
        ready(0)
        loop.run()
    }

    /// The plain-socket peers: a `SOCK_SEQPACKET` socket in the abstract namespace, each
    /// packet read after `poll` and sent back, or (`onRing`) received and sent back through
    /// a bare ring (``RingEchoPeer``).
    static func seqpacketEcho(_ name: String, onRing: Bool) throws {
        let listener = try SocketAddress.abstract(name).makeListeningSocket(type: .sequencedPacket).rawValue
        ready(0)
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { throw IOFailure(errno: errno) }
        if onRing {
            try RingEchoPeer(socket: connection).serve()
        } else {
            SeqpacketEcho.serve(connection)
        }
    }
}

/// Echoing packets on a connected socket with `poll`, `recv` and `send`: the peer the
/// named ports are measured against.
enum SeqpacketEcho {
    static func serve(_ socket: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, -1) >= 0 || errno == EINTR else { return }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            guard buffer.withUnsafeBytes({ send(socket, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }) == count else {
                return
            }
        }
    }

    /// One request and its reply, as the client side: `send`, then `poll` and `recv`.
    static func roundTrip(_ socket: Int32, _ request: [UInt8], _ reply: inout [UInt8]) -> Bool {
        guard request.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { return false }
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 10_000) == 1 else { return false }
        return reply.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) } == request.count
    }
}
