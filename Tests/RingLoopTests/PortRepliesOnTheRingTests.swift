import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A raw peer's side of the wire, for the tests below: a request packet, and the next
/// packet the port sends (bounded wait).
extension RawPortPeer {
    func sendRequest(msgid: Int32, sequence: UInt64, data: [UInt8] = [1]) -> Bool {
        send(PortWire.packets(msgid: msgid, kind: .request, sequence: sequence, data: data)[0])
    }

    /// The next packet from the port, as a message (its header and data); `nil` when the
    /// connection ended or nothing came within `timeout`.
    func nextPacket(within timeout: Duration = .seconds(20)) -> (header: PortWire.Header, data: [UInt8])? {
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        guard poll(&entry, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
        let count = recv(socket, &buffer, buffer.count, 0)
        guard count >= PortWire.headerSize else { return nil }
        let packet = Array(buffer[..<count])
        guard let header = try? packet.withUnsafeBytes({ try PortWire.header(of: $0) }) else { return nil }
        return (header, Array(packet[PortWire.headerSize...]))
    }
}

/// The port's side of named ports on its loop's ring (issue 47): the hello, the replies and
/// the refusals go through the port's loop's ring, never a system call of their own on
/// its thread, and a peer that does not read cannot make that thread wait.
@Suite("Named ports: the port's replies on its loop's ring")
struct PortRepliesOnTheRingTests {
    /// Each reply is one submission of the port's loop (and a no-op linked to it, which
    /// posts nothing unless the reply fails), handed to the kernel with the loop's next
    /// wait: a round trip costs the port's loop one call into the kernel (the wait that
    /// sends the reply and sleeps until the next request), and the reply's success does not
    /// wake the loop. The counters are read on the port's thread, in its callback.
    @Test("Each reply is one submission on the port's loop's ring, sent with the loop's wait: one call into the kernel a round trip")
    func repliesGoWithTheWait() throws {
        let name = NamedPortTests.uniqueName("replyring")
        let counters = ThreadLock<[(enters: UInt64, submitted: UInt64)]>([])
        let served = try PortOnItsOwnThread(name: name, threadName: "reply-ring") { msgid, data in
            if msgid == 9 {
                let loop = RingRunLoop.current
                counters.withLock { $0.append((loop.enterCount, loop.submittedEntryCount)) }
            }
            return data
        }
        defer { served.close() }
        let peer = try #require(RawPortPeer(connectingTo: name))
        defer { peer.close() }
        let hello = try #require(peer.nextPacket())
        #expect(hello.header.kind == .hello)
        let roundTrips = 200
        for index in 0..<roundTrips {
            let data = [UInt8(index % 256), UInt8(index / 256)]
            let msgid: Int32 = index == 0 || index == roundTrips - 1 ? 9 : 1
            #expect(peer.sendRequest(msgid: msgid, sequence: UInt64(index + 1), data: data))
            let reply = try #require(peer.nextPacket(), "no reply to request \(index)")
            #expect(reply.header.kind == .reply && reply.header.sequence == UInt64(index + 1) && reply.data == data)
        }
        let seen = counters.withLock { $0 }
        try #require(seen.count == 2)
        let submitted = seen[1].submitted - seen[0].submitted
        let enters = seen[1].enters - seen[0].enters
        let between = UInt64(roundTrips - 1)
        // A reply's entries (a plain `sendmsg` made none); one call a round trip, and a
        // few to spare for wake-ups the test does not control.
        #expect(submitted >= between, "\(submitted) submissions for \(between) replies")
        #expect(enters <= between + between / 10, "\(enters) calls into the kernel for \(between) round trips")
    }

    /// A reply alone in its queue that the kernel refuses with `EAGAIN` (the peer's socket
    /// is full) goes again, waiting for room, as soon as the refusal comes: once the peer
    /// reads, it arrives, with nothing else to wake the port's loop (a wait that slept on
    /// past the refusal left it unsent; a review found it).
    @Test("A lone reply the kernel refuses for want of room arrives once the peer reads, with nothing else to wake the port")
    func lastReplyRefusedForRoomArrives() throws {
        let name = NamedPortTests.uniqueName("eagainlast")
        let padding = [UInt8](repeating: 0x33, count: 8000)
        let served = try PortOnItsOwnThread(name: name, threadName: "eagain-last") { _, data in data + padding }
        defer { served.close() }
        let peer = try #require(RawPortPeer(connectingTo: name))
        defer { peer.close() }
        #expect(peer.nextPacket()?.header.kind == .hello)
        let replyLength = PortWire.headerSize + 2 + padding.count
        var sent = 0
        var refusedAt = 0
        // One request at a time, never reading: each reply should be in the peer's socket
        // (FIONREAD counts every byte queued) within 300 ms; the first that is not was
        // refused for room (or is late: then it arrives all the same, below).
        while sent < 2000 {
            let data = [UInt8(truncatingIfNeeded: sent), UInt8(truncatingIfNeeded: sent >> 8)]
            try #require(peer.sendRequest(msgid: 1, sequence: UInt64(sent + 1), data: data))
            sent += 1
            var queued: Int32 = 0
            let arrived = waitUntil(timeout: .milliseconds(300)) {
                _ = ioctl(peer.socket, UInt(FIONREAD), &queued)
                return Int(queued) >= sent * replyLength
            }
            if !arrived {
                refusedAt = sent
                break
            }
        }
        try #require(refusedAt > 0, "the kernel had room for \(sent) replies")
        var got = 0
        while got < refusedAt {
            guard let packet = peer.nextPacket(within: .seconds(10)) else { break }
            if packet.header.kind == .reply { got += 1 }
        }
        #expect(got == refusedAt, "\(got) of \(refusedAt) replies came: the one refused for room never went again")
    }

    /// A reply whose submission the ring refuses (no submission entry, even after handing
    /// the queue to the kernel) ends the connection: the peer sees its end at once, never
    /// a reply later and never a wait to its timeout; the port serves the next connection.
    @Test("A reply the ring refuses ends its connection at once; the next connection is served")
    func refusedReplyEndsTheConnection() throws {
        let name = NamedPortTests.uniqueName("replyrefused")
        let served = try PortOnItsOwnThread(name: name, threadName: "reply-refused") { msgid, data in
            if msgid == 7, let core = RingRunLoop.current.waitCore() {
                let faults = RingFaults()
                // The entry the reply asks for, and the one asked again after submitting.
                faults.fail(.getSubmission, with: EBUSY, count: 2)
                core.ring.faults = faults
            }
            return data
        }
        defer { served.close() }
        let refused = try #require(RawPortPeer(connectingTo: name))
        defer { refused.close() }
        #expect(refused.nextPacket()?.header.kind == .hello)
        #expect(refused.sendRequest(msgid: 7, sequence: 1))
        let after = refused.nextPacket()
        #expect(after == nil, "a packet came after the refused reply: \(String(describing: after?.header))")
        var probe: UInt8 = 0
        #expect(recv(refused.socket, &probe, 1, Int32(MSG_DONTWAIT)) == 0, "the connection did not end")

        let next = try #require(RawPortPeer(connectingTo: name))
        defer { next.close() }
        #expect(next.nextPacket()?.header.kind == .hello)
        #expect(next.sendRequest(msgid: 1, sequence: 1, data: [4, 2]))
        let reply = next.nextPacket()
        #expect(reply?.header.kind == .reply && reply?.data == [4, 2])
    }

    /// A peer that sends requests and does not read their replies: the replies the kernel
    /// has no room for wait in the port's queue (sent again, waiting for room in the
    /// kernel), the port's thread never waits on that peer — another peer's round trips
    /// are answered meanwhile — and once the slow peer reads, it gets every reply, whole
    /// and in the order of its requests.
    @Test("A peer that reads its replies late: another peer is served meanwhile, and it gets every reply, in order")
    func slowReaderGetsEveryReplyInOrder() throws {
        let name = NamedPortTests.uniqueName("slowreader")
        let large = [UInt8](repeating: 0x5A, count: 8 * 1024)
        let served = try PortOnItsOwnThread(name: name, threadName: "slow-reader") { msgid, data in
            msgid == 5 ? data + large : data
        }
        defer { served.close() }
        let slow = try #require(RawPortPeer(connectingTo: name))
        defer { slow.close() }
        #expect(slow.nextPacket()?.header.kind == .hello)
        // Requests until the kernel holds them back for 200 ms (the port has stopped
        // reading them: its queue of unread replies is past its bound).
        var sent: UInt64 = 0
        while sent < 10_000 {
            let data = [UInt8(truncatingIfNeeded: sent), UInt8(truncatingIfNeeded: sent >> 8)]
            if slow.sendRequest(msgid: 5, sequence: sent + 1, data: data) {
                sent += 1
                continue
            }
            var entry = pollfd(fd: slow.socket, events: Int16(POLLOUT), revents: 0)
            if poll(&entry, 1, 200) != 1 { break }
        }
        #expect(sent > 40, "only \(sent) requests: the kernel had room for every reply")

        let other = try #require(RawPortPeer(connectingTo: name))
        defer { other.close() }
        #expect(other.nextPacket()?.header.kind == .hello)
        for index in 1...20 {
            #expect(other.sendRequest(msgid: 1, sequence: UInt64(index), data: [UInt8(index)]))
            let reply = other.nextPacket(within: .seconds(5))
            #expect(reply?.header.sequence == UInt64(index) && reply?.data == [UInt8(index)], "round trip \(index) beside the slow peer")
        }

        var next: UInt64 = 1
        var assembler = PortWire.Assembler(limit: 1 << 20)
        while next <= sent {
            guard let packet = slow.nextPacket() else { break }
            let bytes = PortWire.packet(packet.header, packet.data[...])
            guard case .message(let message)? = try? bytes.withUnsafeBytes({ try assembler.take($0) }) else { continue }
            // Request `next` carried its index, `next - 1`.
            let data = [UInt8(truncatingIfNeeded: next - 1), UInt8(truncatingIfNeeded: (next - 1) >> 8)]
            guard message.sequence == next, message.data == data + large else {
                Issue.record("reply \(message.sequence) (\(message.data.count) bytes) where \(next) was due")
                return
            }
            next += 1
        }
        #expect(next == sent + 1, "\(next - 1) of \(sent) replies came")
    }
}
