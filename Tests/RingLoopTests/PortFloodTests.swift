import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// Floods of a port in another process, its memory measured by the child itself (through
/// its control port) before, during and after. The bounds asserted are README's
/// ("Security"): what a peer can make a port hold.
// Not under AddressSanitizer: its quarantine keeps freed memory, so the resident memory
// these tests bound is the sanitizer's (the plain and ThreadSanitizer runs check them).
@Suite("Named ports under floods: bounded, and memory back after", .disabled(if: runningUnderAddressSanitizer))
struct PortFloodTests {
    /// Resident memory a flood may add to the port's process, in KiB: the limit on unread
    /// replies (1 MiB) and receive buffers, with room for the allocator and the callouts.
    static let floodAllowanceKiB = 12 * 1024
    /// What the kernel may hold for one connection in one direction: a socket's send
    /// buffer (`net.core.wmem_default`, 208 KiB here) with its packets' overhead.
    static let kernelAllowanceBytes = 1 << 20
    /// What may stay after the peers have gone, in KiB. A sanitizer's allocator keeps freed
    /// blocks in its own caches and quarantine (5 MiB stayed under ThreadSanitizer where
    /// 0.4–0.9 MiB stay without): the port's own bound is the same, the allocator's is not.
    static let afterAllowanceKiB = runningUnderSanitizer ? 8 * 1024 : 3 * 1024

    /// Waits until the child's port has no connection left; its resident memory then.
    private static func settledResident(_ name: String) -> Int? {
        let deadline = MonotonicInstant.now + .seconds(20)
        while MonotonicInstant.now < deadline {
            if controlValue(name, PortHost.connections) == 0 { return controlValue(name, PortHost.rss) }
            usleep(5000)
        }
        return nil
    }

    @Test("A peer that sends requests and never reads the replies is held back; the port's memory stays bounded")
    func unreadReplies() async throws {
        let name = NamedPortTests.uniqueName("Unread")
        let record = PortHostRecord()
        await withPortHost(.echo, name: name) {
            guard remotePort(named: name) != nil, let before = controlValue(name, PortHost.rss),
                let peer = RawPortPeer(connectingTo: name)
            else { return record.note("no port") }
            record.set("before", before)
            // Requests of 1 KiB, as fast as the kernel takes them, never reading a reply,
            // until the kernel has refused every send for a whole second.
            let request = PortWire.packets(msgid: PortHost.echo, kind: .request, sequence: 1, data: [UInt8](repeating: 1, count: 1024))[0]
            var sent = 0
            var lastAccepted = MonotonicInstant.now
            while sent < 100_000, MonotonicInstant.now - lastAccepted < .seconds(1) {
                if peer.send(request) {
                    sent += 1
                    lastAccepted = MonotonicInstant.now
                } else {
                    usleep(200)
                }
            }
            record.set("sent", sent)
            record.set("during", controlValue(name, PortHost.rss))
            // The kernel's memory for the connection, both ways: replies the port sent and
            // the peer has not read, requests the peer sent and the port has not read.
            record.set("replies queued", controlValue(name, PortHost.unreadByPeers))
            var requests: Int32 = 0
            record.set("requests queued", ioctl(peer.socket, UInt(TIOCOUTQ), &requests) == 0 ? Int(requests) : nil)
            peer.close()
            record.set("after", Self.settledResident(name))
        }
        #expect(record.notes.withLock { $0 }.isEmpty)
        let before = record.value("before")
        // What was measured, shown with any failure below.
        let figures: Comment = """
            unread replies: \(record.value("sent")) requests taken; resident \(before) → \(record.value("during")) → \(record.value("after")) KiB; \
            kernel: \(record.value("replies queued")) bytes of replies and \(record.value("requests queued")) of requests queued
            """
        #expect(record.value("sent") < 10_000, "the port kept reading requests whose replies were not read; \(figures)")
        #expect((0..<Self.kernelAllowanceBytes).contains(record.value("replies queued")), figures)
        #expect((0..<Self.kernelAllowanceBytes).contains(record.value("requests queued")), figures)
        #expect(record.value("during") - before < Self.floodAllowanceKiB, figures)
        #expect(record.value("after") - before < Self.afterAllowanceKiB, figures)
    }

    @Test("5,000 connections from a process of another user: each refused, nothing kept")
    func refusedConnections() async throws {
        let name = NamedPortTests.uniqueName("Crowd")
        let record = PortHostRecord()
        await withPortHost(.strictAndOpen, name: name) {
            guard remotePort(named: name + ".strict") != nil, let before = controlValue(name, PortHost.rss) else {
                return record.note("no port")
            }
            record.set("before", before)
            let peers = asUser(65534) { (0..<5_000).compactMap { _ in RawPortPeer(connectingTo: name + ".strict") } }
            record.set("connected", peers.count)
            record.set("during", controlValue(name, PortHost.rss))
            // Every one was refused: the port closed them all.
            var refused = 0
            for peer in peers {
                var entry = pollfd(fd: peer.socket, events: Int16(POLLIN), revents: 0)
                if poll(&entry, 1, 20_000) == 1, entry.revents & Int16(POLLHUP) != 0 { refused += 1 }
                peer.close()
            }
            record.set("refused", refused)
            record.set("after", Self.settledResident(name))
        }
        #expect(record.notes.withLock { $0 }.isEmpty)
        let before = record.value("before")
        let figures: Comment = "5,000 refused connections: resident \(before) → \(record.value("during")) → \(record.value("after")) KiB"
        #expect(record.value("connected") == 5_000)
        #expect(record.value("refused") == 5_000)
        #expect(record.value("during") - before < Self.floodAllowanceKiB, figures)
        #expect(record.value("after") - before < Self.afterAllowanceKiB, figures)
    }

    // Each refused sender races the port thread, which reads the refusal when the port
    // closes: whichever reads it, the sender must report it (60 tries caught a sender that
    // found the refusal read and its reason not yet recorded, as "invalid").
    @Test("A user's connections past the port's per-user limit are refused as too many, every time")
    func perUserLimit() async throws {
        let name = NamedPortTests.uniqueName("Few")
        let record = PortHostRecord()
        let refusals = 60
        await withPortHost(.fewConnections, name: name) {
            // Once the lookup's connection has gone (its port released), four may be open.
            guard remotePort(named: name) != nil, Self.settledResident(name) != nil else { return record.note("no port") }
            var ports: [RemoteMessagePort] = []
            for _ in 0..<4 + refusals {
                do throws(MessagePortError) {
                    let port = try RemoteMessagePort(name: name)
                    ports.append(port)
                    _ = try port.sendRequest(msgid: PortHost.echo, data: [1], replyTimeout: .seconds(20))
                    record.note("served")
                } catch {
                    record.fail(error)
                }
            }
        }
        #expect(record.notes.withLock { $0 } == ["served", "served", "served", "served"])
        let errors = record.errors.withLock { $0 }
        #expect(errors.count == refusals)
        #expect(errors.filter { $0 != .tooManyConnections(name) } == [])
    }

    @Test("Other users share what is left of one user's share: the port's own user keeps room when another user connects all it may")
    func ownUserKeepsRoom() async throws {
        let name = NamedPortTests.uniqueName("Shared")
        let record = PortHostRecord()
        await withPortHost(.sharedConnections, name: name) {
            guard remotePort(named: name) != nil, Self.settledResident(name) != nil else { return record.note("no port") }
            var ports: [RemoteMessagePort] = []
            // Six slots, four a user: nobody gets two (6 - 4), then the port's user four.
            for user in [65534, 65534, 65534, 65534, 0, 0, 0, 0] as [UInt32] {
                do {
                    let port = try asUser(user) { () throws -> RemoteMessagePort in
                        let port = try RemoteMessagePort(name: name)
                        _ = try port.sendRequest(msgid: PortHost.echo, data: [1], replyTimeout: .seconds(20))
                        return port
                    }
                    ports.append(port)
                    record.note("uid \(user) served")
                } catch {
                    record.note("uid \(user) \(error)")
                }
            }
        }
        let tooMany = MessagePortError.tooManyConnections(name).description
        #expect(
            record.notes.withLock { $0 }
                == ["uid 65534 served", "uid 65534 served", "uid 65534 \(tooMany)", "uid 65534 \(tooMany)"]
                + Array(repeating: "uid 0 served", count: 4))
    }

    // CFMessagePortSendRequest's sendTimeout: the time to wait for room in the port's queue.
    @Test("One-way messages to a port whose mode is not running hold the sender back until its send timeout")
    func idleMode() async throws {
        let name = NamedPortTests.uniqueName("Idle")
        let record = PortHostRecord()
        await withPortHost(.idleCommon, name: name) {
            guard let port = remotePort(named: name), let before = controlValue(name, PortHost.rss) else {
                return record.note("no port")
            }
            record.set("before", before)
            var sent = 0
            let started = MonotonicInstant.now
            while MonotonicInstant.now - started < .seconds(20) {
                do throws(MessagePortError) {
                    try port.send(msgid: PortHost.echo, data: [UInt8](repeating: 2, count: 1024), timeout: .milliseconds(200))
                    sent += 1
                } catch {
                    record.fail(error)
                    break
                }
            }
            record.set("sent", sent)
            record.set("during", controlValue(name, PortHost.rss))
        }
        #expect(record.notes.withLock { $0 }.isEmpty)
        #expect(record.errors.withLock { $0 } == [.sendTimeout(name)])
        #expect(record.value("sent") < 2_000, "idle mode: \(record.value("sent")) messages of 1 KiB taken before the send timed out")
        #expect(record.value("during") - record.value("before") < Self.floodAllowanceKiB)
    }
}
