import DequeModule
import Logging
import RingLoop

/// One client of a ``HIDEventServer``, as the server keeps it: where its events go, what it
/// has seen, what it has not acknowledged. Confined to the server's loop thread.
///
/// Two views of the client's devices make its flow control a difference, as the event
/// system's resync does: `routed` follows every event routed to the client (what it would
/// have seen had nothing been dropped), `sent` every event that went out. While the client
/// lags — its outbound window or its socket full, or not responding — events advance
/// `routed` only; once it has acknowledged everything sent, it gets `eventsDropped` and
/// the events from `sent` to `routed`, and the two are one again.
final class ServedClient {
    let id: HIDServerClient.ID
    let hello: ServerWire.Hello
    let credentials: PeerCredentials
    let port: RemoteMessagePort
    let attachedAt: MonotonicInstant
    /// What was routed to the client, and what went out.
    var routed = VisibleStates()
    var sent = VisibleStates()
    /// Devices whose description the client has (sent, or owed after a lag).
    var announced = Set<HIDDeviceID>()
    /// Batches sent and not acknowledged yet, oldest first, with when they went.
    var outstanding: Deque<(sequence: UInt64, sentAt: MonotonicInstant)> = []
    var nextSequence: UInt64 = 1
    var lastAckAt: MonotonicInstant
    /// Events are not sent, only counted, until the client catches up.
    var lagging = false
    var notResponding = false
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
    var gone = false

    init(id: HIDServerClient.ID, hello: ServerWire.Hello, credentials: PeerCredentials, port: RemoteMessagePort) {
        self.id = id
        self.hello = hello
        self.credentials = credentials
        self.port = port
        attachedAt = .now
        lastAckAt = .now
    }

    var info: HIDServerClient {
        HIDServerClient(
            id: id, name: hello.name, credentials: credentials, isResponding: !notResponding, eventsSent: eventsSent,
            eventsDropped: eventsDropped, outstandingBatches: outstanding.count)
    }

    /// Largest bytes of events in one batch: one port packet with room for the batch header.
    static let batchByteLimit = PortWire.fragmentCapacity - 64

    /// Takes an event routed to the client: into its view, and into the frame being
    /// gathered, or counted while it lags.
    func take(_ event: HIDEvent, server: HIDEventServer) {
        routed.apply(event)
        let isLifecycle = event.kind.isDeviceLifecycle
        if lagging {
            if isLifecycle { holdLifecycle(event) } else { droppedSinceLag += 1 }
            return
        }
        // (Fields of the first event, read in place: not a copy of the whole event.)
        if !pending.isEmpty, pending[0].device != event.device || pending[0].timestamp != event.timestamp {
            flush(server: server)
            if lagging { return take(eventAfterFlush: event, isLifecycle) }
        }
        let size = ServerWire.encodedSize(event)
        if pendingBytes + size > Self.batchByteLimit || pending.count >= ServerWire.maximumBatchEvents {
            flush(server: server)
            if lagging { return take(eventAfterFlush: event, isLifecycle) }
        }
        pending.append(event)
        pendingBytes += size
    }

    /// An event that found the client lagging after the frame before it failed to go.
    private func take(eventAfterFlush event: HIDEvent, _ isLifecycle: Bool) {
        if isLifecycle { holdLifecycle(event) } else { droppedSinceLag += 1 }
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
    func flush(server: HIDEventServer) {
        guard !pending.isEmpty else { return }
        let events = pending
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        guard !gone else { return }
        if outstanding.count >= server.configuration.maximumOutstandingBatches {
            startLagging(withUnsent: events, server: server, reason: "its window of \(outstanding.count) batches is full")
            return
        }
        switch send(events, server: server) {
        case .sent: break
        case .full: startLagging(withUnsent: events, server: server, reason: "its port's queue is full")
        case .gone: server.clientWentAway(self)
        }
    }

    enum SendOutcome { case sent, full, gone }

    /// One batch to the client's port without waiting (timeout zero): the server's loop
    /// never waits on a client.
    func send(_ events: [HIDEvent], server: HIDEventServer) -> SendOutcome {
        let batch = ServerWire.Batch(sequence: nextSequence, events: events)
        do {
            try port.send(msgid: ServerWire.MessageID.batch.rawValue, data: batch.encoded, timeout: .zero)
        } catch {
            if case .sendTimeout = error { return .full }
            HIDEventServer.logger.notice(
                "event server '\(server.configuration.name)': client \(hello.name) (\(credentials)) is gone: \(error)")
            return .gone
        }
        for event in events {
            sent.apply(event)
            if event.kind == .deviceAdded { announced.insert(event.device) }
            if event.kind == .deviceRemoved { announced.remove(event.device) }
        }
        outstanding.append((nextSequence, .now))
        nextSequence += 1
        eventsSent += events.count
        batchesSent += 1
        return .sent
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

    private func startLagging(withUnsent events: [HIDEvent], server: HIDEventServer, reason: String) {
        if !lagging {
            HIDEventServer.logger.notice(
                "event server '\(server.configuration.name)': client \(hello.name) (\(credentials)) lags, \(reason): its events are dropped until it catches up"
            )
        }
        lagging = true
        for event in events {
            if event.kind.isDeviceLifecycle {
                holdLifecycle(event)
            } else {
                droppedSinceLag += 1
            }
        }
    }

    /// The client's handlers took every batch up to `sequence`.
    func acknowledge(_ sequence: UInt64, server: HIDEventServer) {
        guard sequence < nextSequence else { return }
        while let first = outstanding.first, first.sequence <= sequence { outstanding.removeFirst() }
        lastAckAt = .now
        if notResponding {
            notResponding = false
            HIDEventServer.logger.notice(
                "event server '\(server.configuration.name)': client \(hello.name) (\(credentials)) responds again")
            server.notify(.responding(info))
        }
        if lagging, outstanding.isEmpty { catchUp(server: server) }
    }

    /// The client has handled all it was sent: it gets what it missed as a difference.
    func catchUp(server: HIDEventServer) {
        // A device added and removed while the client lagged is never shown to it.
        let removed = Set(lifecycleBacklog.filter { $0.kind == .deviceRemoved }.map(\.device))
        lifecycleBacklog.removeAll { removed.contains($0.device) && !announced.contains($0.device) }
        // Descriptions of devices added meanwhile go first (they are not events).
        for event in lifecycleBacklog where event.kind == .deviceAdded {
            guard let device = server.system.device(event.device) else { continue }
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
                guard send(chunk, server: server) == .sent else { return }
                chunk = []
                bytes = 0
            }
            chunk.append(event)
            bytes += size
        }
        if !chunk.isEmpty, send(chunk, server: server) != .sent { return }
        eventsDropped += droppedSinceLag
        droppedSinceLag = 0
        lifecycleBacklog = []
        sent = routed
        lagging = false
    }
}
