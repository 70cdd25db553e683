// One message to each of several ports, the sends to other processes submitted together.
extension RemoteMessagePort {
    /// Sends one one-way message to each port without waiting, as
    /// ``send(msgid:data:timeout:)`` with a timeout of zero would to each in turn (a full
    /// queue fails at once with ``MessagePortError/sendTimeout(_:)``), but with the sends
    /// to ports of other processes submitted together on the calling thread's loop's ring:
    /// one call into the kernel for all of them rather than one a port, so a server that
    /// sends a frame to many clients wakes the kernel once. Returns each message's error,
    /// at its place in `messages` (`nil`: sent).
    ///
    /// A message's bytes are its `lead`, then its `body`: messages that share one body
    /// (the same array), each with a lead of its own, have it copied once for the batch
    /// rather than once a message where their packets are gathered rather than copied
    /// whole (ProcessPortConnection+Batch says which).
    ///
    /// The order: the batch (the first message to each port of another process, when it
    /// fits one packet) goes first, in the order of `messages`; then the others, in the
    /// order of `messages`: messages to ports of this process, a message longer than one
    /// packet, and any later message to a port already in the batch, each through the
    /// single send. So each port gets its messages in the order given, each numbered and
    /// limited as by a single send (a message over a port's size limit fails alone), while
    /// a port of this process may get its message after ports of other processes that
    /// come later in `messages`. A port found gone calls its invalidation callback.
    package static func sendWithoutWaiting(
        _ messages: [(port: RemoteMessagePort, msgid: Int32, lead: [UInt8], body: [UInt8])]
    )
        -> [MessagePortError?]
    {
        var failures = [MessagePortError?](repeating: nil, count: messages.count)
        var batch: [(connection: ProcessPortConnection, msgid: Int32, lead: [UInt8], body: [UInt8])] = []
        var positions: [Int] = []
        for (position, message) in messages.enumerated() {
            if case .process(let connection) = message.port.target {
                batch.append((connection, message.msgid, message.lead, message.body))
                positions.append(position)
            }
        }
        var sent = [Bool](repeating: false, count: messages.count)
        // (One message to another process: the single send is the batch.)
        if batch.count > 1 {
            for (position, result) in zip(positions, ProcessPortConnection.sendWithoutWaiting(batch)) {
                sent[position] = true
                guard case .failure(let error) = result else { continue }
                failures[position] = error
                messages[position].port.notice(error)
            }
        }
        for (position, message) in messages.enumerated() where !sent[position] {
            do {
                try message.port.send(msgid: message.msgid, lead: message.lead, body: message.body, timeout: .zero)
            } catch {
                failures[position] = error
            }
        }
        return failures
    }

    /// Sends one one-way message to each port without waiting, as the form with a lead and
    /// a body does, each message's `data` its body, with no lead.
    package static func sendWithoutWaiting(
        _ messages: [(port: RemoteMessagePort, msgid: Int32, data: [UInt8])]
    ) -> [MessagePortError?] {
        sendWithoutWaiting(messages.map { (port: $0.port, msgid: $0.msgid, lead: [], body: $0.data) })
    }
}
