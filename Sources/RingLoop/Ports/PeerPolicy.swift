import CLibURing
import Glibc

/// Who a process on the other end of a Unix socket is, as the kernel recorded it when the
/// connection was made (`SO_PEERCRED`, and `SO_PEERGROUPS` for the supplementary groups):
/// not what the peer says of itself.
public struct PeerCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The peer's process id (in the caller's PID namespace; 0 if it is not visible there).
    public var pid: Int32
    /// The peer's effective user id.
    public var uid: UInt32
    /// The peer's effective group id.
    public var gid: UInt32
    /// The peer's supplementary groups (empty when the kernel does not report them).
    public var groups: [UInt32]

    /// Credentials of a process.
    public init(pid: Int32, uid: UInt32, gid: UInt32, groups: [UInt32] = []) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// This process's own credentials.
    public static var ofThisProcess: PeerCredentials {
        let count = getgroups(0, nil)
        var groups = [gid_t](repeating: 0, count: Int(max(0, count)))
        let read = groups.isEmpty ? 0 : getgroups(count, &groups)
        return PeerCredentials(pid: getpid(), uid: geteuid(), gid: getegid(), groups: Array(groups.prefix(Int(max(0, read)))))
    }

    /// The credentials of the process at the other end of the connected Unix socket
    /// `socket`, as recorded by the kernel at connect (or listen) time; `nil` when the
    /// kernel gives none (not a Unix socket).
    public static func ofPeer(of socket: Int32) -> PeerCredentials? {
        // `struct ucred` (pid, uid, gid: three 32-bit words; glibc declares the struct only
        // with `_GNU_SOURCE`), read as a homogeneous tuple, which has C's layout.
        var credentials: (UInt32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(UInt32, UInt32, UInt32)>.size)
        guard getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, length == 12 else { return nil }
        // Supplementary groups (Linux 4.13): asked with room for 64, then for what it says.
        var groups = [gid_t](repeating: 0, count: 64)
        var bytes = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        var result = getsockopt(socket, SOL_SOCKET, peerGroupsOption, &groups, &bytes)
        if result != 0, errno == ERANGE, Int(bytes) <= 65_536 * MemoryLayout<gid_t>.size {
            groups = [gid_t](repeating: 0, count: Int(bytes) / MemoryLayout<gid_t>.size)
            result = getsockopt(socket, SOL_SOCKET, peerGroupsOption, &groups, &bytes)
        }
        let count = result == 0 ? min(groups.count, Int(bytes) / MemoryLayout<gid_t>.size) : 0
        return PeerCredentials(
            pid: Int32(bitPattern: credentials.0), uid: credentials.1, gid: credentials.2,
            groups: Array(groups.prefix(count)))
    }

    /// `SO_PEERGROUPS` (Linux's `asm-generic/socket.h`; glibc declares it only with
    /// `_GNU_SOURCE`).
    private static let peerGroupsOption: Int32 = 59

    public var description: String { "pid \(pid), uid \(uid), gid \(gid)" }
}

/// Which processes a named port serves, or which a client trusts to hold a port's name:
/// checked against the kernel's record of the peer (``PeerCredentials``), never against
/// anything the peer sends.
///
/// A port's default, ``sameUser``, serves only processes of the user the port's process
/// runs as (dbus's session bus does the same); a client's default, ``sameUserOrRoot``,
/// trusts a port held by its own user or by root (a system service). Name users and groups
/// to open a port wider, or ``anyone`` for a port meant for every local user.
///
/// ```swift
/// // A service running as root that serves the members of group "kiosk" (gid 1001).
/// let port = try LocalMessagePort(
///     name: "com.example.panel", loop: loop, access: .users([0], groups: [1001])) { msgid, data in nil }
/// ```
public struct PeerPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Users let in, by uid.
    public var users: Set<UInt32>
    /// Groups let in, by gid: a peer whose effective or supplementary groups include one.
    public var groups: Set<UInt32>
    /// Whether every peer is let in (``anyone``).
    public var admitsEveryone: Bool

    /// A policy that lets in `users` and the members of `groups`.
    public static func users(_ users: Set<UInt32>, groups: Set<UInt32> = []) -> PeerPolicy {
        PeerPolicy(users: users, groups: groups, admitsEveryone: false)
    }

    /// A policy that lets in the members of `groups`.
    public static func groups(_ groups: Set<UInt32>) -> PeerPolicy {
        PeerPolicy(users: [], groups: groups, admitsEveryone: false)
    }

    /// Processes of the user this process runs as (its effective uid).
    public static var sameUser: PeerPolicy { .users([geteuid()]) }

    /// Processes of the user this process runs as, and of root.
    public static var sameUserOrRoot: PeerPolicy { .users([geteuid(), 0]) }

    /// Every process that can reach the port: on the abstract namespace, every process in
    /// the same network namespace, of any user.
    public static let anyone = PeerPolicy(users: [], groups: [], admitsEveryone: true)

    /// Whether `peer` is let in.
    public func admits(_ peer: PeerCredentials) -> Bool {
        if admitsEveryone || users.contains(peer.uid) || groups.contains(peer.gid) { return true }
        return peer.groups.contains { groups.contains($0) }
    }

    public var description: String {
        if admitsEveryone { return "anyone" }
        let names = users.sorted().map { "uid \($0)" } + groups.sorted().map { "gid \($0)" }
        return names.isEmpty ? "no one" : names.joined(separator: ", ")
    }
}
