import Logging
import RingLoop

/// An input server: it owns the devices and forwards their events to client processes,
/// as SpringBoard and backboardd forward `IOHIDEvent`s to the app in front through a Mach
/// port, Android's InputDispatcher through an input channel per window, and a Wayland
/// compositor through its seat.
///
/// The server is itself a run-loop app. Its ``system`` is an ordinary ``HIDEventSystem``
/// (devices, hotplug, decoding, resync, key repeat): handlers added to it run first and
/// may consume an event — a power key, a lid switch, a key that moves the focus — and a
/// last, internal stage routes what is left to the clients, one named-port message per
/// frame per client, timestamps kept. A client is a ``HIDEventSystem`` made with
/// ``HIDEventSystem/Configuration/init(server:namespace:trusting:clientName:subscribedKinds:subscribedDeviceClasses:requestsFocus:queueCapacity:)``:
/// the same handlers, gestures and async sequences as a system that reads its own devices.
///
/// ```swift
/// let server = HIDEventServer(configuration: .init(name: "panel", devices: .init(deviceDirectory: "/dev/input")))
/// server.system.addHandler(usage: HIDUsage(page: 0x07, usage: 0x3a)) { event in   // F1
///     if case .key(let key) = event.payload, key.state == .down { server.focusNext() }
///     return .consumed
/// }
/// try server.start()
/// RingRunLoop.current.run()
/// ```
///
/// **Routing.** Keys, buttons, pointer motion and scrolling, touches, pens, gamepads, dials
/// and other axes are bound to the focus: they go to the focused client alone (and to
/// clients allowed to observe the device's class). Switches go to every client that
/// subscribed to them; device additions and removals to every client. A touch stays with
/// the client where it began: when the focus moves, the old client gets key-ups for its
/// held keys and keys, buttons and its touches cancelled, and the new one starts clean —
/// it sees neither the keys held nor the touches down when it got the focus (as UIKit and
/// Android do; Wayland's `wl_keyboard.enter` announces held keys, which would make a key
/// pressed in one app act again in the next), and never a key-up for a key it did not see
/// go down.
///
/// **Flow control.** A client acknowledges the batches its handlers have taken (at once
/// past a quarter of the window or 10 ms after its last acknowledgement, else 20 ms after
/// it). The
/// server never waits on a client: every message goes out with a zero send timeout. A
/// client with ``Configuration/maximumOutstandingBatches`` unacknowledged, or whose port's
/// queue is full, lags: its events are counted, not sent, and once it has acknowledged
/// everything it gets ``HIDEvent/Payload/eventsDropped(count:)`` and the difference between
/// what it saw and what it would have seen (key-ups, touches cancelled…). A client that
/// acknowledges nothing for ``Configuration/notRespondingTimeout`` with batches
/// outstanding is reported ``HIDServerClientEvent/notResponding(_:)`` (Android's 5-second
/// ANR) and logged. One slow client never delays another.
///
/// **Access.** Clients are checked by the kernel's record of their process; the port a
/// client names for its events must be held by the process that said hello. Each right is
/// a grant of its own, by user and group, all defaulting to the server's user:
/// attaching (``Configuration/clientAccess``: focus-bound events only while focused),
/// taking the focus by asking or on attaching (``Configuration/focusRequestAccess``),
/// observing devices without the focus (``Configuration/observerAccess``), and observing
/// keyboards without the focus (``Configuration/keyboardObserverAccess``: every
/// keystroke, a keylogger's right). The protocol carries no output requests (LEDs,
/// rumble), so there is no grant for them yet.
///
/// **Limits per client.** ``Configuration/maximumClients`` at once (64), at most
/// ``Configuration/maximumClientsPerUser`` (16) of one user other than the server's and
/// those users together at most one share fewer than all, so the server's own user always
/// has room. Per client: ``Configuration/maximumOutstandingBatches`` unacknowledged
/// batches (then counted, not sent), one frame being gathered (512 events in at most one
/// 16 KiB packet), messages from it of at most 256 bytes (a hello is the largest) and no
/// reply at all on the server's connection to its port (a reply is skipped as it comes).
///
/// Thread rules: make, start, stop and call every member on the loop's thread.
public final class HIDEventServer {
    /// When a client gets the focus without asking for it.
    public enum FocusOnAttach: String, Sendable, CaseIterable {
        /// Each client that attaches gets the focus (an app launched comes to the front).
        case newest
        /// The first client keeps the focus until it goes; later ones wait.
        case first
        /// Only ``HIDEventServer/focus(_:)`` and the clients' requests move it.
        case none
    }

    /// Settings of a server.
    public struct Configuration: Sendable {
        /// The server's port name, which clients attach to.
        public var name: String
        /// Where clients find the port.
        public var namespace: MessagePortNamespace
        /// The server's own devices.
        public var devices: HIDEventSystem.Configuration
        /// Who may attach (checked by the kernel's record of the client's process).
        public var clientAccess: PeerPolicy
        /// Who may receive the events of devices of chosen classes without the focus, but
        /// keyboards (``keyboardObserverAccess``).
        public var observerAccess: PeerPolicy
        /// Who may receive the events of keyboards without the focus: everything typed, in
        /// every app. Grant it to no one you would not give a keylogger.
        public var keyboardObserverAccess: PeerPolicy
        /// Who may take the focus, by asking for it or by ``focusOnAttach``. A client
        /// admitted by ``clientAccess`` alone gets focus-bound events only while the
        /// server gives it the focus (``HIDEventServer/focus(_:)``, a focus key).
        public var focusRequestAccess: PeerPolicy
        /// Who gets the focus as clients attach, among those ``focusRequestAccess``
        /// admits.
        public var focusOnAttach: FocusOnAttach
        /// Batches sent to a client and not acknowledged, past which it lags.
        public var maximumOutstandingBatches: Int
        /// A client with batches outstanding that acknowledges nothing for this long is
        /// not responding. It must be longer than the 20 ms a client may wait to acknowledge
        /// the last batches of a burst (else healthy clients are reported): ``HIDEventServer/start()``
        /// throws ``HIDError/configuration(_:)`` for 20 ms or less.
        public var notRespondingTimeout: Duration
        /// Clients at once.
        public var maximumClients: Int
        /// Clients of one user other than the server's own at once; those users together
        /// have at most ``maximumClients`` less this, so the server's user always has room.
        public var maximumClientsPerUser: Int
        /// Where absolute devices' positions go: with a resolver, the server's event system
        /// runs the screen-mapping stage (``HIDEventSystem/setScreens(_:)``), so its handlers
        /// and its clients get each contact, pen and absolute pointer with its screen location.
        public var screens: DeviceSettingsResolver?

        /// Settings of a server; every grant defaults to the server's own user.
        /// - Parameters:
        ///   - name: The server's port name.
        ///   - namespace: Where clients find the port.
        ///   - devices: The server's own devices.
        ///   - clientAccess: Who may attach.
        ///   - observerAccess: Who may observe devices other than keyboards without the focus.
        ///   - keyboardObserverAccess: Who may observe keyboards without the focus.
        ///   - focusRequestAccess: Who may take the focus (asking, or on attaching).
        ///   - focusOnAttach: Who gets the focus as clients attach.
        ///   - maximumOutstandingBatches: Batches sent and not acknowledged past which a
        ///     client lags.
        ///   - notRespondingTimeout: How long a client with batches outstanding may
        ///     acknowledge nothing before it is not responding: longer than 20 ms.
        ///   - maximumClients: Clients at once.
        ///   - maximumClientsPerUser: Clients of one user other than the server's at once.
        ///   - screens: Where absolute devices' positions go (`nil`: no screen mapping).
        public init(
            name: String, namespace: MessagePortNamespace = .abstract, devices: HIDEventSystem.Configuration = .init(),
            clientAccess: PeerPolicy = .sameUser, observerAccess: PeerPolicy = .sameUser,
            keyboardObserverAccess: PeerPolicy = .sameUser,
            focusRequestAccess: PeerPolicy = .sameUser, focusOnAttach: FocusOnAttach = .newest,
            maximumOutstandingBatches: Int = 256, notRespondingTimeout: Duration = .seconds(5), maximumClients: Int = 64,
            maximumClientsPerUser: Int = 16,
            screens: DeviceSettingsResolver? = nil
        ) {
            self.name = name
            self.namespace = namespace
            self.devices = devices
            self.clientAccess = clientAccess
            self.observerAccess = observerAccess
            self.keyboardObserverAccess = keyboardObserverAccess
            self.focusRequestAccess = focusRequestAccess
            self.focusOnAttach = focusOnAttach
            self.maximumOutstandingBatches = maximumOutstandingBatches
            self.notRespondingTimeout = notRespondingTimeout
            self.maximumClients = maximumClients
            self.maximumClientsPerUser = maximumClientsPerUser
            self.screens = screens
        }
    }

    /// Kinds that are not bound to the focus: they go to every client that subscribed.
    public static let unfocusedKinds: Set<HIDEvent.Kind> = [.switchChanged]

    public let configuration: Configuration
    /// The server's own event system: add handlers to it to see (and consume) events
    /// before the clients do.
    public let system: HIDEventSystem
    /// The loop the server runs on.
    public let loop: RingRunLoop
    static let logger = Logger(label: "RingLoop.HIDEventServer")

    var port: LocalMessagePort?
    var served: [HIDServerClient.ID: ServedClient] = [:]
    /// Clients in the order they attached.
    var order: [ServedClient] = []
    /// The last batch encoded, shared by the clients (one encoding a frame, not one a client).
    let batchEncoding = SharedBatchEncoding()
    var byToken: [UInt64: ServedClient] = [:]
    var nextClientID: UInt64 = 1
    var focused: ServedClient?
    /// The devices rumbling at a client's request, and whose: stopped when it loses the focus.
    var rumbling: [HIDDeviceID: HIDServerClient.ID] = [:]
    /// Clients that had the focus, most recent last: the focus falls back along it.
    var focusHistory: [HIDServerClient.ID] = []
    /// What every event that reached the clients' stage says about each device.
    var offered = VisibleStates()
    /// Devices whose addition reached the clients' stage, with their descriptions.
    var liveDevices: [HIDDeviceID: HIDDeviceInfo] = [:]
    /// The device and timestamp of the last event routed (the frame the clients gather).
    var routedFrame: (device: HIDDeviceID, timestamp: MonotonicInstant)?
    var observers: [(HIDServerClientEvent) -> Void] = []
    var watchTimer: LoopTimer?
    /// Lines about what a client's process did (a refusal, a message dropped): a process
    /// that does it in a loop cannot flood the log.
    var peerLines = LogBudget(burst: 10)
    let handle = ServerHandle()

    /// A weak reference to the server for callbacks that may outlive it; used on its loop
    /// thread only.
    final class ServerHandle: @unchecked Sendable {
        // @unchecked: set and read on the server's loop thread only.
        weak var server: HIDEventServer?
    }

    /// Creates a server on `loop` (the current thread's). Nothing is opened before
    /// ``start()``.
    public init(configuration: Configuration, loop: RingRunLoop = .current) {
        self.configuration = configuration
        self.loop = loop
        system = HIDEventSystem(configuration: configuration.devices, loop: loop)
        if let screens = configuration.screens { system.setScreens(screens) }
        handle.server = self
    }

    deinit { stop() }

    /// Takes the port name, starts the devices, and serves clients.
    /// - Throws: ``HIDError/configuration(_:)`` when the devices' configuration names a
    ///   server, or ``Configuration/notRespondingTimeout`` is 20 ms or less (a client's
    ///   acknowledgement of a burst's last batches may take that long);
    ///   ``HIDError/server(name:reason:)`` when the name is taken or invalid; and whatever
    ///   the event system's ``HIDEventSystem/start()`` throws.
    public func start() throws(HIDError) {
        loop.preconditionOnLoopThread("HIDEventServer.start")
        guard port == nil else { return }
        if case .server = configuration.devices.input {
            throw .configuration("an event server reads its own devices: its devices' configuration names no server")
        }
        guard configuration.notRespondingTimeout > ServerDeviceFeed.acknowledgementTailDelay else {
            throw .configuration(
                "event server '\(configuration.name)': notRespondingTimeout \(configuration.notRespondingTimeout) is too short: it must be longer than \(ServerDeviceFeed.acknowledgementTailDelay), the time a healthy client may take to acknowledge a burst's last batches (the default is 5 seconds)"
            )
        }
        let handle = handle
        let port: LocalMessagePort
        do {
            // A client's messages are small (a hello is the largest): a larger one is
            // skipped as it arrives, never assembled.
            port = try LocalMessagePort(
                name: configuration.name, loop: loop, maximumMessageSize: ServerWire.maximumClientMessageSize,
                access: configuration.clientAccess, namespace: configuration.namespace
            ) { message in handle.server?.received(message) }
        } catch {
            throw .server(name: configuration.name, reason: error.description)
        }
        self.port = port
        system.setRouting(RoutingStage(handle: handle))
        do throws(HIDError) { try system.start() } catch {
            stop()
            throw error
        }
        loop.add(port.source, to: .common)
        Self.logger.debug("event server '\(configuration.name)' serves \(configuration.clientAccess)")
    }

    /// Stops the devices (clients see their keys released, touches cancelled and the
    /// devices removed), then the port: clients see the server go.
    public func stop() {
        loop.preconditionOnLoopThread("HIDEventServer.stop")
        if port != nil { system.stop() }
        flushAll()
        port?.invalidate()
        port = nil
        watchTimer?.invalidate()
        watchTimer = nil
        for client in order { client.leave() }
        order = []
        served = [:]
        byToken = [:]
        focused = nil
    }

    /// Replaces the screens and per-device settings (a settings file read again on
    /// `SIGHUP`): every attached device's mapping is worked out again, so its next events
    /// carry locations by the new settings without a restart (``HIDEventSystem/setScreens(_:)``).
    /// Server loop only.
    /// - Returns: where each attached device that maps to a screen maps now, and why.
    @discardableResult
    public func updateScreens(_ screens: DeviceSettingsResolver?) -> [ScreenMappingReport] { system.setScreens(screens) }

    /// The clients attached, in the order they attached.
    public var clients: [HIDServerClient] { order.map(\.info) }

    /// The client with the focus, if any.
    public var focusedClient: HIDServerClient.ID? { focused?.id }

    /// Calls `body` on the loop for each change among the clients: attached, detached,
    /// focus moved, not responding, responding again. These are the server's own events,
    /// not devices': its handlers for them.
    public func addClientObserver(_ body: @escaping (HIDServerClientEvent) -> Void) {
        loop.preconditionOnLoopThread("HIDEventServer.addClientObserver")
        observers.append(body)
    }

    func notify(_ event: HIDServerClientEvent) {
        for observer in observers { observer(event) }
    }

    // MARK: Focus

    /// Moves the focus to `client` (`nil`: to no one). The client that had it gets key-ups
    /// for held keys, releases for held buttons and its touches cancelled; the new one
    /// starts clean.
    public func focus(_ client: HIDServerClient.ID?) {
        loop.preconditionOnLoopThread("HIDEventServer.focus")
        let target = client.flatMap { served[$0] }
        guard target !== focused, client == nil || target != nil else { return }
        let previous = focused
        focused = target
        if let previous {
            stopRumbles(of: previous)
            release(previous)
            _ = try? previous.port.send(msgid: ServerWire.MessageID.focus.rawValue, data: ServerWire.focus(false), timeout: .zero)
        }
        if let target {
            flush(target)
            focusHistory.removeAll { $0 == target.id }
            focusHistory.append(target.id)
            _ = try? target.port.send(msgid: ServerWire.MessageID.focus.rawValue, data: ServerWire.focus(true), timeout: .zero)
        }
        Self.logger.debug(
            "event server '\(configuration.name)': focus \(previous?.hello.name ?? "(none)") → \(target?.hello.name ?? "(none)")")
        notify(.focusChanged(from: previous?.id, to: target?.id))
    }

    /// Moves the focus to the client that attached after the focused one (the first after
    /// the last), as a key that switches apps does.
    public func focusNext() {
        guard !order.isEmpty else { return }
        let index = focused.flatMap { current in order.firstIndex { $0 === current } }.map { ($0 + 1) % order.count } ?? 0
        focus(order[index].id)
    }

    /// Takes from a client that loses the focus everything focus-bound it holds.
    private func release(_ client: ServedClient) {
        let now = MonotonicInstant.now
        flush(client)
        for device in client.routed.devices.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            if let info = liveDevices[device], client.observes(info) { continue }
            let state = client.routed[device]
            var target = VisibleState()
            target.switches = state.switches
            for event in state.difference(to: target, device: device, at: now) { deliver(event, to: client) }
        }
        flush(client)
    }
}
