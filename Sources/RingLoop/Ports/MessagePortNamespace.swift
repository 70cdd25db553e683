import CLibURing
import Glibc

/// Where a named port's socket lives for other processes.
///
/// - ``abstract`` (the default): Linux's abstract socket namespace, under `rlport:` and the
///   port's name. No file, nothing to clean up after a crash — and no permissions: every
///   process in the same network namespace can connect, so the port's ``PeerPolicy`` is
///   what keeps others out.
/// - ``directory(_:permissions:)``: a socket file `NAME.port` in a directory. The kernel
///   checks the file's permissions at connect (write permission is needed), before the
///   port's policy is even asked: a port can be closed to everyone outside its group, say,
///   by the file system alone. The port removes its file when it is invalidated; a file
///   left by a process that died is replaced only if it is a socket nobody listens on.
///
/// A ``RemoteMessagePort`` must name the same namespace as the port it looks for.
public enum MessagePortNamespace: Sendable, Hashable, CustomStringConvertible {
    /// Linux's abstract socket namespace (per network namespace, no permissions).
    case abstract
    /// A socket file `NAME.port` in `directory`, created with `permissions` (as `chmod`
    /// takes them; `0o600` by default: only the port's user may connect).
    case directory(String, permissions: UInt32 = 0o600)

    public var description: String {
        switch self {
        case .abstract: "the abstract namespace"
        case .directory(let directory, let permissions): "\(directory) (mode \(String(permissions, radix: 8)))"
        }
    }

    /// The socket file of port `name`, for a directory namespace.
    func path(of name: String) -> String? {
        guard case .directory(let directory, _) = self else { return nil }
        return (directory.hasSuffix("/") ? directory : directory + "/") + name + ".port"
    }

    /// The address of port `name` in this namespace.
    func address(of name: String) throws(MessagePortError) -> SocketAddress {
        do {
            if let path = path(of: name) { return try SocketAddress.unix(path: path) }
            return try SocketAddress.abstract(PortWire.namePrefix + name)
        } catch {
            throw .invalidName(name)
        }
    }

    /// How this process's registry keys a port: its namespace and name.
    func key(of name: String) -> String { path(of: name) ?? name }

    /// A socket listening as port `name`, and for a directory namespace the identity of
    /// the file it made (removed by ``removeFile(_:name:)`` only if it is still that file).
    func listen(as name: String) throws(MessagePortError) -> (socket: Int32, file: FileIdentity?) {
        let address = try address(of: name)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .invalidName(name) }
        var made: FileIdentity?
        if case .directory(_, let permissions) = self, let path = path(of: name) {
            // A socket's file takes the socket's own mode, less the umask: set it first,
            // so the file never exists with wider permissions, then exactly after.
            _ = fchmod(descriptor, mode_t(permissions))
            var bound = address.withSockaddr { bind(descriptor, $0, $1) } == 0
            if !bound, errno == EADDRINUSE, Self.isStaleSocket(path, address) {
                Glibc.unlink(path)
                bound = address.withSockaddr { bind(descriptor, $0, $1) } == 0
            }
            guard bound else {
                let failure = errno
                Glibc.close(descriptor)
                throw failure == EADDRINUSE ? .nameInUse(name) : .invalidName(name)
            }
            _ = chmod(path, mode_t(permissions))
            made = FileIdentity(path)
        } else if address.withSockaddr({ bind(descriptor, $0, $1) }) != 0 {
            let failure = errno
            Glibc.close(descriptor)
            throw failure == EADDRINUSE ? .nameInUse(name) : .invalidName(name)
        }
        guard Glibc.listen(descriptor, 64) == 0 else {
            Glibc.close(descriptor)
            throw .invalidName(name)
        }
        return (descriptor, made)
    }

    /// Whether the socket listening as port `name` belongs to a process that has ended or
    /// is ending: the kernel names the listener's process to a connection
    /// (`SO_PEERCRED`, set at `listen`), and /proc says whether it is gone, a zombie or
    /// exiting (`PF_EXITING`). A process killed with SIGKILL leaves its listening socket
    /// to the kernel for a moment (the dead process's ring is torn down after it): the
    /// name is not free yet, but no one holds it. `false` when nothing answers, the
    /// listener's process is alive, or the kernel does not say (a full backlog, another
    /// PID namespace).
    func holderIsGone(of name: String) -> Bool {
        guard let address = try? address(of: name) else { return false }
        let probe = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { Glibc.close(probe) }
        guard address.withSockaddr({ Glibc.connect(probe, $0, $1) }) == 0 else { return false }
        guard let holder = PeerCredentials.ofPeer(of: probe), holder.pid > 0 else { return false }
        return Self.processHasEnded(holder.pid)
    }

    /// Whether process `pid` is gone, a zombie, dead or exiting (/proc/PID/stat: state Z
    /// or X, or the flag `PF_EXITING`, 0x4).
    static func processHasEnded(_ pid: pid_t) -> Bool {
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return errno == ENOENT }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 1024)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return false }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // After the command's name (in parentheses, which it may hold too): state, ppid,
        // pgrp, session, tty, tpgid, flags.
        guard let close = text.lastIndex(of: ")") else { return false }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 6, let flags = UInt64(fields[6]) else { return false }
        return fields[0] == "Z" || fields[0] == "X" || flags & 0x4 != 0
    }

    /// Removes port `name`'s socket file if it is still the one `file` names.
    func removeFile(_ file: FileIdentity?, name: String) {
        guard let file, let path = path(of: name), FileIdentity(path) == file else { return }
        Glibc.unlink(path)
    }

    /// Whether `path` is a socket file nobody listens on (left by a process that died).
    private static func isStaleSocket(_ path: String, _ address: SocketAddress) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return false }
        let probe = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { Glibc.close(probe) }
        return address.withSockaddr { Glibc.connect(probe, $0, $1) } != 0 && errno == ECONNREFUSED
    }
}

/// A file's identity (device and inode), to tell the file a port made from one put in its
/// place later.
struct FileIdentity: Sendable, Hashable {
    let device: UInt64
    let inode: UInt64

    init?(_ path: String) {
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }
}
