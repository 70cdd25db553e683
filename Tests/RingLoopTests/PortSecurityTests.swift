import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A raw `SOCK_SEQPACKET` connection to a port's abstract name, as a hostile or broken
/// peer would make it, with the packets it sends made by hand.
struct RawPortPeer {
    let socket: Int32

    /// Connects to the port `name` (non-blocking), retrying while its backlog is full.
    init?(connectingTo name: String, within timeout: Duration = .seconds(20)) {
        guard let address = try? SocketAddress.abstract(PortWire.namePrefix + name) else { return nil }
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let deadline = MonotonicInstant.now + timeout
        while address.withSockaddr({ Glibc.connect(descriptor, $0, $1) }) != 0 {
            guard errno == EAGAIN || errno == ECONNREFUSED || errno == ENOENT, MonotonicInstant.now < deadline else {
                Glibc.close(descriptor)
                return nil
            }
            usleep(1000)
        }
        socket = descriptor
    }

    /// Sends a packet without waiting; whether the kernel took it.
    func send(_ packet: [UInt8]) -> Bool {
        packet.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) } == packet.count
    }

    func close() { Glibc.close(socket) }
}

/// A server holding a port's name that a test scripts by hand: accepts one connection and
/// runs `script` on it on a thread of its own.
final class RawPortServer: Sendable {
    let listener: Int32
    private let thread: ThreadLock<PosixThread?> = ThreadLock(nil)

    init(name: String, _ script: @escaping @Sendable (_ connection: Int32) -> Void) throws {
        let address = try SocketAddress.abstract(PortWire.namePrefix + name)
        listener = try address.makeListeningSocket(type: .sequencedPacket).rawValue
        let listener = listener
        thread.withLock {
            $0 = PosixThread.start(name: "raw-port") {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                script(connection)
                Glibc.close(connection)
            }
        }
    }

    func finish() {
        shutdown(listener, Int32(SHUT_RDWR))
        thread.withLock { $0 }?.join()
        Glibc.close(listener)
    }

    /// Runs `body` while a server named `name` takes a connection and never reads from it
    /// (a sender gets only the kernel's buffer); the server is finished when `body` returns
    /// or throws.
    static func neverReading<T>(name: String, _ body: () throws -> T) throws -> T {
        let release = Atomic<Bool>(false)
        let server = try RawPortServer(name: name) { _ in
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        defer {
            release.store(true, ordering: .releasing)
            server.finish()
        }
        return try body()
    }

    /// Reads one packet (blocking, bounded); its header.
    static func readHeader(_ connection: Int32) -> PortWire.Header? {
        var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 20_000) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
        let count = recv(connection, &buffer, buffer.count, 0)
        guard count >= PortWire.headerSize else { return nil }
        return try? buffer.withUnsafeBytes { try PortWire.header(of: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    static func send(_ connection: Int32, _ packet: [UInt8]) {
        _ = packet.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

@Suite("Named ports against hostile peers")
struct PortSecurityTests {
    // README "Security": a port serves its own user unless its policy says more; a client
    // trusts its own user and root unless told otherwise.
    @Test("A process of another user is refused by a root port unless the port's policy lets it in")
    func otherUserRefused() async throws {
        let name = NamedPortTests.uniqueName("Strict")
        let record = PortHostRecord()
        await withPortHost(.strictAndOpen, name: name) {
            // As root first: the child's ports exist, and root is served.
            guard let strictAsRoot = remotePort(named: name + ".strict") else { return record.fail(.notFound(name)) }
            record.set("root", try? strictAsRoot.sendRequest(msgid: PortHost.echo, data: [1], replyTimeout: .seconds(20)).count)
            asUser(65534) {
                do throws(MessagePortError) {
                    let strict = try RemoteMessagePort(name: name + ".strict")
                    _ = try strict.sendRequest(msgid: PortHost.echo, data: [2], replyTimeout: .seconds(20))
                    record.note("nobody was served by the strict port")
                } catch {
                    record.fail(error)
                }
                do throws(MessagePortError) {
                    let open = try RemoteMessagePort(name: name + ".open")
                    record.set("open", try open.sendRequest(msgid: PortHost.echo, data: [3, 3], replyTimeout: .seconds(20)).count)
                } catch {
                    record.fail(error)
                }
            }
        }
        #expect(record.value("root") == 1)
        #expect(record.value("open") == 2)
        #expect(record.notes.withLock { $0 }.isEmpty)
        #expect(record.errors.withLock { $0 } == [.accessDenied(name + ".strict")])
    }

    // A refused peer's packets are read before its connection closes (so its end sees the
    // refusal, not a reset) — a few only: one that keeps sending would keep the loop reading.
    @Test("A refused peer that sent many packets is cut off after a few: the port reads no more of them")
    func refusedPeerCutOff() throws {
        let name = NamedPortTests.uniqueName("Refused")
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let mode = RingRunLoop.Mode("refusing")
            let port = try LocalMessagePort(name: name, loop: loop) { _, _ in nil }
            defer { port.invalidate() }
            // In a mode that is not running yet: the peer's packets wait for the port.
            loop.add(port.source, to: mode)
            let address = try MessagePortNamespace.abstract.address(of: name)
            let peer = asUser(65534) { () -> Int32 in
                let peer = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
                guard address.withSockaddr({ connect(peer, $0, $1) }) == 0 else { return -1 }
                return peer
            }
            #expect(peer >= 0)
            defer { close(peer) }
            let packet = [UInt8](repeating: 7, count: 64)
            var sent = 0
            while sent < 100_000, packet.withUnsafeBytes({ send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == 64 {
                sent += 1
            }
            #expect(sent > 2 * PortListener.refusedPacketsRead, "the socket took \(sent) packets")
            var ready = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
            #expect(runUntil(loop, mode: mode) { poll(&ready, 1, 0) > 0 })
            // The port closed with the peer's packets unread: the peer's end reports a reset
            // first; then the refusal.
            var buffer = [UInt8](repeating: 0, count: PortWire.packetSize + 1)
            let first = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            #expect(first == -1 && errno == ECONNRESET, "the first read got \(first) bytes: the port read all \(sent) packets")
            let refusal = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            #expect(refusal > 0)
            let header = buffer.withUnsafeBytes { bytes in
                refusal > 0 ? try? PortWire.header(of: UnsafeRawBufferPointer(rebasing: bytes[..<refusal])) : nil
            }
            #expect(header?.kind == .refused)
        }
    }

    @Test("A name held by a process of another user is refused by a client, never trusted")
    func squatterUntrusted() async throws {
        let name = NamedPortTests.uniqueName("Squat")
        let record = PortHostRecord()
        await withPortHost(.squatter, name: name) {
            let deadline = MonotonicInstant.now + .seconds(20)
            while MonotonicInstant.now < deadline {
                do throws(MessagePortError) {
                    _ = try RemoteMessagePort(name: name)
                    record.note("trusted a port of nobody")
                    return
                } catch .untrustedPort(let refused, let owner) where refused == name {
                    record.set("owner", Int(owner.uid))
                    break
                } catch {
                    usleep(2000)
                }
            }
            // Trusting that user explicitly works.
            let trusted = try? RemoteMessagePort(name: name, trusting: .users([65534]))
            record.set("reply", try? trusted?.sendRequest(msgid: PortHost.echo, data: [5], replyTimeout: .seconds(20)).count)
        }
        #expect(record.notes.withLock { $0 }.isEmpty)
        #expect(record.value("owner") == 65534)
        #expect(record.value("reply") == 1)
    }

    @Test("A squatter of the same user that lies in its packets gets errors, never a crash or a huge allocation")
    func lyingServer() throws {
        typealias Header = PortWire.Header
        func scripted(
            _ reply: @escaping @Sendable (Int32, Header) -> Void, request: Duration = TestWait.bound
        ) throws
            -> MessagePortError?
        {
            let name = NamedPortTests.uniqueName("Liar")
            let server = try RawPortServer(name: name) { connection in
                RawPortServer.send(connection, PortWire.packet(Header(msgid: PortWire.version, kind: .hello, sequence: 0, total: .max)))
                guard let header = RawPortServer.readHeader(connection) else { return }
                reply(connection, header)
                _ = RawPortServer.readHeader(connection)  // until the client goes
            }
            defer { server.finish() }
            let port = try RemoteMessagePort(name: name)
            let outcome = Result { () throws(MessagePortError) -> [UInt8] in
                try port.sendRequest(msgid: 1, data: [1], replyTimeout: request)
            }
            guard case .failure(let error) = outcome else { return nil }
            return error
        }
        // A reply that declares a terabyte.
        let huge = try scripted { connection, request in
            RawPortServer.send(
                connection, PortWire.packet(Header(msgid: 1, kind: .reply, more: true, sequence: request.sequence, total: 1 << 40), [1]))
        }
        #expect(huge == .tooLarge(size: 1 << 40, limit: RemoteMessagePort.defaultMaximumReplySize))
        // A packet shorter than a header, and one larger than any port sends.
        for garbage in [[UInt8](repeating: 9, count: 3), [UInt8](repeating: 9, count: 65_536)] {
            let error = try scripted { connection, _ in RawPortServer.send(connection, garbage) }
            guard case .transportError = error else {
                Issue.record("a packet of \(garbage.count) bytes gave \(String(describing: error))")
                continue
            }
        }
        // A reply to another request is not this one's.
        let forged = try scripted(
            { connection, request in
                RawPortServer.send(
                    connection, PortWire.packet(Header(msgid: 1, kind: .reply, sequence: request.sequence + 1, total: 1), [6]))
            }, request: .milliseconds(300))
        guard case .replyTimeout = forged else {
            Issue.record("a forged reply gave \(String(describing: forged))")
            return
        }
    }

    @Test("A port that never reads: sends fail at their send timeout, none hangs")
    func serverNeverReads() throws {
        let name = NamedPortTests.uniqueName("Deaf")
        try RawPortServer.neverReading(name: name) {
            let port = try RemoteMessagePort(name: name)
            let started = MonotonicInstant.now
            var sent = 0
            var failure: MessagePortError?
            while failure == nil, MonotonicInstant.now - started < .seconds(20) {
                do throws(MessagePortError) {
                    try port.send(msgid: 1, data: [UInt8](repeating: 0, count: 60_000), timeout: .milliseconds(200))
                    sent += 1
                } catch {
                    failure = error
                }
            }
            #expect(failure == .sendTimeout(name))
            #expect(sent < 1000, "the kernel took \(sent) messages of 60 KB from a peer that never reads")
        }
    }
}

@Suite("Named ports as socket files")
struct DirectoryPortTests {
    /// A fresh directory others may search, removed after `body`.
    private func withDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/ringloop-ports-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let directory = try #require(made.map { String(cString: $0) })
        chmod(directory, 0o755)
        defer {
            if let entries = opendir(directory) {
                while let entry = readdir(entries) {
                    let name = direntName(entry)
                    if name != ".", name != ".." { unlink(directory + "/" + name) }
                }
                closedir(entries)
            }
            rmdir(directory)
        }
        try body(directory)
    }

    @Test("The kernel checks a port file's permissions at connect; the policy is asked after")
    func permissions() throws {
        try withDirectory { directory in
            let worker = LoopThread(name: "file-port")
            defer { worker.stopAndJoin() }
            let strict = try LocalMessagePort(
                name: "strict", loop: worker.loop, access: .anyone, namespace: .directory(directory)
            ) { _, data in data }
            let open = try LocalMessagePort(
                name: "open", loop: worker.loop, access: .anyone, namespace: .directory(directory, permissions: 0o666)
            ) { _, data in data }
            defer {
                strict.invalidate()
                open.invalidate()
            }
            worker.loop.add(strict.source, to: .default)
            worker.loop.add(open.source, to: .default)
            var status = stat()
            #expect(lstat(directory + "/strict.port", &status) == 0 && status.st_mode & 0o777 == 0o600)
            #expect(lstat(directory + "/open.port", &status) == 0 && status.st_mode & 0o777 == 0o666)
            // Through the socket file, as another process would (a remote port in this
            // process would find the port in the process's registry).
            asUser(65534) {
                #expect(throws: MessagePortError.accessDenied("strict")) {
                    _ = try ProcessPortConnection(
                        name: "strict", namespace: .directory(directory), trusting: .sameUserOrRoot, maximumReplySize: 1024)
                }
                #expect(throws: Never.self) {
                    let connection = try ProcessPortConnection(
                        name: "open", namespace: .directory(directory), trusting: .sameUserOrRoot, maximumReplySize: 1024)
                    connection.close()
                }
            }
        }
    }

    @Test("A port file is removed when the port goes; a dead port's socket is replaced; anything else is left alone")
    func files() throws {
        try withDirectory { directory in
            let namespace = MessagePortNamespace.directory(directory)
            // A socket file nobody listens on (its process died): replaced.
            let stale = try SocketAddress.unix(path: directory + "/stale.port").makeListeningSocket(
                type: .sequencedPacket
            ).rawValue
            close(stale)
            try onFreshLoopThreadThrowing {
                let port = try LocalMessagePort(name: "stale", loop: .current, namespace: namespace) { _, _ in nil }
                port.invalidate()
            }
            #expect(access(directory + "/stale.port", F_OK) != 0, "the port did not remove its file")
            // A regular file in the way: the name is in use, the file untouched.
            let file = directory + "/taken.port"
            close(open(file, O_CREAT | O_WRONLY, 0o644))
            try onFreshLoopThreadThrowing {
                #expect(throws: MessagePortError.nameInUse("taken")) {
                    try LocalMessagePort(name: "taken", loop: .current, namespace: namespace) { _, _ in nil }
                }
            }
            var status = stat()
            #expect(lstat(file, &status) == 0 && status.st_mode & S_IFMT == S_IFREG)
            // A file put in place of the port's after it was made is not the port's to remove.
            try onFreshLoopThreadThrowing {
                let port = try LocalMessagePort(name: "moved", loop: .current, namespace: namespace) { _, _ in nil }
                unlink(directory + "/moved.port")
                close(open(directory + "/moved.port", O_CREAT | O_WRONLY, 0o644))
                port.invalidate()
            }
            #expect(access(directory + "/moved.port", F_OK) == 0, "the port removed a file it did not make")
        }
    }
}
