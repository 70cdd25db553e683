import Glibc

/// The `poll` events a ``LoopPortSource`` watches a descriptor for, and those it reports.
///
/// ```swift
/// let source = LoopPortSource(fileDescriptor: socket, events: [.readable, .peerClosedWriting]) { events in
///     if events.contains(.peerClosedWriting) { print("the peer is done sending") }
/// }
/// ```
public struct PollEvents: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The `poll` mask (`POLLIN`, `POLLOUT`, …).
    public let rawValue: Int16

    /// The events of a `poll` mask.
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// Data to read (`POLLIN`).
    public static let readable = PollEvents(rawValue: Int16(POLLIN))
    /// Urgent data or an exceptional condition (`POLLPRI`).
    public static let priority = PollEvents(rawValue: Int16(POLLPRI))
    /// Room to write (`POLLOUT`).
    public static let writable = PollEvents(rawValue: Int16(POLLOUT))
    /// The peer of a stream socket shut down its writing half or closed (`POLLRDHUP`).
    public static let peerClosedWriting = PollEvents(rawValue: 0x2000)
    /// An error on the descriptor (`POLLERR`; reported whether watched or not).
    public static let error = PollEvents(rawValue: Int16(POLLERR))
    /// The other end hung up (`POLLHUP`; reported whether watched or not).
    public static let hangUp = PollEvents(rawValue: Int16(POLLHUP))
    /// The descriptor cannot be watched — closed, or the watch failed (`POLLNVAL`): the
    /// source stops watching it.
    public static let invalid = PollEvents(rawValue: Int16(POLLNVAL))

    private static let names: [(PollEvents, String)] = [
        (.readable, "readable"), (.priority, "priority"), (.writable, "writable"),
        (.peerClosedWriting, "peerClosedWriting"), (.error, "error"), (.hangUp, "hangUp"), (.invalid, "invalid"),
    ]

    /// The events by name, `[readable, hangUp]` for example.
    public var description: String {
        var parts = Self.names.filter { contains($0.0) }.map(\.1)
        let known = Self.names.reduce(Int16(0)) { $0 | $1.0.rawValue }
        if rawValue & ~known != 0 { parts.append("0x" + String(UInt16(bitPattern: rawValue & ~known), radix: 16)) }
        return "[" + parts.joined(separator: ", ") + "]"
    }
}
