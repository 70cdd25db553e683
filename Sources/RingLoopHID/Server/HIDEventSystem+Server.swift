import Glibc
import RingLoop

// The third shape: an event system that is a client of an event server.
extension HIDEventSystem {
    /// The event server a client attaches to, and what it asks of it.
    public struct ServerAttachment: Sendable, Hashable {
        /// The server's port name (``HIDEventServer/Configuration/name``).
        public var name: String
        /// Where the server's port is.
        public var namespace: MessagePortNamespace
        /// Who may hold the server's name: a holder outside it is refused before anything
        /// is sent (default: this process's user, or root).
        public var trusting: PeerPolicy
        /// The name the server logs and shows for this client.
        public var clientName: String
        /// Kinds not bound to the focus that the client wants (switches, by default).
        public var subscribedKinds: Set<HIDEvent.Kind>
        /// Device classes whose every event the client wants whether or not it has the
        /// focus, where the server's ``HIDEventServer/Configuration/observerAccess`` allows.
        public var subscribedDeviceClasses: Set<HIDDeviceClass>
        /// Whether the client asks for the focus as it attaches (where the server's
        /// ``HIDEventServer/Configuration/focusRequestAccess`` allows).
        public var requestsFocus: Bool

        public init(
            name: String, namespace: MessagePortNamespace = .abstract, trusting: PeerPolicy = .sameUserOrRoot,
            clientName: String = ServerAttachment.processName, subscribedKinds: Set<HIDEvent.Kind> = [.switchChanged],
            subscribedDeviceClasses: Set<HIDDeviceClass> = [], requestsFocus: Bool = false
        ) {
            self.name = name
            self.namespace = namespace
            self.trusting = trusting
            self.clientName = String(decoding: clientName.utf8.prefix(ServerWire.maximumClientNameLength), as: UTF8.self)
            self.subscribedKinds = subscribedKinds
            self.subscribedDeviceClasses = subscribedDeviceClasses
            self.requestsFocus = requestsFocus
        }

        /// This process's name (`/proc/self/comm`).
        public static var processName: String {
            guard let file = fopen("/proc/self/comm", "r") else { return "client" }
            defer { fclose(file) }
            var buffer = [CChar](repeating: 0, count: 64)
            guard fgets(&buffer, 64, file) != nil else { return "client" }
            let name = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return name.isEmpty ? "client" : name
        }
    }
}

extension HIDEventSystem.Configuration {
    /// A client of the event server named `server` (a ``HIDEventServer``, or
    /// `ringloop serve NAME`): the devices are the server's, their events arrive at a port
    /// of this process whose source is the client's source1, and reach handlers, gesture
    /// recognizers and async sequences through the queue and source0 as in the other shapes.
    public init(
        server: String, namespace: MessagePortNamespace = .abstract, trusting: PeerPolicy = .sameUserOrRoot,
        clientName: String = HIDEventSystem.ServerAttachment.processName,
        subscribedKinds: Set<HIDEvent.Kind> = [.switchChanged], subscribedDeviceClasses: Set<HIDDeviceClass> = [],
        requestsFocus: Bool = false, queueCapacity: Int = 1024
    ) {
        self.init(
            input: .server(
                HIDEventSystem.ServerAttachment(
                    name: server, namespace: namespace, trusting: trusting, clientName: clientName,
                    subscribedKinds: subscribedKinds, subscribedDeviceClasses: subscribedDeviceClasses,
                    requestsFocus: requestsFocus)),
            queueCapacity: queueCapacity)
    }
}

extension HIDEventSystem {
    /// Whether this client of an event server has the focus (keys and touches come to
    /// it). `false` while not attached; `true` for a system that reads its own devices.
    /// Client loop thread.
    public var isFocused: Bool {
        guard case .server = configuration.input else { return true }
        return feed?.serverState?.focused ?? false
    }

    /// Calls `body` each time this client of an event server gains (`true`) or loses the
    /// focus, in order with its events: the key-ups of the keys held when the focus went
    /// come before the loss. The same change reaches handlers of
    /// ``HIDEvent/Kind/focusChanged`` and the ``events(kinds:deviceClasses:buffer:)``
    /// sequences; this is a handler of that kind. A system that reads its own devices
    /// always has the focus and never calls it. Client loop thread.
    @discardableResult
    public func onFocusChange(_ body: @escaping (_ isFocused: Bool) -> Void) -> HIDHandlerToken {
        addHandler(kinds: [.focusChanged]) { event in
            if case .focusChanged(let isFocused) = event.payload { body(isFocused) }
            return .pass
        }
    }

    /// The names of the layouts of the keymap the event server holds for its clients
    /// (``HIDEventServer/setKeymap(_:composeTable:)``), in group order, as its welcome
    /// gave them, so a client can show the layout a key event's
    /// ``KeyEvent/keymapModifiers`` names; empty before the first welcome, when the server
    /// holds no keymap, and for a system that reads its own devices. Client loop thread.
    public var serverLayoutNames: [String] { feed?.serverLayoutNames ?? [] }

    /// Whether this client is attached to its event server now (it re-attaches by itself
    /// when the server comes back). Client loop thread.
    public var isAttachedToServer: Bool { feed?.serverState?.attached ?? false }

    /// Asks the event server for the focus; the server gives it where its policy allows
    /// (``HIDEventServer/Configuration/focusRequestAccess``). Client loop thread.
    /// - Throws: ``HIDError/configuration(_:)`` for a system that is no server's client,
    ///   ``HIDError/server(name:reason:)`` when not attached.
    public func requestFocus() throws(HIDError) {
        loop.preconditionOnLoopThread("HIDEventSystem.requestFocus")
        guard let feed else { throw .configuration("requestFocus: the event system is not started") }
        _ = try feed.control(.requestFocus)
    }
}
