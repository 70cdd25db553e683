import CLibURing
import CThreads
import Glibc
import SystemPackage

/// A change in a watched directory, as inotify reports it.
public struct FileChange: Sendable, Hashable, CustomStringConvertible {
    /// The name of the entry in the directory that changed (empty for the directory itself).
    public var name: String
    /// The inotify mask of the change (`IN_CREATE`, `IN_DELETE`, `IN_ATTRIB`…).
    public var mask: UInt32

    public init(name: String, mask: UInt32) {
        self.name = name
        self.mask = mask
    }

    public var description: String { "\(name.isEmpty ? "." : name) 0x\(String(mask, radix: 16))" }
}

extension RingRunLoop {
    /// The signals in `numbers` as they arrive, read from a signalfd the loop watches.
    ///
    /// A signal reaches a signalfd only while it is blocked in the thread the kernel picks.
    /// This call blocks the signals in the calling thread (threads started afterwards
    /// inherit the mask); the package's own threads (``LoopThread``, the event system's,
    /// the replay's, the port threads) block SIGINT, SIGTERM, SIGHUP and SIGQUIT from
    /// birth; and a thread started earlier that does not block a signal (the app's own, a
    /// dispatch worker) takes it through a handler this call installs in place of the
    /// default action, which blocks it in that thread and sends it to the process again,
    /// for the signalfd. It may therefore be called at any time, before or after
    /// threads start; docs/DEPLOYMENT.md shows an app's shutdown under systemd.
    ///
    /// Buffering: unbounded — no signal is dropped (the kernel merges repeats of one signal
    /// that arrive before the loop reads them, as it does for any pending signal). Ending
    /// the iteration closes the signalfd; the signals stay blocked.
    ///
    /// - Throws: The `Errno` of `signalfd` or `pthread_sigmask`, or `EINVAL` for a number
    ///   that is not a signal (1–64, not SIGKILL or SIGSTOP).
    public func signals(_ numbers: Set<Int32>) throws(Errno) -> AsyncStream<Int32> {
        let fd = try LoopSignalSource.blockedDescriptor(numbers)
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .unbounded)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { _ in
            for signal in LoopSignalSource.drain(fd) { continuation.yield(signal) }
        }
        continuation.onTermination = { [self] _ in removeThenClose(source, fd) }
        addFromAnyThread(source)
        return stream
    }

    /// The changes inotify reports in the directory at `path` for `mask` (by default
    /// entries created, deleted, moved in or out, and changed attributes).
    ///
    /// Buffering: unbounded — no change is dropped once read; if the kernel's inotify queue
    /// overflows first, an element with `IN_Q_OVERFLOW` says so. Ending the iteration
    /// closes the inotify descriptor. An element with `IN_IGNORED` (the directory was
    /// removed or unmounted) is the last.
    ///
    /// - Throws: The `Errno` of `inotify_init1` or `inotify_add_watch` (`ENOENT` when the
    ///   directory does not exist).
    public func fileChanges(
        at path: String,
        mask: UInt32 = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF)
    ) throws(Errno) -> AsyncStream<FileChange> {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        guard inotify_add_watch(fd, path, mask) >= 0 else {
            let error = errno
            close(fd)
            throw Errno(rawValue: error)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: FileChange.self, bufferingPolicy: .unbounded)
        let reader = LoopBound(InotifyReader(fd: fd), loop: self)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { _ in
            for change in reader.value.drain() {
                continuation.yield(change)
                if change.mask & UInt32(IN_IGNORED) != 0 { continuation.finish() }
            }
        }
        continuation.onTermination = { [self] _ in removeThenClose(source, fd) }
        addFromAnyThread(source)
        return stream
    }

    /// Takes `source` off the loop, then closes `fd`, both on the loop's thread (in that
    /// order, so the descriptor is never closed under a poll the loop still arms).
    func removeThenClose(_ source: LoopPortSource, _ fd: Int32) {
        source.invalidate()
        onLoopThread { _ in close(fd) }
    }
}

/// Reads whole `inotify_event` records from a descriptor.
struct InotifyReader {
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(fd: Int32) { self.fd = fd }

    /// Every change queued now.
    mutating func drain() -> [FileChange] {
        var changes: [FileChange] = []
        let header = MemoryLayout<inotify_event>.size
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset + header <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameBytes = raw[(offset + header)..<min(count, offset + header + Int(event.len))]
                    let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                    changes.append(FileChange(name: name, mask: event.mask))
                    offset += header + Int(event.len)
                }
            }
        }
        return changes
    }
}
