import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A file a recording or a description is written to, treated as a Unix tool treats an
/// output path:
/// - a regular file (or a new one) is written beside it under a temporary name, then
///   renamed over it once every byte is written, flushed and closed: a failed write
///   leaves the old file as it was and no partial file behind;
/// - a FIFO or a character device is written into, as a shell's `>` would (the device
///   stays a device: `/dev/full` answers `ENOSPC`, which ends the write);
/// - a folder, a block device or a socket is refused, naming what was found;
/// - a symbolic link is followed to what it points at, and ``followedLink`` says so, so
///   the caller can tell the user which file was replaced (a link to nothing is refused).
///
/// Every error — opening, each write, the final `fsync` and `close`, the rename — is
/// thrown; nothing is ignored.
///
/// ```swift
/// let output = try OutputFile(path: "touchpad.evemu")
/// try output.write(EvemuFormat.write(recording))
/// try output.commit()
/// ```
///
/// Threading: one thread at a time.
public final class OutputFile {
    /// What the path named when it was opened.
    public enum Kind: String, Sendable, Hashable {
        /// A regular file, replaced on ``OutputFile/commit()``.
        case regularFile = "regular file"
        /// Nothing yet: a new file, created on ``OutputFile/commit()``.
        case newFile = "new file"
        /// A FIFO, written into as it is read.
        case fifo = "FIFO"
        /// A character device, written into.
        case characterDevice = "character device"
    }

    /// The path as given.
    public let path: String
    /// The file written: `path`, or what the symbolic link at `path` points at.
    public let target: String
    /// What `target` was when opened.
    public let kind: Kind
    /// Whether `path` is a symbolic link (to ``target``).
    public var followedLink: Bool { target != path }
    /// Bytes written so far.
    public private(set) var bytesWritten = 0

    private var fd: Int32
    /// The temporary file renamed over `target` on commit (regular and new files).
    private let temporary: String?
    private var finished = false

    /// Opens `path` for writing: a temporary file beside a regular (or missing) file, the
    /// FIFO or character device itself otherwise. Opening a FIFO waits for a reader.
    /// - Throws: ``OutputFileError``: a folder, a block device, a socket or a dangling
    ///   link; a folder that does not exist or cannot be written; `open`'s error.
    public init(path: String) throws(OutputFileError) {
        self.path = path
        var info = stat()
        var target = path
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = realpath(path, nil) else { throw .danglingLink(path: path) }
            target = String(cString: resolved)
            free(resolved)
        }
        self.target = target
        let found: Kind
        if stat(target, &info) != 0 {
            guard errno == ENOENT else { throw .cannotOpen(path: path, errno: Errno(rawValue: errno)) }
            found = .newFile
        } else {
            switch info.st_mode & S_IFMT {
            case S_IFREG: found = .regularFile
            case S_IFIFO: found = .fifo
            case S_IFCHR: found = .characterDevice
            case S_IFDIR: throw .isFolder(path: path)
            default: throw .unsupported(path: path, what: info.st_mode & S_IFMT == S_IFBLK ? "a block device" : "a socket")
            }
        }
        kind = found
        switch found {
        case .fifo, .characterDevice:
            temporary = nil
            fd = Self.retrying { open(target, O_WRONLY | O_CLOEXEC) }
            guard fd >= 0 else { throw .cannotOpen(path: path, errno: Errno(rawValue: errno)) }
        case .regularFile, .newFile:
            let folderEnd = target.lastIndex(of: "/")
            let folder = folderEnd.map { String(target[...$0]) } ?? ""
            let name = folderEnd.map { String(target[target.index(after: $0)...]) } ?? target
            var template = Array((folder + "." + name + ".ringloop-XXXXXX").utf8CString)
            fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard fd >= 0 else {
                // An existing file in a folder that takes no new file (/proc, /sys): its
                // replacement cannot be made, which is not the file missing.
                if found == .regularFile { throw .cannotReplace(path: path, errno: Errno(rawValue: errno)) }
                throw .cannotOpen(path: path, errno: Errno(rawValue: errno))
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            // The replacement keeps the replaced file's permissions; a new file gets the
            // usual 0666 less the umask, as the shell's `>` makes it.
            let mode: mode_t
            if found == .regularFile {
                mode = info.st_mode & 0o7777
            } else {
                let mask = umask(0)
                umask(mask)
                mode = 0o666 & ~mask
            }
            _ = fchmod(fd, mode)
        }
    }

    deinit { discard() }

    /// Writes `text` as UTF-8.
    public func write(_ text: String) throws(OutputFileError) {
        var failure: OutputFileError?
        Array(text.utf8).withUnsafeBytes { bytes in
            do throws(OutputFileError) { try write(bytes) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Writes `bytes`, all of them (short writes are continued, `EINTR` retried).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(OutputFileError) {
        guard !finished, fd >= 0 else { throw .write(path: path, errno: .badFileDescriptor) }
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                let error = Errno(rawValue: errno)
                discard()
                throw .write(path: path, errno: error)
            }
            offset += count
            bytesWritten += count
        }
    }

    /// Ends the write: flushes and closes the file, and renames the temporary file over
    /// ``target``. After an error nothing of the write is left (the old file stays).
    public func commit() throws(OutputFileError) {
        guard !finished else { return }
        finished = true
        let fd = self.fd
        self.fd = -1
        if let temporary {
            if fsync(fd) != 0 {
                let error = Errno(rawValue: errno)
                close(fd)
                unlink(temporary)
                throw .write(path: path, errno: error)
            }
            if close(fd) != 0 {
                let error = Errno(rawValue: errno)
                unlink(temporary)
                throw .write(path: path, errno: error)
            }
            if rename(temporary, target) != 0 {
                let error = Errno(rawValue: errno)
                unlink(temporary)
                throw .write(path: path, errno: error)
            }
        } else if close(fd) != 0, errno != EINTR {
            throw .write(path: path, errno: Errno(rawValue: errno))
        }
    }

    /// Abandons the write: the temporary file is removed, the target left as it was (a
    /// FIFO's reader has what was written so far). Safe to call twice.
    public func discard() {
        guard !finished else { return }
        finished = true
        if fd >= 0 { close(fd) }
        fd = -1
        if let temporary { unlink(temporary) }
    }

    private static func retrying(_ body: () -> Int32) -> Int32 {
        while true {
            let result = body()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}

/// Why an ``OutputFile`` could not be written.
public enum OutputFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The path is a folder.
    case isFolder(path: String)
    /// The path is a symbolic link to nothing.
    case danglingLink(path: String)
    /// The path is a block device or a socket.
    case unsupported(path: String, what: String)
    /// The file (or its temporary file beside it) could not be opened.
    case cannotOpen(path: String, errno: Errno)
    /// The file exists, but the file that would replace it cannot be made in its folder
    /// (a folder of /proc or /sys, a read-only file system).
    case cannotReplace(path: String, errno: Errno)
    /// A write, the final flush, the close or the rename failed.
    case write(path: String, errno: Errno)

    /// The path it is about.
    public var path: String {
        switch self {
        case .isFolder(let path), .danglingLink(let path), .unsupported(let path, _), .cannotOpen(let path, _),
            .cannotReplace(let path, _), .write(let path, _):
            path
        }
    }

    public var description: String {
        switch self {
        case .isFolder(let path): "\(path): is a folder; give a file name in it"
        case .danglingLink(let path): "\(path): is a symbolic link to nothing; give the file itself"
        case .unsupported(let path, let what): "\(path): is \(what); give a file, a FIFO or a character device"
        case .cannotOpen(let path, let errno): "\(path): cannot create: \(String(cString: strerror(errno.rawValue)))"
        case .cannotReplace(let path, let errno):
            "\(path): cannot replace it: its folder takes no new file (\(String(cString: strerror(errno.rawValue))));"
                + " give a path in a folder you can write"
        case .write(let path, let errno): "\(path): cannot write: \(String(cString: strerror(errno.rawValue)))"
        }
    }
}
