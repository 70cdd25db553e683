// One message to each of several ports, the sends to other processes submitted together.
extension RemoteMessagePort {
    /// Sends one one-way message to each port without waiting, as
    /// ``send(msgid:data:timeout:)`` with a timeout of zero would to each in turn (a full
    /// queue fails at once with ``MessagePortError/sendTimeout(_:)``), but with the sends
    /// to ports of other processes submitted together on the calling thread's loop's ring:
    /// one call into the kernel for all of them rather than one a port, so a server that
    /// sends a frame to many clients wakes the kernel once. Returns each message's error,
    /// in order (`nil`: sent).
    ///
    /// Each port's messages keep their order, and each is numbered and limited as by a
    /// single send (a message over a port's size limit fails alone). A message longer than
    /// one packet, and any later message to the same port, go after the others, each
    /// through the single send. A port found gone calls its invalidation callback.
    package static func sendWithoutWaiting(
        _ messages: [(port: RemoteMessagePort, msgid: Int32, data: [UInt8])]
    )
        -> [MessagePortError?]
    {
        var failures = [MessagePortError?](repeating: nil, count: messages.count)
        var batch: [(connection: ProcessPortConnection, msgid: Int32, data: [UInt8])] = []
        var positions: [Int] = []
        for (position, message) in messages.enumerated() {
            if case .process(let connection) = message.port.target {
                batch.append((connection, message.msgid, message.data))
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
                try message.port.send(msgid: message.msgid, data: message.data, timeout: .zero)
            } catch {
                failures[position] = error
            }
        }
        return failures
    }
}
