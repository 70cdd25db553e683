/// Why a named message port call failed. The cases follow `CFMessagePort`'s results where
/// it has one (`kCFMessagePortSendTimeout`, `…ReceiveTimeout`, `…IsInvalid`,
/// `…TransportError`, `…BecameInvalidError`) and add what crossing a process boundary on
/// Linux needs (who may talk to whom, limits).
public enum MessagePortError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A local port with this name exists already (in this process or another).
    case nameInUse(String)
    /// No local port has this name.
    case notFound(String)
    /// The port was invalid before the message was sent (`kCFMessagePortIsInvalid`): it was
    /// invalidated, or its process ended, earlier.
    case invalidated(String)
    /// The port became invalid while the request waited for its reply
    /// (`kCFMessagePortBecameInvalidError`): invalidated, or its process ended or was killed.
    case becameInvalid(String)
    /// The message (or a reply) is larger than the receiver accepts.
    case tooLarge(size: Int, limit: Int)
    /// No reply came within the reply timeout (`kCFMessagePortReceiveTimeout`); a reply
    /// that comes later is dropped.
    case replyTimeout(String)
    /// The port's queue stayed full for the whole send timeout
    /// (`kCFMessagePortSendTimeout`): its loop is not taking messages as fast as they come.
    case sendTimeout(String)
    /// The name is empty or longer than ``LocalMessagePort/maximumNameLength`` bytes.
    case invalidName(String)
    /// The port's process refused this process: its user and groups are not in the port's
    /// ``PeerPolicy``.
    case accessDenied(String)
    /// The port refused the connection: it (or this process's user) has as many
    /// connections as ``LocalMessagePort/Limits`` allow.
    case tooManyConnections(String)
    /// The name is held by a process this process does not trust to hold it: a user not in
    /// the ``PeerPolicy`` the ``RemoteMessagePort`` was made with. Nothing was sent.
    case untrustedPort(String, owner: PeerCredentials)
    /// The port's process sent something that breaks the protocol
    /// (`kCFMessagePortTransportError`); the connection is closed.
    case transportError(String, reason: String)

    public var description: String {
        switch self {
        case .nameInUse(let name): "a message port named '\(name)' exists already"
        case .notFound(let name): "no message port named '\(name)'"
        case .invalidated(let name): "the message port '\(name)' is invalid"
        case .becameInvalid(let name): "the message port '\(name)' became invalid while waiting for the reply"
        case .tooLarge(let size, let limit): "a message of \(size) bytes is larger than the limit of \(limit) bytes"
        case .replyTimeout(let name): "no reply from '\(name)' within the reply timeout"
        case .sendTimeout(let name): "could not send to '\(name)' within the send timeout: its queue is full"
        case .invalidName(let name):
            "'\(name)' is not a valid port name (1 to \(LocalMessagePort.maximumNameLength) bytes of UTF-8)"
        case .accessDenied(let name): "the message port '\(name)' does not serve this process's user"
        case .tooManyConnections(let name): "the message port '\(name)' has as many connections as it allows"
        case .untrustedPort(let name, let owner):
            "the name '\(name)' is held by a process of uid \(owner.uid), which this port does not trust"
        case .transportError(let name, let reason): "the message port '\(name)' broke the protocol: \(reason)"
        }
    }
}
