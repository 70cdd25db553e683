#if canImport(Glibc)
import Glibc
import RingLoop
#endif

/// Who holds a kernel device node open, as far as the kernel tells: the descriptors
/// under `/proc/PID/fd` that refer to the node's device (counted afresh at each look, by
/// device number, so any name of the node counts), and an inotify watch on the node that
/// wakes a waiter when anyone opens or closes it.
///
/// How reliable: evdev keeps no count of its readers that user space can read, and
/// uinput's driver is not told of opens, so this is the count `fuser` would give. It
/// counts descriptors, not readers: a `dup` or a child that inherited one counts twice,
/// and a program that opened the node only to look at it (udev's probe, `evtest
/// --query`) counts while it has it open. Without root, other users' processes are not
/// visible (the count is then a lower bound). A watch sees opens through any name of
/// the same inode (devtmpfs has one); a node made elsewhere with `mknod` is found by the
/// count but does not wake the waiter, which then looks again every
/// ``recheckInterval``.
final class NodeReaders: Sendable {
    let path: String
    /// The node's device number (0 when the node could not be looked at).
    private let device: UInt
    /// inotify descriptor watching the node (-1 without one).
    private let watch: Int32

    /// The longest a waiter waits between two counts when inotify says nothing.
    static let recheckInterval: Duration = .milliseconds(100)

    init(path: String) {
        self.path = path
        var info = stat()
        device = stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR ? UInt(info.st_rdev) : 0
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        if fd >= 0, inotify_add_watch(fd, path, UInt32(IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE)) < 0 {
            close(fd)
            watch = -1
        } else {
            watch = fd
        }
    }

    deinit { if watch >= 0 { close(watch) } }

    /// Descriptors open on the node now, in every process this one may look into.
    func count() -> Int {
        guard device != 0, let processes = opendir("/proc") else { return 0 }
        defer { closedir(processes) }
        var total = 0
        while let entry = readdir(processes) {
            let pid = direntName(entry)
            guard let first = pid.utf8.first, first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { continue }
            let folder = "/proc/\(pid)/fd"
            guard let descriptors = opendir(folder) else { continue }
            while let descriptor = readdir(descriptors) {
                let name = direntName(descriptor)
                guard name != ".", name != ".." else { continue }
                var info = stat()
                if stat(folder + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, UInt(info.st_rdev) == device {
                    total += 1
                }
            }
            closedir(descriptors)
        }
        return total
    }

    /// Returns when the node was opened or closed, or after `timeout` (at most
    /// ``recheckInterval``), whichever comes first.
    func waitForChange(timeout: Duration) {
        let bound = Swift.min(timeout, Self.recheckInterval)
        let milliseconds = Int32(max(1, bound.components.seconds * 1000 + bound.components.attoseconds / 1_000_000_000_000_000))
        guard watch >= 0 else {
            _ = Glibc.poll(nil, 0, milliseconds)
            return
        }
        var ready = pollfd(fd: watch, events: Int16(POLLIN), revents: 0)
        _ = Glibc.poll(&ready, 1, milliseconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(watch, $0.baseAddress, $0.count) }) > 0 {}
    }
}

extension VirtualInputDevice {
    /// Waits until at least `count` readers hold the device's node (``readerCount``), for
    /// at most `timeout`.
    /// - Parameters:
    ///   - count: Readers to wait for.
    ///   - timeout: The longest wait.
    ///   - shouldStop: Checked at every change and at least every 100 ms; `true` ends
    ///     the wait (which then returns `false`).
    /// - Returns: Whether the readers came.
    public func waitForReaders(_ count: Int, timeout: Duration, shouldStop: () -> Bool = { false }) -> Bool {
        [self as any VirtualInputDevice].waitForReaders(count, timeout: timeout, shouldStop: shouldStop)
    }
}

extension Sequence where Element == any VirtualInputDevice {
    /// Waits until at least `count` readers hold each device's node (a replay that
    /// starts then loses no event to a reader that opened late), for at most `timeout`.
    /// - Parameters:
    ///   - count: Readers to wait for on every node.
    ///   - timeout: The longest wait.
    ///   - shouldStop: Checked at every change and at least every 100 ms; `true` ends
    ///     the wait (which then returns `false`).
    ///   - progress: Called at most once a second while waiting, with each node's path
    ///     and its readers so far.
    /// - Returns: Whether every node had its readers in time.
    public func waitForReaders(
        _ count: Int, timeout: Duration, shouldStop: () -> Bool = { false },
        progress: (([(node: String, readers: Int)]) -> Void)? = nil
    ) -> Bool {
        let devices = Array(self)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var nextReport = clock.now + .seconds(1)
        while true {
            let counts = devices.map { (node: $0.nodePath, readers: $0.readerCount) }
            guard let waiting = devices.indices.first(where: { counts[$0].readers < count }) else { return true }
            if shouldStop() { return false }
            let now = clock.now
            if now >= deadline { return false }
            if let progress, now >= nextReport {
                progress(counts)
                nextReport = now + .seconds(1)
            }
            // Without a progress callback the report's time never moves: it bounds no wait.
            devices[waiting].waitForReaderChange(timeout: progress == nil ? deadline - now : Swift.min(deadline - now, nextReport - now))
        }
    }
}
