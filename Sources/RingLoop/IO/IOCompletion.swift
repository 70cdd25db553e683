import Glibc
import SystemPackage

/// Why an I/O operation on a ``LoopIOChannel`` failed, with the cases a program handles
/// by name.
public enum IOFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer reset the connection (`ECONNRESET`).
    case connectionReset
    /// The other end is closed: nothing written can be read (`EPIPE`).
    case brokenPipe
    /// Nothing listens at the address (`ECONNREFUSED`).
    case connectionRefused
    /// The operation was cancelled before it finished (`ECANCELED`).
    case cancelled
    /// The channel is closed or its source invalidated: no operation can start.
    case closed
    /// Any other error the kernel reported.
    case system(Errno)

    /// The failure for a positive error number.
    public init(errno: Int32) {
        switch errno {
        case ECONNRESET: self = .connectionReset
        case EPIPE: self = .brokenPipe
        case ECONNREFUSED: self = .connectionRefused
        case ECANCELED: self = .cancelled
        default: self = .system(Errno(rawValue: errno))
        }
    }

    init(_ error: RingError) { self.init(errno: error.errno.rawValue) }

    public var description: String {
        switch self {
        case .connectionReset: "connection reset by peer"
        case .brokenPipe: "broken pipe: the other end is closed"
        case .connectionRefused: "connection refused"
        case .cancelled: "operation cancelled"
        case .closed: "the channel is closed"
        case .system(let errno): "\(errno) (errno \(errno.rawValue))"
        }
    }
}

/// One operation started on a ``LoopIOChannel``: what it does and a number unique in
/// its channel. Pass it to ``LoopIOChannel/cancel(_:)``.
public struct IOOperation: Sendable, Hashable, CustomStringConvertible {
    /// What an operation does.
    public enum Kind: String, Sendable, Hashable {
        /// `read` of a file, pipe or socket, at most the bytes asked for.
        case read
        /// `write` of the bytes given.
        case write
        /// Receives on a socket until cancelled or the peer ends the stream (multishot,
        /// into buffers the kernel picks from the channel's provided-buffer ring).
        case receive
        /// Reads until cancelled or the end of the stream (multishot, into provided buffers):
        /// ``LoopIOChannel/readStream(bufferCount:bufferSize:completion:)``.
        case readStream
        /// `send` of the bytes given on a socket (all of them, or an error).
        case send
        /// Accepts connections on a listening socket until cancelled (multishot).
        case accept
        /// `connect` to an address.
        case connect
    }

    /// What the operation does.
    public let kind: Kind
    /// The operation's number in its channel, from 1.
    public let number: UInt64

    public var description: String { "\(kind) #\(number)" }
}

/// What an operation delivered: one callout of a ``LoopIOChannel``'s source.
///
/// A one-shot operation (read, write, send, connect) delivers one final completion. A
/// multishot one (receive, accept) delivers until its final completion, which ends it:
/// end of file, a failure, or ``IOFailure/cancelled``.
public struct IOCompletion: Sendable, Equatable, CustomStringConvertible {
    /// What the kernel did.
    public enum Outcome: Sendable, Equatable {
        /// Bytes read or received. Fewer than asked for (``IOCompletion/isShort``) is a
        /// short read: the rest was not available yet.
        case bytes([UInt8])
        /// The other end closed the stream, or a read reached the end of the file.
        case endOfFile
        /// Bytes written or sent. Fewer than given (``IOCompletion/isShort``) is a short
        /// write: write the rest again.
        case transferred(Int)
        /// A connection accepted: the new socket's descriptor, owned by the receiver.
        case accepted(FileDescriptor)
        /// The connection is established.
        case connected
        /// The operation failed, with the reason.
        case failed(IOFailure)
    }

    /// The operation this completion belongs to.
    public let operation: IOOperation
    /// What happened.
    public let outcome: Outcome
    /// Bytes the operation asked for (read) or was given (write, send); 0 for the others.
    public let requested: Int
    /// Whether this is the operation's last completion.
    public let isFinal: Bool

    /// Whether a read or write transferred fewer bytes than asked for.
    public var isShort: Bool {
        switch outcome {
        case .bytes(let bytes): operation.kind == .read && bytes.count < requested
        case .transferred(let count): count < requested
        default: false
        }
    }

    public var description: String {
        let what: String
        switch outcome {
        case .bytes(let bytes): what = "\(bytes.count) bytes"
        case .endOfFile: what = "end of file"
        case .transferred(let count): what = "\(count) of \(requested) bytes"
        case .accepted(let descriptor): what = "accepted descriptor \(descriptor.rawValue)"
        case .connected: what = "connected"
        case .failed(let failure): what = "failed: \(failure)"
        }
        return "\(operation): \(what)\(isShort ? " (short)" : "")\(isFinal ? "" : ", more to come")"
    }
}
