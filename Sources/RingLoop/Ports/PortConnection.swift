import CLibURing
import DequeModule
import Glibc
import SystemPackage

/// One connection from another process to a local port, served on the port's loop.
///
/// Reading: a multishot receive into two provided buffers of one packet each; each packet
/// goes to the connection's ``PortWire/Assembler``, which holds at most one message of at
/// most the port's limit. A whole message runs the port's callback at once, in the
/// callout (the transport's channels are performed only in the port source's modes).
///
/// Writing: replies are packets in one ordered queue. A packet goes to the kernel at once
/// when nothing is queued (`MSG_DONTWAIT`); otherwise it waits its turn, and the queue is
/// sent one packet at a time through the ring. When the bytes a peer has not read pass
/// ``LocalMessagePort/Limits/maximumUnreadReplyBytes`` the connection stops reading
/// requests (its receive is cancelled) until the queue is down to half of that: a peer
/// that sends requests and never reads the replies fills its own socket and waits, and
/// the port's memory stays bounded.
///
/// Threading: confined to the port's loop thread (created, read, written and dropped
/// there); `@unchecked Sendable` only to be captured by the channel's `@Sendable`
/// completion closures, which run on that thread.
final class PortConnection: @unchecked Sendable {
    let channel: LoopIOChannel
    let peer: PeerCredentials
    private unowned let listener: PortListener
    private let core: PortCore
    private var assembler: PortWire.Assembler
    private var outgoing: Deque<[UInt8]> = []
    private var outgoingBytes = 0
    private var sendInFlight = false
    /// The receive while it runs; `nil` while reading is paused (or has ended).
    private var receiving: IOOperation?
    /// A paused receive whose final completion has not come yet.
    private var receiveEnding = false
    private var dropped = false
    /// The peer takes no more replies (see ``writeFailed(_:)``).
    private var writingFailed = false

    init(descriptor: Int32, peer: PeerCredentials, listener: PortListener, core: PortCore, portSource: LoopPortSource) {
        channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: descriptor), loop: core.loop)
        channel.source.follow(portSource)
        self.peer = peer
        self.listener = listener
        self.core = core
        assembler = PortWire.Assembler(limit: core.limit)
    }

    /// Says hello (the port's limit) and starts reading.
    func start() {
        let hello = PortWire.Header(msgid: PortWire.version, kind: .hello, sequence: 0, total: UInt64(core.limit))
        write(PortWire.packet(hello))
        startReceiving()
    }

    private func startReceiving() {
        guard !dropped, receiving == nil, !receiveEnding else { return }
        do {
            receiving = try channel.receive(
                bufferCount: 2, bufferSize: PortWire.packetSize + 1,
                completion: { _, completion in
                    guard completion.isFinal else { return }
                    self.receiveEnded(completion.outcome)
                },
                received: { _, packet in packet.withUnsafeBytes { self.received($0) } })
        } catch {
            drop(because: "cannot receive: \(error)")
        }
    }

    private func receiveEnded(_ outcome: IOCompletion.Outcome) {
        let paused = receiveEnding
        receiving = nil
        receiveEnding = false
        switch outcome {
        case .failed(.cancelled) where paused:
            resumeIfDrained()
        case .failed(.connectionReset):
            // The peer closed with replies unread: what it sent before is still queued.
            PortWire.drainQueued(channel.fileDescriptor.rawValue) { received($0) }
            drop(because: nil)
        case .endOfFile, .failed(.cancelled), .failed(.closed):
            drop(because: nil)
        default:
            drop(because: "its receive ended: \(outcome)")
        }
    }

    /// One packet from the peer (loop thread, in a callout of the port's modes).
    private func received(_ packet: UnsafeRawBufferPointer) {
        guard !dropped else { return }
        do throws(PortWire.Violation) {
            switch try assembler.take(packet) {
            case .none:
                break
            case .message(let message):
                try perform(message)
            case .tooLarge(let header):
                if header.kind == .request {
                    let answer = PortWire.Header(
                        msgid: header.msgid, kind: .tooLarge, sequence: header.sequence, total: UInt64(core.limit))
                    write(PortWire.packet(answer))
                } else {
                    listener.logAboutPeer(
                        .notice, "port '\(core.name)' drops a message of \(header.total) bytes from \(peer): its limit is \(core.limit)")
                }
            case .control(let header):
                throw PortWire.Violation.unknownKind(header.kind.rawValue)
            }
        } catch {
            drop(because: "it broke the protocol: \(error)")
        }
    }

    private func perform(_ message: PortWire.Message) throws(PortWire.Violation) {
        switch message.kind {
        case .message:
            _ = core.perform(ReceivedMessage(msgid: message.msgid, data: message.data, isRequest: false, sender: .process(peer)))
        case .request:
            let reply = core.perform(
                ReceivedMessage(msgid: message.msgid, data: message.data, isRequest: true, sender: .process(peer)))
            guard !dropped else { return }
            writeReply(msgid: message.msgid, sequence: message.sequence, data: reply)
        default:
            throw .unknownKind(message.kind.rawValue)
        }
    }

    // MARK: Writing

    /// Writes a reply's packets: while nothing waits to be sent, each straight to the
    /// kernel, its header and its fragment gathered by one `sendmsg` (no packet is built);
    /// from the first the kernel cannot take at once, through the queue (``write(_:)``).
    private func writeReply(msgid: Int32, sequence: UInt64, data: [UInt8]) {
        guard !dropped, !writingFailed else { return }
        var direct = outgoing.isEmpty && !sendInFlight
        data.withUnsafeBytes { bytes in
            PortWire.forEachPacket(msgid: msgid, kind: .reply, sequence: sequence, data: bytes) { header, fragment in
                if direct {
                    switch sendAtOnce(header, fragment) {
                    case .sent: return
                    case .later: direct = false
                    case .failed: return
                    }
                }
                write(Array(header) + Array(fragment))
            }
        }
    }

    private enum Immediate { case sent, later, failed }

    /// One non-blocking `sendmsg` of a packet's header and fragment.
    private func sendAtOnce(_ header: UnsafeRawBufferPointer, _ fragment: UnsafeRawBufferPointer) -> Immediate {
        guard !dropped, !writingFailed else { return .failed }
        var vectors = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: header.baseAddress), iov_len: header.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: fragment.baseAddress), iov_len: fragment.count)
        )
        let sent = withUnsafeMutableBytes(of: &vectors) { vectors in
            var message = msghdr()
            message.msg_iov = vectors.baseAddress?.assumingMemoryBound(to: iovec.self)
            message.msg_iovlen = 2
            return sendmsg(channel.fileDescriptor.rawValue, &message, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
        if sent == header.count + fragment.count { return .sent }
        let failure = errno
        guard sent < 0, failure == EAGAIN || failure == EINTR else {
            writeFailed(sent < 0 && (failure == EPIPE || failure == ECONNRESET) ? nil : "errno \(failure)")
            return .failed
        }
        return .later
    }

    /// Queues a packet behind those not sent yet, or sends it at once when none wait.
    private func write(_ packet: [UInt8]) {
        guard !dropped, !writingFailed else { return }
        if outgoing.isEmpty, !sendInFlight {
            let sent = packet.withUnsafeBytes {
                Glibc.send(channel.fileDescriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            }
            if sent == packet.count { return }
            let failure = errno
            guard sent < 0, failure == EAGAIN || failure == EINTR else {
                return writeFailed(sent < 0 && (failure == EPIPE || failure == ECONNRESET) ? nil : "errno \(failure)")
            }
        }
        outgoing.append(packet)
        outgoingBytes += packet.count
        if !sendInFlight { sendNext() }
        if outgoingBytes > core.limits.maximumUnreadReplyBytes, let receiving, !receiveEnding {
            // The peer is not reading its replies: stop reading its requests.
            receiveEnding = true
            channel.cancel(receiving)
        }
    }

    private func sendNext() {
        guard !dropped, let packet = outgoing.first else {
            sendInFlight = false
            return
        }
        sendInFlight = true
        do {
            try channel.send(packet) { _, completion in
                switch completion.outcome {
                case .transferred(let count) where count == packet.count:
                    guard !self.writingFailed else { return }
                    self.outgoing.removeFirst()
                    self.outgoingBytes -= count
                    self.sendNext()
                    self.resumeIfDrained()
                case .failed(.brokenPipe), .failed(.connectionReset), .failed(.cancelled), .failed(.closed):
                    self.writeFailed(nil)
                default:
                    self.writeFailed("\(completion)")
                }
            }
        } catch {
            writeFailed("\(error)")
        }
    }

    /// The peer cannot take replies any more (it shut its end, or went): what is queued
    /// is dropped, and so is every later reply. Requests it sent before are still read
    /// and performed — a peer may send and close at once — until its end of stream.
    private func writeFailed(_ reason: String?) {
        guard !writingFailed else { return }
        writingFailed = true
        if let reason { listener.logAboutPeer(.warning, "port '\(core.name)' cannot reply to \(peer): \(reason)") }
        outgoing.removeAll()
        outgoingBytes = 0
        sendInFlight = false
        resumeIfDrained()
    }

    /// Reads again once the peer has caught up with its replies.
    private func resumeIfDrained() {
        guard receiving == nil, !receiveEnding, outgoingBytes <= core.limits.maximumUnreadReplyBytes / 2 else { return }
        startReceiving()
    }

    // MARK: Ending

    /// Closes the connection and frees what it held; `reason` is logged when the peer did
    /// something wrong (`nil` for an ordinary end).
    private func drop(because reason: String?) {
        guard !dropped else { return }
        dropped = true
        if let reason { listener.logAboutPeer(.warning, "port '\(core.name)' drops the connection of \(peer): \(reason)") }
        outgoing.removeAll()
        outgoingBytes = 0
        listener.remove(self)
        channel.close()
    }
}
