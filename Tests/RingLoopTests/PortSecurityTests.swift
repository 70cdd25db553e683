import Glibc
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
        listener = try address.makeListeningSocket(type: Int32(SOCK_SEQPACKET.rawValue))
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
            _ reply: @escaping @Sendable (Int32, Header) -> Void, request: Duration = .seconds(5)
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
        let release = Atomic<Bool>(false)
        let server = try RawPortServer(name: name) { _ in
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        defer {
            release.store(true, ordering: .releasing)
            server.finish()
        }
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
