import Glibc
import Logging
import RingLoop
import RingLoopEvdev

/// The third shape: a client of a ``HIDEventServer``. The devices are the server's; its
/// events arrive at a port of this process, whose source is the client's source1 (as
/// `__IOHIDEventSystemClientQueueCallback` is an app's): the callback pushes them into the
/// client's queue and signals the dispatching source0, exactly as the other shapes do.
///
/// Attaching: the feed finds the server's port by name and checks who holds it
/// (``HIDEventSystem/ServerAttachment/trusting``), makes its own port — open to the server's
/// user only, and taking messages from the server's process only — and says hello with a
/// request, whose reply says whether the server took it in. Nothing of this blocks the
/// client's loop: the connect is one try that does not wait, and the welcome comes to the
/// loop as a callback (``RingLoop/RemoteMessagePort/sendRequest(msgid:data:replyTimeout:inModes:completion:)``),
/// within ``welcomeTimeout``; ``start()`` runs the loop while it waits for the first
/// one, and re-attaches run from a timer, so a server that hangs (stopped, or restarted
/// and stuck) leaves the app's timers and handlers running. After a drain of the queue it
/// acknowledges the last batch its handlers took (in the same pass, after the pass's
/// sources0, past a quarter of the server's window or 10 ms after the last; otherwise
/// 20 ms after the last, from a timer that a steady stream never needs). When the server goes, every device is
/// released and removed (key-ups, touches cancelled, `deviceRemoved`), and the feed attaches
/// again, with back-off, when a server of that name comes back.
///
/// Threading: confined to the client's loop thread, but for the server port's
/// invalidation callback, which only hands a block to that loop.
final class ServerDeviceFeed: DeviceFeed {
    private let attachment: HIDEventSystem.ServerAttachment
    private let loop: RingRunLoop
    private let sink: (HIDEvent) -> Void
    private let onError: (HIDError) -> Void
    private let table: DeviceTable
    private let handle = FeedHandle()
    private static let logger = Logger(label: "RingLoop.HID.client")

    /// The connection of one attachment.
    private struct Attached {
        var server: RemoteMessagePort
        var own: LocalMessagePort
        var token: UInt64
        var serverPID: Int32
    }

    private var attached: Attached?
    private var devices: [HIDDeviceID: HIDDeviceInfo] = [:]
    /// What the events taken in say about each device: what to release if the server goes.
    private var received = VisibleStates()
    /// Devices whose addition reached the handlers and whose removal has not: the ones
    /// a detach removes (a description alone adds nothing).
    private var added = Set<HIDDeviceID>()
    private var lastSequence: UInt64 = 0
    private var lastAcknowledged: UInt64 = 0
    /// When the last acknowledgement went (`nil`: none yet on this attachment).
    private var lastAcknowledgementSent: MonotonicInstant?
    /// The timer of the acknowledgement waiting to go, or of the retry of one that found
    /// the server's queue full: one for the feed's life, made at its first use, then
    /// re-armed by its fire date (not made, added and removed for each acknowledgement),
    /// and invalidated when the feed stops.
    private var ackTimer: LoopTimer?
    /// `ackTimer` is armed: an acknowledgement waits for it.
    private var ackTimerArmed = false
    /// Acknowledgements the tail timer sent (loop thread; tests read it).
    private(set) var acknowledgementsByTimer = 0
    /// An acknowledgement waits in a block of the loop's (sent after the pass's sources).
    private var acknowledgementQueued = false
    /// Batches after which an acknowledgement goes at once: a quarter of the server's window.
    private var acknowledgeEvery: UInt64 = 1
    private var reattach: LoopTimer?
    /// A re-attach's hello waits for its welcome.
    private var attaching = false
    /// The attachment whose welcome is awaited, and what its server sent to the client's
    /// port before the welcome was read.
    private var attachingToken: UInt64?
    private var early: [ReceivedMessage] = []
    /// The most messages kept before a welcome: a server's window of batches and its
    /// devices' descriptions fit many times over.
    static let earlyMessageLimit = 4096
    private var backOff: Duration = .milliseconds(50)
    private var running = false
    private var attachments = 0
    private(set) var isFocused = false
    private(set) var eventsRead = 0
    /// Events the server sent for devices it had not described (or had removed): dropped.
    private(set) var unknownDeviceEvents = 0
    /// Messages of the server's that broke the protocol (dropped).
    private(set) var protocolViolations = 0
    /// What the server did wrong, reported once an attachment (the counts go on): a server
    /// that keeps doing it cannot fill the client's problems or log.
    private enum Misdeed { case undescribedDevices, brokenProtocol }
    private var reported: Set<Misdeed> = []
    /// The last refusal reported (a refused client tries again, and says so once a reason).
    private var lastRefusal: String?
    /// The layout names of the server's keymap, from its last welcome.
    private(set) var serverLayoutNames: [String] = []
    /// The last failure to attach reported: the same one again (a name another user
    /// squats, tried every 2 s) is not reported again until an attach succeeds.
    private var lastFailure: String?
    /// Attaches tried, the first included.
    private(set) var attachAttempts = 0

    final class FeedHandle: @unchecked Sendable {
        // @unchecked: set and read on the client's loop thread only.
        weak var feed: ServerDeviceFeed?
    }

    init(
        attachment: HIDEventSystem.ServerAttachment, loop: RingRunLoop, sink: @escaping (HIDEvent) -> Void,
        onError: @escaping (HIDError) -> Void, table: DeviceTable
    ) {
        self.attachment = attachment
        self.loop = loop
        self.sink = sink
        self.onError = onError
        self.table = table
        handle.feed = self
    }

    /// Attaches, running the client's loop while the server answers (in the mode it runs,
    /// or the default mode): the loop's timers and sources go on meanwhile, and a server
    /// that does not answer costs the hello's reply timeout, not a frozen loop. A server
    /// that is not there yet (or cannot take a connection now) is waited for, with
    /// back-off; any other failure — refused, untrusted, no welcome — is thrown.
    func start() throws(HIDError) {
        running = true
        let waitMode = loop.currentMode ?? .default
        let outcome = AttachOutcome()
        // Signalled by the welcome: ends the run that waits for it.
        let welcomed = LoopSource(order: Int.min, label: "event server welcome") {}
        loop.add(welcomed, to: waitMode)
        defer { welcomed.invalidate() }
        do throws(MessagePortError) {
            try attach(inModes: loop.commonModes.contains(waitMode) ? [.common] : [.common, waitMode]) { result in
                outcome.result = result
                welcomed.signal()
            }
        } catch {
            return try failedToStart(error)
        }
        while outcome.result == nil, running {
            if loop.run(mode: waitMode, for: .seconds(1), returnAfterSourceHandled: true) == .failed { break }
        }
        guard running else { return }
        switch outcome.result {
        case .success(nil)?:
            return
        case .success(let refusal?)?:
            running = false
            throw .server(name: attachment.name, reason: Self.refused(refusal))
        case .failure(let error)?:
            return try failedToStart(error)
        case nil:
            running = false
            throw .server(name: attachment.name, reason: "its loop cannot run to wait for the server's welcome")
        }
    }

    /// What the first attach came to (loop thread).
    private final class AttachOutcome: @unchecked Sendable {
        // @unchecked: set and read on the client's loop thread only.
        var result: Result<String?, MessagePortError>?
    }

    private func failedToStart(_ error: MessagePortError) throws(HIDError) {
        switch error {
        case .notFound, .sendTimeout:
            Self.logger.notice("event server '\(attachment.name)' is not there yet; attaching when it comes")
            scheduleReattach()
        default:
            running = false
            throw .server(name: attachment.name, reason: error.description)
        }
    }

    private static func refused(_ reason: String) -> String { "it refused this client: \(reason)" }

    func stop() {
        guard running else { return }
        running = false
        reattach?.invalidate()
        reattach = nil
        ackTimer?.invalidate()
        ackTimer = nil
        ackTimerArmed = false
        if let attached {
            try? attached.server.send(
                msgid: ServerWire.MessageID.goodbye.rawValue, data: ServerWire.token(attached.token), timeout: .zero)
        }
        detach()
    }

    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        close(fd)
        throw .configuration("attachStream: a client of an event server reads no devices of its own")
    }
    func readPaths() -> [HIDDeviceID: DeviceReadPath] { [:] }

    var serverState: (attached: Bool, focused: Bool)? { (attached != nil, isFocused) }

    func control(_ request: FeedRequest) throws(HIDError) -> FeedAnswer {
        switch request {
        case .requestFocus:
            try requestFocus()
            return .done
        case .setLED:
            throw .server(
                name: attachment.name,
                reason: "the server owns the devices: a client does not write their LEDs (the server's handlers can)")
        case .allowedCPUs:
            throw .configuration("the CPUs of the event-system thread: a client of an event server has no such thread")
        case .rumble(let effect, let device):
            try send(rumble: effect, device: device.id)
            return .done
        case .stopRumble(let device):
            try send(rumble: nil, device: device.id)
            return .done
        }
    }

    // MARK: Attaching

    /// Starts attaching: connects (one try that does not wait), makes the client's port
    /// and sends the hello, whose welcome comes later, on the loop, in `modes`:
    /// `finished` then gets `nil` (attached), the server's reason for refusing this
    /// client, or why no welcome came. Throws what fails before the hello is sent.
    private func attach(
        inModes modes: [RingRunLoop.Mode] = [.common], finished: @escaping (Result<String?, MessagePortError>) -> Void
    ) throws(MessagePortError) {
        attachAttempts += 1
        let server = try RemoteMessagePort(
            name: attachment.name, namespace: attachment.namespace, trusting: attachment.trusting, connectTimeout: .zero)
        let token = UInt64.random(in: 1...UInt64.max)
        attachments += 1
        let portName = Self.clientPortName(
            server: attachment.name, namespace: attachment.namespace, suffix: ".client.\(getpid()).\(token % 1_000_000_000).\(attachments)")
        let owner = server.owner
        let handle = handle
        // Only the server's user may connect; only the server's process is listened to.
        let own = try LocalMessagePort(
            name: portName, loop: loop, access: .users([owner.uid]), namespace: attachment.namespace
        ) { message in
            let fromServer: Bool
            switch message.sender {
            case .thisProcess: fromServer = owner.pid == getpid()
            case .process(let sender): fromServer = sender.pid == owner.pid
            }
            guard fromServer else { return nil }
            handle.feed?.received(message, token: token)
            return nil
        }
        loop.add(own.source, to: .common)
        let hello = ServerWire.Hello(
            token: token, port: portName, name: Self.sanitizedClientName(attachment.clientName), kinds: attachment.subscribedKinds,
            deviceClasses: attachment.subscribedDeviceClasses, wantsFocus: attachment.requestsFocus)
        let name = attachment.name
        // The completion runs on this loop's thread (the feed is confined to it).
        let answered = LoopConfined(finished)
        attachingToken = token
        early = []
        do throws(MessagePortError) {
            try server.sendRequest(
                msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: Self.welcomeTimeout, inModes: modes
            ) { result in
                let welcome = result.flatMap { reply -> Result<ServerWire.Welcome, MessagePortError> in
                    do { return .success(try ServerWire.Welcome(decoding: reply)) } catch {
                        return .failure(.transportError(name, reason: "its welcome: \(error)"))
                    }
                }
                guard let feed = handle.feed else {
                    own.invalidate()
                    return
                }
                answered.value(feed.welcomed(welcome, server: server, own: own, token: token))
            }
        } catch {
            own.invalidate()
            throw error
        }
    }

    /// How long a hello waits for the server's welcome.
    static let welcomeTimeout: Duration = .seconds(5)

    /// A closure made and called on the client's loop thread.
    private struct LoopConfined<Value>: @unchecked Sendable {
        // @unchecked: called on the loop thread that made it only.
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// The server's welcome (or why none came): attached, or the reason it refused.
    private func welcomed(
        _ result: Result<ServerWire.Welcome, MessagePortError>, server: RemoteMessagePort, own: LocalMessagePort, token: UInt64
    ) -> Result<String?, MessagePortError> {
        var earlyMessages: [ReceivedMessage] = []
        if attachingToken == token {
            earlyMessages = early
            attachingToken = nil
            early = []
        }
        let welcome: ServerWire.Welcome
        switch result {
        case .success(let value): welcome = value
        case .failure(let error):
            own.invalidate()
            return .failure(error)
        }
        guard running, attached == nil else {
            // Stopped (or attached otherwise) meanwhile.
            own.invalidate()
            try? server.send(msgid: ServerWire.MessageID.goodbye.rawValue, data: ServerWire.token(token), timeout: .zero)
            return .success(nil)
        }
        if let refusal = welcome.refusal {
            own.invalidate()
            return .success(refusal)
        }
        serverLayoutNames = welcome.layoutNames
        let owner = server.owner
        attached = Attached(server: server, own: own, token: token, serverPID: owner.pid)
        reported = []
        lastRefusal = nil
        lastFailure = nil
        setFocused(welcome.focused)
        acknowledgeEvery = max(1, UInt64(welcome.window) / 4)
        lastSequence = 0
        lastAcknowledged = 0
        lastAcknowledgementSent = nil
        backOff = .milliseconds(50)
        let loop = loop
        let handle = handle
        server.setInvalidationCallback { _ in
            loop.perform(inModes: [.common]) { handle.feed?.serverWentAway(token: token) }
            loop.wakeUp()
        }
        Self.logger.debug("attached to event server '\(attachment.name)' (\(owner))")
        // What the server sent the client's port before its welcome was read.
        for message in earlyMessages { received(message, token: token) }
        return .success(nil)
    }

    /// The client's port: the server's name, shortened by whole characters where the whole
    /// would pass a port name's length (in a folder: where the socket file's path would
    /// pass a socket address's 107 bytes), then `suffix` (which makes it unique).
    static func clientPortName(server: String, namespace: MessagePortNamespace = .abstract, suffix: String) -> String {
        var limit = LocalMessagePort.maximumNameLength
        if case .directory(let folder, _) = namespace {
            // `FOLDER/NAME.port` in `sockaddr_un.sun_path` (108 bytes with its NUL).
            let folderBytes = folder.utf8.count + (folder.hasSuffix("/") ? 0 : 1)
            limit = min(limit, max(suffix.utf8.count, 107 - folderBytes - ".port".utf8.count))
        }
        var prefix = Substring(server)
        while prefix.utf8.count + suffix.utf8.count > limit, !prefix.isEmpty {
            prefix = prefix.dropLast()
        }
        return prefix + suffix
    }

    /// The client's name as the server takes it: each character that controls layout
    /// (`isLayoutControl`) made `?`, at most the protocol's length (shortened by whole
    /// characters).
    static func sanitizedClientName(_ name: String) -> String {
        var text = String(String.UnicodeScalarView(name.unicodeScalars.map { $0.isLayoutControl ? "?" : $0 }))
        while text.utf8.count > ServerWire.maximumClientNameLength { text.removeLast() }
        return text
    }

    /// The server's process ended or invalidated its port: release and remove every
    /// device, then look for a server of that name again.
    private func serverWentAway(token: UInt64) {
        guard running, attached?.token == token else { return }
        Self.logger.notice("event server '\(attachment.name)' went away; its devices are removed")
        detach()
        running = true
        scheduleReattach()
    }

    private func scheduleReattach() {
        reattach?.invalidate()
        let handle = handle
        let timer = LoopTimer(after: backOff) { _ in handle.feed?.tryReattach() }
        backOff = min(backOff * 2, .seconds(2))
        reattach = timer
        loop.add(timer, to: .common)
    }

    private func tryReattach() {
        reattach = nil
        guard running, attached == nil, !attaching else { return }
        do throws(MessagePortError) {
            attaching = true
            try attach { [unowned self] result in
                attaching = false
                reattached(result)
            }
        } catch {
            attaching = false
            reattached(.failure(error))
        }
    }

    /// A re-attach ended: attached, or tried again later.
    private func reattached(_ result: Result<String?, MessagePortError>) {
        guard running, attached == nil else { return }
        switch result {
        case .success(nil):
            return
        case .success(let refusal?):
            // The server is there but will not have this client (yet: it may be full).
            if refusal != lastRefusal { onError(.server(name: attachment.name, reason: Self.refused(refusal))) }
            lastRefusal = refusal
        case .failure(let error):
            switch error {
            case .notFound, .invalidated, .becameInvalid, .sendTimeout, .replyTimeout:
                break
            default:
                // Refused or untrusted: the server is there but will not have this client.
                // Reported once, not at every try.
                if error.description != lastFailure { onError(.server(name: attachment.name, reason: error.description)) }
                lastFailure = error.description
            }
        }
        scheduleReattach()
    }

    /// Ends the attachment: every device is released and removed (through the queue, as a
    /// vanished device is), and the ports go.
    private func detach() {
        let now = MonotonicInstant.now
        let ids = added.sorted { $0.rawValue < $1.rawValue }
        added = []
        devices = [:]
        table.replace([])
        for id in ids {
            for event in received[id].difference(to: VisibleState(), device: id, at: now) { sink(event) }
            sink(HIDEvent(device: id, timestamp: now, payload: .deviceRemoved))
            received.apply(HIDEvent(device: id, timestamp: now, payload: .deviceRemoved))
        }
        if let attached {
            attached.own.invalidate()
            self.attached = nil
        }
        setFocused(false)
    }

    /// Takes the focus the server says this client has, and puts its change in the queue,
    /// after the events the server sent before it.
    private func setFocused(_ focused: Bool) {
        guard focused != isFocused else { return }
        isFocused = focused
        sink(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .focusChanged(isFocused: focused)))
    }

    // MARK: Messages from the server

    /// A message at the client's port of the attachment `token`.
    private func received(_ message: ReceivedMessage, token: UInt64) {
        guard let attached, attached.token == token else {
            // The server may send before its welcome is read (its descriptions go first):
            // kept for the welcome, within the bound of the server's window.
            if attachingToken == token, early.count < Self.earlyMessageLimit { early.append(message) }
            return
        }
        do throws(ServerWire.Violation) {
            switch ServerWire.MessageID(rawValue: message.msgid) {
            case .device:
                let device = try ServerWire.decodeDevice(message.data)
                guard isDescribed(device.id) || devices.count < ServerWire.maximumDevices else {
                    throw .outOfRange(field: "devices described", value: Int64(devices.count + 1))
                }
                devices[device.id] = device
            case .batch:
                let batch = try ServerWire.Batch(decoding: message.data)
                for event in batch.events { take(event) }
                lastSequence = max(lastSequence, batch.sequence)
            case .focus:
                setFocused(try ServerWire.decodeFocus(message.data))
            default:
                throw .unknown(field: "message id", value: UInt64(UInt32(bitPattern: message.msgid)))
            }
        } catch {
            protocolViolations += 1
            report(.brokenProtocol, "it sent a message that breaks the protocol: \(error) (dropped; later ones are counted only)")
        }
    }

    private func report(_ misdeed: Misdeed, _ reason: @autoclosure () -> String) {
        guard reported.insert(misdeed).inserted else { return }
        onError(.server(name: attachment.name, reason: reason()))
    }

    /// Whether the server has described `device` and not removed it. (`index(forKey:)`:
    /// `devices[id] != nil` copies the whole description out of the table.)
    private func isDescribed(_ device: HIDDeviceID) -> Bool { devices.index(forKey: device) != nil }

    /// An event of a device the server has not described (or has removed): dropped.
    private func undescribed() {
        unknownDeviceEvents += 1
        report(
            .undescribedDevices,
            "it sent events of devices it has not described (or has removed); they are dropped, and counted only from here")
    }

    private func take(_ event: HIDEvent) {
        eventsRead += 1
        switch event.kind {
        case .deviceAdded:
            // Announced by its description first; the table changes before the event
            // reaches handlers, as for a device of this process.
            guard isDescribed(event.device) else { return undescribed() }
            table.replace(devices.values.sorted { $0.id.rawValue < $1.id.rawValue })
            added.insert(event.device)
        case .deviceRemoved:
            guard devices.removeValue(forKey: event.device) != nil else { return undescribed() }
            added.remove(event.device)
            table.replace(devices.values.sorted { $0.id.rawValue < $1.id.rawValue })
        case .eventsDropped:
            break
        default:
            // Handlers only see events of devices the server described and has not
            // removed.
            guard isDescribed(event.device) else { return undescribed() }
        }
        received.apply(event)
        sink(event)
    }

    /// After the queue drained: tells the server the last batch the handlers took — at
    /// once when a quarter of the server's window is unacknowledged or the last
    /// acknowledgement went ``acknowledgementDelay`` ago or more, else from a timer at
    /// ``acknowledgementTailDelay`` after the last (one message for a burst of frames, not
    /// one per frame: each acknowledgement wakes the server). Under a steady stream the
    /// acknowledgement rides on a frame's wake-up instead of a timer's of its own, and
    /// reaches the server just after it sent.
    ///
    /// An acknowledgement due goes from a block of the loop's, which runs after every
    /// source0 of the pass: the handlers of the other clients on this loop are not held
    /// back by its `sendmsg`, which wakes the server.
    func drained() { acknowledge() }

    func acknowledge() {
        guard attached != nil, lastSequence > lastAcknowledged else { return }
        if lastSequence - lastAcknowledged >= acknowledgeEvery
            || lastAcknowledgementSent.map({ MonotonicInstant.now >= $0.advanced(by: Self.acknowledgementDelay) }) ?? true
        {
            guard !acknowledgementQueued else { return }
            acknowledgementQueued = true
            let handle = handle
            loop.perform(inModes: [.common]) {
                handle.feed?.acknowledgementQueued = false
                handle.feed?.sendAcknowledgement()
            }
            return
        }
        if !ackTimerArmed { armAcknowledgementTimer(at: lastAcknowledgementSent.map { $0 + Self.acknowledgementTailDelay }) }
    }

    /// How long an acknowledgement may wait for more frames to cover.
    static let acknowledgementDelay: Duration = .milliseconds(10)

    /// When the timer sends an acknowledgement that no frame carried: two
    /// ``acknowledgementDelay`` after the last one went. A frame that arrives between one
    /// delay and two carries it instead (in its own pass, the wake-up already paid), so
    /// under a steady stream of frames less than a delay apart the timer never fires: at one
    /// delay it raced the frame due at about the same time (a frame a millisecond in the
    /// fan-out bench, `server.fanout.own_loops`: about 4 acknowledgements in 10 went from
    /// the timer, each a wake-up of the client's loop of its own). The last frames of a
    /// burst are acknowledged within two delays.
    static let acknowledgementTailDelay: Duration = acknowledgementDelay * 2

    /// Sends the acknowledgement at `date` (`nil`: ``acknowledgementDelay`` from now), from
    /// the feed's one timer: made and added to the loop the first time, re-armed after.
    private func armAcknowledgementTimer(at date: MonotonicInstant? = nil) {
        let date = date ?? .now + Self.acknowledgementDelay
        ackTimerArmed = true
        if let ackTimer {
            ackTimer.nextFireDate = date
            return
        }
        let handle = handle
        // A year's interval: it never repeats before it is armed again (a one-shot timer
        // is invalidated once it fires, and could not be re-armed).
        let timer = LoopTimer(fireDate: date, interval: .seconds(86_400 * 365)) { _ in
            guard let feed = handle.feed else { return }
            feed.ackTimerArmed = false
            if feed.sendAcknowledgement() { feed.acknowledgementsByTimer += 1 }
        }
        ackTimer = timer
        loop.add(timer, to: .common)
    }

    /// The acknowledgement went without the timer: it waits for nothing.
    private func disarmAcknowledgementTimer() {
        guard ackTimerArmed else { return }
        ackTimerArmed = false
        ackTimer?.nextFireDate = .distantFuture
    }

    /// Sends the acknowledgement of everything received so far; whether one went.
    @discardableResult
    private func sendAcknowledgement() -> Bool {
        guard let attached, lastSequence > lastAcknowledged else { return false }
        let ack = ServerWire.Ack(token: attached.token, sequence: lastSequence)
        do throws(MessagePortError) {
            try attached.server.send(msgid: ServerWire.MessageID.ack.rawValue, data: ack.encoded, timeout: .zero)
            lastAcknowledged = lastSequence
            lastAcknowledgementSent = .now
            disarmAcknowledgementTimer()
            return true
        } catch {
            // The server's queue is full (or it is going): try again shortly.
            guard !ackTimerArmed, case .sendTimeout = error else { return false }
            armAcknowledgementTimer()
            return false
        }
    }

    /// Asks the server to rumble a device (`nil`: to stop it); the server's policy decides
    /// (the focused client's only).
    private func send(rumble effect: RumbleEffect?, device: HIDDeviceID) throws(HIDError) {
        guard let attached else { throw .server(name: attachment.name, reason: "not attached") }
        let request = ServerWire.Rumble(token: attached.token, device: device, effect: effect)
        do {
            try attached.server.send(msgid: ServerWire.MessageID.rumble.rawValue, data: request.encoded, timeout: .zero)
        } catch {
            throw .server(name: attachment.name, reason: error.description)
        }
    }

    /// Asks the server for the focus.
    private func requestFocus() throws(HIDError) {
        guard let attached else { throw .server(name: attachment.name, reason: "not attached") }
        do {
            try attached.server.send(
                msgid: ServerWire.MessageID.requestFocus.rawValue, data: ServerWire.token(attached.token), timeout: .zero)
        } catch {
            throw .server(name: attachment.name, reason: error.description)
        }
    }
}
