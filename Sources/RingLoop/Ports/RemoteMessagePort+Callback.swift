import Glibc
import SystemPackage

extension RemoteMessagePort {
    /// Sends a request without waiting for its reply: the reply, or why there is none,
    /// goes to `completion` on the calling thread's loop, in `modes`, once. For a loop
    /// that must not wait on the port's process (a client whose server may hang): nothing
    /// here blocks, and the loop runs on meanwhile.
    ///
    /// The request goes to the port at once or not at all (a send timeout of zero): a
    /// port whose queue is full throws ``MessagePortError/sendTimeout(_:)`` here, as does
    /// every other failure to send. The reply of a port of another process is read by the
    /// calling thread's loop from its ring, while it runs in one of `modes`; past
    /// `replyTimeout` (a timer in `modes`), `completion` gets
    /// ``MessagePortError/replyTimeout(_:)`` and a later reply is dropped.
    /// - Parameters:
    ///   - msgid: The message id.
    ///   - data: The request's bytes.
    ///   - replyTimeout: How long to wait for the reply.
    ///   - modes: The modes of the calling thread's loop that read the reply and run
    ///     `completion` (by default the common modes).
    ///   - completion: Called once on the calling thread, with the reply or the error:
    ///     ``MessagePortError/replyTimeout(_:)``, ``MessagePortError/becameInvalid(_:)``,
    ///     ``MessagePortError/tooLarge(size:limit:)``, ``MessagePortError/accessDenied(_:)``,
    ///     ``MessagePortError/tooManyConnections(_:)``,
    ///     ``MessagePortError/transportError(_:reason:)``.
    /// - Throws: what sending throws: ``MessagePortError/sendTimeout(_:)``,
    ///   ``MessagePortError/tooLarge(size:limit:)``, ``MessagePortError/invalidated(_:)``,
    ///   ``MessagePortError/accessDenied(_:)``, ``MessagePortError/tooManyConnections(_:)``.
    public func sendRequest(
        msgid: Int32, data: [UInt8], replyTimeout: Duration, inModes modes: [RingRunLoop.Mode] = [.common],
        completion: @escaping @Sendable (Result<[UInt8], MessagePortError>) -> Void
    ) throws(MessagePortError) {
        let loop = RingRunLoop.current
        let slot = ReplySlot()
        let now = MonotonicInstant.now
        try noticingInvalidation { () throws(MessagePortError) in
            switch target {
            case .thread(let core):
                try core.enqueue(Envelope(msgid: msgid, data: data, reply: slot), deadline: now)
            case .process(let connection):
                _ = try connection.send(msgid: msgid, data: data, request: slot, deadline: now)
            }
        }
        let request = PendingReply(port: self, slot: slot, completion: completion)
        // The reply's reader: the socket's readiness on this loop's ring, in `modes`.
        if case .process(let connection) = target {
            let reader = LoopPortSource(
                fileDescriptor: FileDescriptor(rawValue: connection.socket),
                events: PollEvents(rawValue: Int16(POLLIN) | PortWire.peerClosed)
            ) { [weak connection] _ in connection?.readAvailable() }
            request.reader = reader
            for mode in modes { loop.add(reader, to: mode) }
        }
        let timer = LoopTimer(after: replyTimeout) { _ in request.finish() }
        request.timer = timer
        for mode in modes { loop.add(timer, to: mode) }
        slot.whenSettled {
            loop.perform(inModes: modes) { request.finish() }
            loop.wakeUp()
        }
    }
}

/// A request sent by ``RemoteMessagePort/sendRequest(msgid:data:replyTimeout:inModes:completion:)``,
/// until its completion has run.
///
/// Threading: made, finished and dropped on the requesting loop's thread (its timer's
/// callout, or a block performed there); `@unchecked Sendable` to be captured by those
/// `@Sendable` closures.
private final class PendingReply: @unchecked Sendable {
    let port: RemoteMessagePort
    let slot: ReplySlot
    var completion: (@Sendable (Result<[UInt8], MessagePortError>) -> Void)?
    var reader: LoopPortSource?
    var timer: LoopTimer?

    init(port: RemoteMessagePort, slot: ReplySlot, completion: @escaping @Sendable (Result<[UInt8], MessagePortError>) -> Void) {
        self.port = port
        self.slot = slot
        self.completion = completion
    }

    /// The reply came, or the time is up: the completion runs, once.
    func finish() {
        guard let completion else { return }
        self.completion = nil
        timer?.invalidate()
        reader?.invalidate()
        timer = nil
        reader = nil
        let port = port
        let slot = slot
        let result = Result { () throws(MessagePortError) in
            try port.noticingInvalidation { () throws(MessagePortError) in
                do throws(MessagePortError) {
                    return try slot.finish(name: port.name)
                } catch {
                    if case .process(let connection) = port.target { connection.abandon(slot) }
                    throw error
                }
            }
        }
        completion(result)
    }
}
