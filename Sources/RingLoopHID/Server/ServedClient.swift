import DequeModule
import Logging
import RingLoop

/// One client of a ``HIDEventServer``, as the server keeps it: where its events go, what it
/// has seen, what it has not acknowledged, where it is in its life. State the server's
/// router drives (`HIDEventServer+Driving.swift`): its operations say what they found
/// (``Outcome``) and never call back into the server. Confined to the server's loop thread.
///
/// Two views of the client's devices make its flow control a difference, as the event
/// system's resync does: `routed` follows every event routed to the client (what it would
/// have seen had nothing been dropped), `sent` every event that went out. While the client
/// lags — its outbound window or its socket full, or not responding — events advance
/// `routed` only; once it has acknowledged everything sent, it gets `eventsDropped` and
/// the events from `sent` to `routed`, and the two are one again.
final class ServedClient {
    /// Where the client is in its life.
    enum State: Equatable {
        /// Frames go out as they are gathered.
        case sending
        /// Its window or its port's queue was full: events are counted, not sent (additions
        /// and removals wait), until it has acknowledged everything sent; then it catches
        /// up by difference.
        case lagging
        /// Lagging, and it acknowledged nothing for the server's not-responding timeout
        /// (reported once; its next acknowledgement makes it merely lagging).
        case notResponding
        /// Detached: it said goodbye, its process ended, its port failed, or the server
        /// stopped. Nothing more is sent.
        case gone
    }

    /// What an operation that sends found out, for the router to act on.
    enum Outcome: Equatable {
        case done
        /// The client's port is gone: the router detaches it.
        case gone
    }

    let id: HIDServerClient.ID
    let hello: ServerWire.Hello
    let credentials: PeerCredentials
    let port: RemoteMessagePort
    /// The server's name (for the log) and its window (the most batches outstanding).
    let serverName: String
    let window: Int
    /// The server's last batch encoding, shared by all its clients.
    let encoding: SharedBatchEncoding
    let attachedAt: MonotonicInstant
    private(set) var state = State.sending {
        didSet { checkInvariants() }
    }
    /// What was routed to the client, and what went out.
    var routed = VisibleStates()
    var sent = VisibleStates()
    /// Devices whose description the client has (sent, or owed after a lag).
    var announced = Set<HIDDeviceID>()
    /// Batches sent and not acknowledged yet, oldest first, with when they went.
    var outstanding: Deque<(sequence: UInt64, sentAt: MonotonicInstant)> = []
    var nextSequence: UInt64 = 1
    var lastAckAt: MonotonicInstant
    /// Events routed to it and not sent since it started lagging.
    var droppedSinceLag = 0
    /// Additions and removals of devices not sent while it lagged, in order (never dropped;
    /// at most one addition per device present and one removal per device announced).
    var lifecycleBacklog: [HIDEvent] = []
    /// The frame being gathered: events of one device and timestamp.
    var pending: [HIDEvent] = []
    var pendingBytes = 0
    /// Counters for ``HIDServerClient``.
    var eventsSent = 0
    var eventsDropped = 0
    var batchesSent = 0

    /// Events are not sent, only counted, until the client catches up.
    var lagging: Bool { state == .lagging || state == .notResponding }
    var notResponding: Bool { state == .notResponding }
    var gone: Bool { state == .gone }

    init(
        id: HIDServerClient.ID, hello: ServerWire.Hello, credentials: PeerCredentials, port: RemoteMessagePort,
        serverName: String, window: Int, encoding: SharedBatchEncoding
    ) {
        self.id = id
        self.encoding = encoding
        self.hello = hello
        self.credentials = credentials
        self.port = port
        self.serverName = serverName
        self.window = window
        attachedAt = .now
        lastAckAt = .now
    }

    /// Checks (debug builds only) what the state promises: a client that sends holds no
    /// backlog and has dropped nothing since a lag; one that lags gathers no frame; the
    /// frame's byte count is its events'; batches outstanding are in sequence.
    func checkInvariants() {
        #if DEBUG
        switch state {
        case .sending:
            precondition(droppedSinceLag == 0 && lifecycleBacklog.isEmpty, "a client that sends has a lag's leftovers")
        case .lagging, .notResponding:
            precondition(pending.isEmpty, "a lagging client gathers a frame")
        case .gone:
            break
        }
        precondition(pendingBytes == pending.reduce(0) { $0 + ServerWire.encodedSize($1) }, "the frame's byte count is off")
        precondition(pending.count <= ServerWire.maximumBatchEvents, "the frame is over a batch")
        var previous: UInt64 = 0
        for batch in outstanding {
            precondition(batch.sequence > previous && batch.sequence < nextSequence, "batches outstanding out of sequence")
            previous = batch.sequence
        }
        #endif
    }

    var info: HIDServerClient {
        HIDServerClient(
            id: id, name: hello.name, credentials: credentials, isResponding: !notResponding, eventsSent: eventsSent,
            eventsDropped: eventsDropped, outstandingBatches: outstanding.count)
    }

    /// Largest bytes of events in one batch: one port packet with room for the batch header.
    static let batchByteLimit = PortWire.fragmentCapacity - 64

    /// Takes an event routed to the client: into its view, and into the frame being
    /// gathered (the frame before it sent when this one starts another), or counted while
    /// it lags.
    func take(_ event: HIDEvent) -> Outcome {
        routed.apply(event)
        let isLifecycle = event.kind.isDeviceLifecycle
        if lagging { return hold(event, isLifecycle) }
        // (Fields of the first event, read in place: not a copy of the whole event.)
        if !pending.isEmpty, pending[0].device != event.device || pending[0].timestamp != event.timestamp {
            guard flush() == .done else { return .gone }
            if lagging { return hold(event, isLifecycle) }
        }
        let size = ServerWire.encodedSize(event)
        if pendingBytes + size > Self.batchByteLimit || pending.count >= ServerWire.maximumBatchEvents {
            guard flush() == .done else { return .gone }
            if lagging { return hold(event, isLifecycle) }
        }
        pending.append(event)
        pendingBytes += size
        return .done
    }

    /// An event that finds the client lagging: kept if an addition or removal, else counted.
    private func hold(_ event: HIDEvent, _ isLifecycle: Bool) -> Outcome {
        if isLifecycle { holdLifecycle(event) } else { droppedSinceLag += 1 }
        return .done
    }

    /// Keeps an addition or removal for the client's catch-up. A device added and removed
    /// while it lags, its description never sent, leaves nothing (as catch-up would drop
    /// both): the backlog holds at most one addition per device present and one removal
    /// per device the client was told of, however many come and go meanwhile.
    private func holdLifecycle(_ event: HIDEvent) {
        if event.kind == .deviceRemoved, !announced.contains(event.device),
            let addition = lifecycleBacklog.firstIndex(where: { $0.device == event.device && $0.kind == .deviceAdded })
        {
            lifecycleBacklog.remove(at: addition)
            return
        }
        lifecycleBacklog.append(event)
    }

    /// Sends the frame gathered, as one batch; a full window or socket makes the client
    /// lag (the frame's events count as dropped; additions and removals wait).
    func flush() -> Outcome {
        guard let batch = frameToSend() else { return .done }
        do {
            // Its two parts as they are: no array joins them for the send.
            try port.send(msgid: ServerWire.MessageID.batch.rawValue, lead: batch.lead, body: batch.body, timeout: .zero)
            return frameWent(nil)
        } catch {
            return frameWent(error)
        }
    }

    /// The frame gathered, encoded as the client's next batch, for a send that goes with
    /// the other clients' (``frameWent(_:)`` takes what became of it): the batch's
    /// sequence number (`lead`), then the rest of its encoding (`body`: the same array for
    /// every client sent the same frame, see ``SharedBatchEncoding``); `nil` when there is
    /// nothing to send, or when the client's window is full, which makes it lag (the
    /// frame's events count as dropped; additions and removals wait).
    func frameToSend() -> (lead: [UInt8], body: [UInt8])? {
        guard !pending.isEmpty else { return nil }
        guard !gone, outstanding.count < window else {
            let events = takePending()
            if !gone { startLagging(withUnsent: events, reason: "its window of \(outstanding.count) batches is full") }
            return nil
        }
        return encoding.parts(sequence: nextSequence, events: pending)
    }

    /// What became of the batch ``frameToSend()`` encoded (`failure`: `nil` when it went):
    /// sent, the frame is the client's; its port's queue full, the client lags.
    func frameWent(_ failure: MessagePortError?) -> Outcome {
        switch outcome(of: failure) {
        case .sent:
            // Sent from the frame itself, emptied after: its buffer is kept for the next frame.
            recordSent(pending)
            pending.removeAll(keepingCapacity: true)
            pendingBytes = 0
            return .done
        case .full:
            startLagging(withUnsent: takePending(), reason: "its port's queue is full")
            return .done
        case .gone:
            _ = takePending()
            return .gone
        }
    }

    /// The frame gathered, the client left with none.
    private func takePending() -> [HIDEvent] {
        let events = pending
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        return events
    }

    enum SendOutcome { case sent, full, gone }

    /// One batch to the client's port without waiting (timeout zero): the server's loop
    /// never waits on a client.
    func send(_ events: [HIDEvent]) -> SendOutcome {
        let batch = encoding.batch(sequence: nextSequence, events: events)
        let failure: MessagePortError?
        do {
            try port.send(msgid: ServerWire.MessageID.batch.rawValue, data: batch, timeout: .zero)
            failure = nil
        } catch {
            failure = error
        }
        let outcome = outcome(of: failure)
        if outcome == .sent { recordSent(events) }
        return outcome
    }

    /// What a batch's send found: a full queue, or (logged) a port gone.
    private func outcome(of failure: MessagePortError?) -> SendOutcome {
        guard let failure else { return .sent }
        if case .sendTimeout = failure { return .full }
        HIDEventServer.logger.notice(
            "event server '\(serverName)': client \(hello.name) (\(credentials)) is gone: \(failure)")
        return .gone
    }

    /// A batch of `events`, numbered `nextSequence`, went out.
    private func recordSent(_ events: [HIDEvent]) {
        for event in events {
            sent.apply(event)
            if event.kind == .deviceAdded { announced.insert(event.device) }
            if event.kind == .deviceRemoved { announced.remove(event.device) }
        }
        outstanding.append((nextSequence, .now))
        nextSequence += 1
        eventsSent += events.count
        batchesSent += 1
    }

    /// Sends a device's description ahead of its addition.
    func sendDescription(_ device: HIDDeviceInfo) -> SendOutcome {
        do {
            try port.send(msgid: ServerWire.MessageID.device.rawValue, data: ServerWire.encode(device), timeout: .zero)
            return .sent
        } catch {
            if case .sendTimeout = error { return .full }
            return .gone
        }
    }

    private func startLagging(withUnsent events: [HIDEvent], reason: String) {
        if !lagging {
            HIDEventServer.logger.notice(
                "event server '\(serverName)': client \(hello.name) (\(credentials)) lags, \(reason): its events are dropped until it catches up"
            )
            state = .lagging
        }
        for event in events {
            if event.kind.isDeviceLifecycle {
                holdLifecycle(event)
            } else {
                droppedSinceLag += 1
            }
        }
    }

    /// What an acknowledgement changed.
    enum Acknowledgement: Equatable {
        /// Not of a batch sent: ignored.
        case ignored
        /// Taken; `respondsAgain` when the client was not responding until now.
        case taken(respondsAgain: Bool)
    }

    /// The client's handlers took every batch up to `sequence`.
    func acknowledge(_ sequence: UInt64) -> Acknowledgement {
        guard sequence < nextSequence else { return .ignored }
        while let first = outstanding.first, first.sequence <= sequence { outstanding.removeFirst() }
        lastAckAt = .now
        guard notResponding else { return .taken(respondsAgain: false) }
        state = .lagging
        HIDEventServer.logger.notice("event server '\(serverName)': client \(hello.name) (\(credentials)) responds again")
        return .taken(respondsAgain: true)
    }

    /// Whether the client lags and has acknowledged everything sent: it may catch up.
    var mayCatchUp: Bool { lagging && outstanding.isEmpty }

    /// Its batches outstanding are older than `timeout`: it lags until it answers again.
    /// The frame gathered is sent first (or dropped).
    func stopResponding() -> Outcome {
        let outcome = flush()
        state = .notResponding
        return outcome
    }

    /// A full port's queue met a description: the client lags.
    func lagBehindDescription() { if state == .sending { state = .lagging } }

    /// The client is detached (by the router).
    func leave() { state = .gone }

    /// The client has handled all it was sent: it gets what it missed as a difference
    /// (the descriptions of devices added meanwhile from `devices`, the devices attached).
    /// A send that fails leaves it lagging, to try again at its next acknowledgement.
    func catchUp(devices: [HIDDeviceID: HIDDeviceInfo]) {
        // A device added and removed while the client lagged is never shown to it.
        let removed = Set(lifecycleBacklog.filter { $0.kind == .deviceRemoved }.map(\.device))
        lifecycleBacklog.removeAll { removed.contains($0.device) && !announced.contains($0.device) }
        // Descriptions of devices added meanwhile go first (they are not events).
        for event in lifecycleBacklog where event.kind == .deviceAdded {
            guard let device = devices[event.device] else { continue }
            guard sendDescription(device) == .sent else { return }
        }
        let now = MonotonicInstant.now
        var events: [HIDEvent] = []
        if droppedSinceLag > 0 {
            events.append(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: now, payload: .eventsDropped(count: droppedSinceLag)))
        }
        for event in lifecycleBacklog where event.kind == .deviceAdded { events.append(event) }
        let devices = Set(sent.devices.keys).union(routed.devices.keys).sorted { $0.rawValue < $1.rawValue }
        for device in devices {
            events += sent[device].difference(to: routed[device], device: device, at: now)
        }
        for event in lifecycleBacklog where event.kind == .deviceRemoved { events.append(event) }
        // In batches of one packet each; the socket is empty (everything was acknowledged).
        var chunk: [HIDEvent] = []
        var bytes = 0
        for event in events {
            let size = ServerWire.encodedSize(event)
            if bytes + size > Self.batchByteLimit || chunk.count >= ServerWire.maximumBatchEvents {
                guard send(chunk) == .sent else { return }
                chunk = []
                bytes = 0
            }
            chunk.append(event)
            bytes += size
        }
        if !chunk.isEmpty, send(chunk) != .sent { return }
        eventsDropped += droppedSinceLag
        droppedSinceLag = 0
        lifecycleBacklog = []
        sent = routed
        state = .sending
    }
}

/// The events of the last batch a server encoded, and their encoding: in a pass that sends
/// its clients the same frame (every observer of a mouse gets its motion), the frame is
/// encoded once, and each client's batch is the client's own sequence number followed by
/// that encoding's rest, one array all the clients share (``parts(sequence:events:)``),
/// or a copy of the whole with the client's number (``batch(sequence:events:)``). Events
/// compare by value (`HIDEvent`'s `==`), so a frame equal to the last one is sent as the
/// last one was encoded (a `-0.0` delta may go as `0.0`: equal values). Confined to the
/// server's loop thread.
final class SharedBatchEncoding {
    private var events: [HIDEvent] = []
    /// A batch of `events` with sequence number 0 (empty until the first batch).
    private var encoded: [UInt8] = []
    /// `encoded` after its sequence number: what every client's batch of `events` shares.
    private var body: [UInt8] = []

    /// A batch of `events` numbered `sequence`, in the wire's format
    /// (``ServerWire/Batch/encoded``).
    func batch(sequence: UInt64, events: [HIDEvent]) -> [UInt8] {
        encode(events)
        var batch = encoded
        // The sequence number is the batch's first field, little-endian.
        batch.withUnsafeMutableBytes { $0.storeBytes(of: sequence.littleEndian, toByteOffset: 0, as: UInt64.self) }
        return batch
    }

    /// A batch of `events` numbered `sequence`, in two parts: its sequence number (the
    /// batch's first field, little-endian: 8 bytes of the client's own) and the rest of
    /// its encoding, the same array for every client sent the same events (a batch send,
    /// `RemoteMessagePort.sendWithoutWaiting`, gathering packets copies it once for all; a
    /// single send, ``ServedClient/flush()``, takes the two as they are, never joined).
    func parts(sequence: UInt64, events: [HIDEvent]) -> (lead: [UInt8], body: [UInt8]) {
        encode(events)
        return (withUnsafeBytes(of: sequence.littleEndian) { Array($0) }, body)
    }

    /// Encodes `events` unless they are the last batch's.
    private func encode(_ events: [HIDEvent]) {
        guard encoded.isEmpty || events != self.events else { return }
        // Copied into the cache's own buffer: the client's frame keeps its buffer.
        self.events.removeAll(keepingCapacity: true)
        self.events.append(contentsOf: events)
        encoded = ServerWire.Batch(sequence: 0, events: events).encoded
        body = Array(encoded[MemoryLayout<UInt64>.size...])
    }
}
