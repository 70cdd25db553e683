import DequeModule

/// One message from a thread of this process on its way to a local port.
struct Envelope: Sendable {
    var msgid: Int32
    var data: [UInt8]
    var reply: ReplySlot?
}

/// What a local port, its transport and the remote ports of this process that refer to it
/// share: the callback, the bounded mailbox of messages from threads, validity.
///
/// Threading: the mailbox and the watchers are guarded by `state` (any thread sends);
/// `deliver` and `perform` run on the port's loop thread only.
final class PortCore: Sendable {
    let name: String
    let loop: RingRunLoop
    let doorbell: LoopDoorbell
    let limit: Int
    let limits: LocalMessagePort.Limits
    let receiver: LocalMessagePort.Receiver
    let listener: PortListener
    /// The port's key in this process's registry: its name and namespace.
    var key: String { listener.namespace.key(of: name) }
    private let state = ThreadLock(State())
    /// Senders waiting for room in a full mailbox.
    private let room = ThreadCondition()

    private struct State {
        var mailbox: Deque<Envelope> = []
        var queuedBytes = 0
        var valid = true
        var waitingSenders = 0
        var watchers: [WeakRemote] = []
    }

    private struct WeakRemote {
        weak var port: RemoteMessagePort?
    }

    init(
        name: String, loop: RingRunLoop, doorbell: LoopDoorbell, limit: Int, limits: LocalMessagePort.Limits,
        listener: PortListener, receiver: @escaping LocalMessagePort.Receiver
    ) {
        self.listener = listener
        self.name = name
        self.loop = loop
        self.doorbell = doorbell
        self.limit = limit
        self.limits = limits
        self.receiver = receiver
    }

    var isValid: Bool { state.withLock { $0.valid } }

    /// Messages from threads waiting in the mailbox.
    var queuedCount: Int { state.withLock { $0.mailbox.count } }

    /// Puts a message from a thread of this process in the mailbox, waiting until
    /// `deadline` for room when the mailbox is full, and rings the port's doorbell when
    /// the mailbox was empty. The mailbox is the message's one queue, and its lock the one
    /// lock it takes; the doorbell carries no message, only the wake-up of a burst.
    func enqueue(_ envelope: Envelope, deadline: MonotonicInstant) throws(MessagePortError) {
        let size = envelope.data.count
        guard size <= limit else { throw .tooLarge(size: size, limit: limit) }
        let limits = limits
        func full(_ state: State) -> Bool {
            !state.mailbox.isEmpty
                && (state.mailbox.count >= limits.maximumQueuedMessages
                    || state.queuedBytes + size > limits.maximumQueuedBytes)
        }
        enum Outcome { case queued(first: Bool), invalid, full }
        let outcome = state.withLock(
            waitingOn: room, until: deadline,
            while: { state in
                guard state.valid, full(state) else { return false }
                state.waitingSenders += 1
                return true
            }
        ) { state, _ -> Outcome in
            guard state.valid else { return .invalid }
            guard !full(state) else { return .full }
            let first = state.mailbox.isEmpty
            state.mailbox.append(envelope)
            state.queuedBytes += size
            return .queued(first: first)
        }
        switch outcome {
        case .queued(let first):
            // One wake-up per burst: a mailbox that was not empty has a delivery coming,
            // which takes every message there.
            if first { doorbell.send(0) }
        case .invalid: throw .invalidated(name)
        case .full: throw .sendTimeout(name)
        }
    }

    /// Runs the callback for every message waiting in the mailbox, until it is empty
    /// (loop thread, from the port's source): the doorbell rang once for all of them.
    func deliver() {
        while let envelope = takeFromMailbox() {
            let reply = perform(
                ReceivedMessage(
                    msgid: envelope.msgid, data: envelope.data, isRequest: envelope.reply != nil, sender: .thisProcess))
            envelope.reply?.fulfil(reply)
        }
    }

    private func takeFromMailbox() -> Envelope? {
        let (envelope, wake) = state.withLock { state -> (Envelope?, Bool) in
            guard state.valid, let envelope = state.mailbox.popFirst() else { return (nil, false) }
            state.queuedBytes -= envelope.data.count
            let wake = state.waitingSenders > 0
            state.waitingSenders = 0
            return (envelope, wake)
        }
        if wake { room.broadcast() }
        return envelope
    }

    /// Runs the callback for one message (loop thread): the user's callout, which makes
    /// the pass one that handled a source.
    func perform(_ message: ReceivedMessage) -> [UInt8] {
        loop.noteSourceHandled()
        return receiver(message) ?? []
    }

    func addWatcher(_ remote: RemoteMessagePort) {
        state.withLock { state in
            state.watchers.removeAll { $0.port == nil }
            state.watchers.append(WeakRemote(port: remote))
        }
    }

    func invalidate() {
        let taken = state.withLock { state -> (Deque<Envelope>, [WeakRemote])? in
            guard state.valid else { return nil }
            state.valid = false
            defer { (state.mailbox, state.watchers, state.queuedBytes) = ([], [], 0) }
            return (state.mailbox, state.watchers)
        }
        guard let (pending, watchers) = taken else { return }
        room.broadcast()
        PortRegistry.shared.unregister(self)
        listener.stop()
        doorbell.close()
        for envelope in pending { envelope.reply?.fail(.becameInvalid(name)) }
        for watcher in watchers { watcher.port?.portWentAway() }
    }
}
