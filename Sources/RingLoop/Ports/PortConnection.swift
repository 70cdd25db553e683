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
/// Writing: the hello and the replies are packets in one ordered queue, sent one at a
/// time through the port's loop's ring; nothing is sent with a system call of its own. A
/// packet with nothing ahead of it is sent at once (`IORING_OP_SEND`, `MSG_DONTWAIT`),
/// handed to the kernel with the loop's next wait — the reply to a request and the wait
/// for the next are one call into the kernel — and that wait does not end for its
/// success unless more packets wait behind it. A peer without room fails it with
/// `EAGAIN`, which ends the wait: it goes again waiting for room in the kernel, and so
/// does each packet queued until the queue is empty. The loop's thread never blocks on
/// a peer. When the bytes a peer has not read pass
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
    /// The first packet queued is with the kernel.
    private var sendInFlight = false
    /// A send found no room: packets wait for room in the kernel until the queue is empty.
    private var waitingForRoom = false
    /// The at-once send in flight, while the loop's wait need not end for its success
    /// (nothing is queued behind it).
    private var atOnceTicket: WaitCore.SubmissionTicket?
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
            if let ring = core.loop.waitCore() { PortWire.drainQueued(channel.fileDescriptor.rawValue, on: ring) { received($0) } }
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

    /// Writes a reply's packets, each behind those not sent yet (``write(_:)``).
    private func writeReply(msgid: Int32, sequence: UInt64, data: [UInt8]) {
        guard !dropped, !writingFailed else { return }
        data.withUnsafeBytes { bytes in
            PortWire.forEachPacket(msgid: msgid, kind: .reply, sequence: sequence, data: bytes) { header, fragment in
                var packet = [UInt8]()
                packet.reserveCapacity(header.count + fragment.count)
                packet += header
                packet += fragment
                write(packet)
            }
        }
    }

    /// Queues a packet behind those not sent yet, and sends it when none is in flight.
    private func write(_ packet: [UInt8]) {
        guard !dropped, !writingFailed else { return }
        outgoing.append(packet)
        outgoingBytes += packet.count
        if !sendInFlight {
            sendNext()
        } else if let ticket = atOnceTicket {
            // A packet waits behind the send in flight: the loop must hear of that send's
            // completion as soon as the kernel posts it, to send this one.
            atOnceTicket = nil
            core.loop.waitCore()?.needCompletion(of: ticket)
        }
        if outgoingBytes > core.limits.maximumUnreadReplyBytes, let receiving, !receiveEnding {
            // The peer is not reading its replies: stop reading its requests.
            receiveEnding = true
            channel.cancel(receiving)
        }
    }

    /// Sends the first packet queued through the loop's ring: at once
    /// (``LoopIOChannel/sendAtOnce(_:_:completion:)``, `MSG_DONTWAIT`, handed to the kernel
    /// with the loop's next wait) while the peer has had room; after a send found no room,
    /// waiting for room in the kernel (``LoopIOChannel/send(_:completion:)-([UInt8],_)``)
    /// until the queue is empty again.
    private func sendNext() {
        guard !dropped, let packet = outgoing.first else {
            sendInFlight = false
            waitingForRoom = false
            return
        }
        sendInFlight = true
        let count = packet.count
        let completion: LoopIOChannel.Handler = { _, completion in self.sent(count, completion) }
        do {
            if waitingForRoom {
                try channel.send(packet, completion: completion)
            } else {
                let ticket = try packet.withUnsafeBytes { bytes throws(IOFailure) in
                    try channel.sendAtOnce(bytes, UnsafeRawBufferPointer(start: nil, count: 0), completion: completion).ticket
                }
                if outgoing.count > 1, let ticket {
                    core.loop.waitCore()?.needCompletion(of: ticket)
                } else {
                    atOnceTicket = ticket
                }
            }
        } catch {
            // The ring refused the send (its queue full even after submitting, or the
            // channel closing): the peer sees its connection end, and what it waits for
            // fails at once rather than at its timeout.
            drop(because: "the ring refused a reply: \(error)")
        }
    }

    /// The first packet queued went to the kernel (its `count` bytes), or did not.
    private func sent(_ count: Int, _ completion: IOCompletion) {
        atOnceTicket = nil
        switch completion.outcome {
        case .transferred(let transferred) where transferred == count:
            guard !writingFailed, !dropped else { return }
            outgoing.removeFirst()
            outgoingBytes -= count
            sendNext()
            resumeIfDrained()
        case .failed(.system(let failure)) where failure == .resourceTemporarilyUnavailable:
            // No room at once: the packet goes again, waiting for room in the kernel, and
            // so does every packet queued until the queue is empty.
            guard !writingFailed, !dropped else { return }
            waitingForRoom = true
            sendNext()
        case .failed(.brokenPipe), .failed(.connectionReset), .failed(.cancelled), .failed(.closed):
            writeFailed(nil)
        default:
            writeFailed("\(completion)")
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
        atOnceTicket = nil
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
