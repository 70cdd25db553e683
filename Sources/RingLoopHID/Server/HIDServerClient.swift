import RingLoop

/// A client of a ``HIDEventServer``, as the server sees it.
public struct HIDServerClient: Sendable, Hashable, Identifiable {
    /// A client's number on its server, unique for the server's life.
    public struct ID: Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public var description: String { "client \(rawValue)" }
    }

    public var id: ID
    /// The name the client gave.
    public var name: String
    /// Its process, as the kernel recorded it.
    public var credentials: PeerCredentials
    /// Whether it acknowledged within ``HIDEventServer/Configuration/notRespondingTimeout``.
    public var isResponding: Bool
    /// Events sent to it.
    public var eventsSent: Int
    /// Events it was not sent because it lagged (it got the difference instead).
    public var eventsDropped: Int
    /// Batches sent and not acknowledged.
    public var outstandingBatches: Int
}

/// A change among a server's clients, for ``HIDEventServer/addClientObserver(_:)``.
public enum HIDServerClientEvent: Sendable, Hashable {
    case attached(HIDServerClient)
    case detached(HIDServerClient)
    case focusChanged(from: HIDServerClient.ID?, to: HIDServerClient.ID?)
    /// The client has not acknowledged for the timeout with batches outstanding: its events
    /// are dropped until it catches up.
    case notResponding(HIDServerClient)
    /// A client that was not responding acknowledged again.
    case responding(HIDServerClient)
}
