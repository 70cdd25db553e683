import CLibURing
import Glibc
import SystemPackage

/// A socket address (IPv4, IPv6, a Unix path or an abstract Unix name), held as the bytes
/// of a `sockaddr`, for ``LoopIOChannel/connect(to:completion:)`` and for making sockets.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The `sockaddr` bytes (`sockaddr_in`, `sockaddr_in6` or `sockaddr_un`).
    let bytes: [UInt8]

    init(copying pointer: UnsafeRawPointer, length: Int) {
        bytes = Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    /// An address family.
    public struct Family: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The `AF_` constant.
        public let rawValue: Int32
        /// The family of an `AF_` constant.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// IPv4 (`AF_INET`).
        public static let ipv4 = Family(rawValue: AF_INET)
        /// IPv6 (`AF_INET6`).
        public static let ipv6 = Family(rawValue: AF_INET6)
        /// Unix sockets, named by a path or in the abstract namespace (`AF_UNIX`).
        public static let unix = Family(rawValue: AF_UNIX)

        public var description: String {
            switch self {
            case .ipv4: "ipv4"
            case .ipv6: "ipv6"
            case .unix: "unix"
            default: "family \(rawValue)"
            }
        }
    }

    /// A socket type: how a socket's data is framed and delivered.
    public struct SocketType: RawRepresentable, Sendable, Hashable {
        /// The `SOCK_` constant.
        public let rawValue: Int32
        /// The type of a `SOCK_` constant.
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// A byte stream, in order, reliable (`SOCK_STREAM`: TCP, a Unix stream).
        public static let stream = SocketType(rawValue: Int32(SOCK_STREAM.rawValue))
        /// Datagrams, each whole or not at all (`SOCK_DGRAM`: UDP, a Unix datagram socket).
        public static let datagram = SocketType(rawValue: Int32(SOCK_DGRAM.rawValue))
        /// Messages in order, reliable, each whole (`SOCK_SEQPACKET`).
        public static let sequencedPacket = SocketType(rawValue: Int32(SOCK_SEQPACKET.rawValue))
    }

    /// The address family.
    public var family: Family {
        Family(rawValue: Int32(bytes.withUnsafeBytes { $0.loadUnaligned(as: sa_family_t.self) }))
    }

    /// The port of an IPv4 or IPv6 address, `nil` for a Unix one.
    public var port: UInt16? {
        guard family == .ipv4 || family == .ipv6 else { return nil }
        return UInt16(bigEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self) })
    }

    /// An IPv4 address in dotted form (`"127.0.0.1"`) and a port.
    /// - Throws: ``IOFailure/system(_:)`` with `EINVAL` when `host` is not an IPv4 address.
    public static func ipv4(_ host: String, port: UInt16) throws(IOFailure) -> SocketAddress {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw .system(.invalidArgument) }
        return withUnsafeBytes(of: &address) { SocketAddress(copying: $0.baseAddress!, length: $0.count) }
    }

    /// An IPv6 address (`"::1"`) and a port.
    /// - Throws: ``IOFailure/system(_:)`` with `EINVAL` when `host` is not an IPv6 address.
    public static func ipv6(_ host: String, port: UInt16) throws(IOFailure) -> SocketAddress {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw .system(.invalidArgument) }
        return withUnsafeBytes(of: &address) { SocketAddress(copying: $0.baseAddress!, length: $0.count) }
    }

    /// The IPv4 loopback address `127.0.0.1` with `port` (0: the kernel picks one at bind).
    public static func loopback(port: UInt16) -> SocketAddress {
        // A literal the parser always accepts.
        try! ipv4("127.0.0.1", port: port)
    }

    /// A Unix socket at a file path (at most 107 bytes).
    /// - Throws: ``IOFailure/system(_:)`` with `ENAMETOOLONG` for a longer path.
    public static func unix(path: String) throws(IOFailure) -> SocketAddress {
        try unixAddress(Array(path.utf8), abstract: false)
    }

    /// A Unix socket in Linux's abstract namespace: no file, gone with its last socket
    /// (at most 107 bytes).
    /// - Throws: ``IOFailure/system(_:)`` with `ENAMETOOLONG` for a longer name.
    public static func abstract(_ name: String) throws(IOFailure) -> SocketAddress {
        try unixAddress(Array(name.utf8), abstract: true)
    }

    private static func unixAddress(_ name: [UInt8], abstract: Bool) throws(IOFailure) -> SocketAddress {
        var address = sockaddr_un()
        let room = MemoryLayout.size(ofValue: address.sun_path) - 1
        guard name.count <= room else { throw .system(.fileNameTooLong) }
        address.sun_family = sa_family_t(AF_UNIX)
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
        let start = abstract ? 1 : 0
        withUnsafeMutableBytes(of: &address) { raw in
            for (index, byte) in name.enumerated() { raw[pathOffset + start + index] = byte }
        }
        // An abstract name's length is exact (its bytes may include anything); a path
        // ends at its terminating zero.
        let length = pathOffset + start + name.count + (abstract ? 0 : 1)
        return withUnsafeBytes(of: &address) { SocketAddress(copying: $0.baseAddress!, length: length) }
    }

    /// The address a socket is bound to (`getsockname`), to learn the port the kernel
    /// picked for port 0.
    public static func local(of socket: FileDescriptor) throws(IOFailure) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.rawValue, $0, &length) }
        }
        guard result == 0 else { throw IOFailure(errno: errno) }
        return withUnsafeBytes(of: &storage) { SocketAddress(copying: $0.baseAddress!, length: Int(length)) }
    }

    /// Makes a socket of this address's family (close-on-exec); an IP stream socket gets
    /// `TCP_NODELAY`. The caller owns the descriptor.
    public func makeSocket(type: SocketType = .stream) throws(IOFailure) -> FileDescriptor {
        let descriptor = socket(family.rawValue, type.rawValue | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw IOFailure(errno: errno) }
        if family == .ipv4 || family == .ipv6, type == .stream {
            var one: Int32 = 1
            _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        return FileDescriptor(rawValue: descriptor)
    }

    /// Makes a socket bound to this address and listening (`SO_REUSEADDR` for IP). The
    /// caller owns the descriptor.
    public func makeListeningSocket(type: SocketType = .stream, backlog: Int32 = 128) throws(IOFailure) -> FileDescriptor {
        let descriptor = try makeSocket(type: type).rawValue
        if family == .ipv4 || family == .ipv6 {
            var one: Int32 = 1
            _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withSockaddr { bind(descriptor, $0, $1) }
        guard bound == 0, listen(descriptor, backlog) == 0 else {
            let failure = IOFailure(errno: errno)
            Glibc.close(descriptor)
            throw failure
        }
        return FileDescriptor(rawValue: descriptor)
    }

    /// Calls `body` with the `sockaddr` and its length, for system calls such as `bind`
    /// and `connect`. The pointer is valid only during the call.
    public func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    public var description: String {
        switch family {
        case .ipv4, .ipv6:
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            let offset = family == .ipv4 ? 4 : 8
            bytes.withUnsafeBytes { raw in
                _ = inet_ntop(family.rawValue, raw.baseAddress! + offset, &text, socklen_t(text.count))
            }
            let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return family == .ipv4 ? "\(host):\(port ?? 0)" : "[\(host)]:\(port ?? 0)"
        case .unix:
            let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)!
            let name = bytes.dropFirst(pathOffset)
            if name.first == 0 { return "@" + String(decoding: name.dropFirst(), as: UTF8.self) }
            return String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
        default:
            return "\(family)"
        }
    }
}
