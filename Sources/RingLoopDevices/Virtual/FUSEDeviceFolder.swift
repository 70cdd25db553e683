import CFUSEGuard
import CFuse
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Why a virtual device could not be created or served.
public enum VirtualDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The folder could not be created or prepared.
    case folder(path: String, errno: Errno)
    /// libfuse refused to create the session or to mount (no `/dev/fuse`, not root…).
    case mount(path: String, reason: String)
    /// The device was removed.
    case removed(String)
    /// Neither uinput nor FUSE can be used here.
    case noBackend(String)
    /// A uinput call failed.
    case uinput(operation: String, errno: Errno)
    /// The server thread cannot run on the CPUs asked for.
    case placement(CPUAffinityError)
    /// Something is already mounted at the folder (`mounted` says what): it is neither
    /// hidden nor detached.
    case mountPoint(path: String, mounted: String)

    public var description: String {
        switch self {
        case .folder(let path, let errno): "\(path): \(String(cString: strerror(errno.rawValue)))"
        case .mount(let path, let reason): "cannot mount virtual devices at \(path): \(reason)"
        case .removed(let path): "\(path): the device was removed"
        case .noBackend(let reason): reason
        case .uinput(let operation, let errno): "uinput \(operation) failed: \(String(cString: strerror(errno.rawValue)))"
        case .placement(let error): "serverCPUs: \(error)"
        case .mountPoint(let path, let mounted):
            "\(path): is a mount point (\(mounted)); give a folder where nothing is mounted"
        }
    }
}

/// A mounted folder of `eventN` files that behave like the kernel's evdev nodes, served
/// by libfuse from threads of this process: `libevdev_new_from_fd` works on them, reads
/// return `struct input_event` records, and poll (so io_uring poll) wakes readers.
///
/// Each node keeps a buffer per open file with the kernel's overflow behaviour, honours
/// `EVIOCGRAB`, `EVIOCSCLOCKID`, `EVIOCREVOKE` and `EV_LED` writes, and answers every
/// `EVIOCG*` query `libevdev_new_from_fd` makes, from the device's current state. A
/// removed node answers `ENODEV` and disappears from the folder.
///
/// Running as root, the folder mounts without the setuid helper. A dead folder of this
/// package left at the same path by a crashed run is detached first; anything else
/// mounted there is refused (``VirtualDeviceError/mountPoint(path:mounted:)``), and
/// ``close()`` removes the folder only if `init` created it.
///
/// A process that serves a folder and also reads its nodes must never be able to hang on
/// it, whatever ends it. Three guards, chosen over serving from a second process (which
/// would move every node's state behind a message protocol):
/// - opens set `FOPEN_NOFLUSH`, so closing a node (at exit too) sends the server nothing
///   to wait for;
/// - a guardian process (`ringloop-guard`, forked at mount, its own session) watches this
///   process and, once it is dying — SIGKILL, a crash, any signal with no handler — aborts
///   the connection and detaches the mount, which releases a thread still waiting for an
///   answer from the server that died with it, and everyone else using the folder;
/// - a handler of the crash signals (chained before the handlers already installed, the
///   Swift backtracer's) aborts and detaches the folders before a backtracer suspends the
///   process, serving thread included.
public final class FUSEDeviceFolder: @unchecked Sendable {
    // @unchecked: `session` and `thread` are set once in init and only read after;
    // everything else shared is behind `state`.

    /// Where the nodes appear.
    public let path: String
    /// The CPUs the serving thread was placed on (`nil`: not placed).
    public let serverCPUs: [Int]?
    fileprivate let session: OpaquePointer
    /// The serving thread, started once the callbacks can find this folder.
    private var thread: PosixThread?
    let state = FolderLock()
    private let closed = Atomic<Bool>(false)
    /// The guardian process and the crash handler's slot for this mount.
    private var guardian: pid_t = -1
    private var guardSlot: Int32 = -1
    static let logger = Logger(label: "RingLoop.FUSEDeviceFolder")

    /// Mounts a new folder at `path` (created if missing) and starts serving it.
    ///
    /// - Parameters:
    ///   - path: Where the nodes appear.
    ///   - serverCPUs: The CPUs the serving thread runs on (any of `CPUAffinity.onlineCPUs()`;
    ///     `nil`: wherever the creating thread may run). The server answers readers'
    ///     opens, polls, ioctls and reads that find data waiting; reads that wait for a
    ///     frame are answered by the thread that sends it. A benchmark places the server
    ///     to measure the chain with it on the reader's CPU or away from it.
    public init(path: String, serverCPUs: [Int]? = nil) throws(VirtualDeviceError) {
        self.path = path
        if let serverCPUs {
            do { try CPUAffinity.validate(cpus: serverCPUs) } catch {
                throw .placement(error)
            }
        }
        self.serverCPUs = serverCPUs
        createdFolder = try Self.prepareMountPoint(path)
        var ops = fuse_lowlevel_ops()
        FUSEOperations.install(&ops)
        let arguments = ["ringloop-devices", "-o", "allow_other,fsname=ringloop-evdev,subtype=evdev"]
        var cStrings = arguments.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let retained = Unmanaged.passRetained(ServerContext())
        let context = retained.takeUnretainedValue()
        let created: OpaquePointer? = cStrings.withUnsafeMutableBufferPointer { argv in
            var args = fuse_args(argc: Int32(argv.count), argv: argv.baseAddress, allocated: 0)
            let session = fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, retained.toOpaque())
            // libfuse copies the arguments it edits (fuse_opt_add_arg); free its copy.
            fuse_opt_free_args(&args)
            return session
        }
        guard let session = created else {
            retained.release()
            if createdFolder { rmdir(path) }
            throw .mount(path: path, reason: "fuse_session_new failed (is libfuse3 installed?)")
        }
        guard fuse_session_mount(session, path) == 0 else {
            fuse_session_destroy(session)
            retained.release()
            if createdFolder { rmdir(path) }
            let reason =
                access("/dev/fuse", R_OK | W_OK) == 0
                ? "mount refused (mounting FUSE without the setuid helper needs root)"
                : "/dev/fuse is missing or not accessible (install fuse3, load the fuse module, or run as root)"
            throw .mount(path: path, reason: reason)
        }
        self.session = session
        self.context = retained
        context.folder = self
        guardian = ringloop_start_fuse_guardian(path, createdFolder ? 1 : 0)
        if guardian < 0 {
            Self.logger.warning(
                "\(path): no guardian process (\(String(cString: strerror(-guardian)))): a killed process may hang on this folder")
        }
        guardSlot = Self.guardLock.locked { ringloop_guard_mount(path) }
        // One serving thread: no handler ever blocks (reads with no data are parked and
        // answered later), so more threads would add nothing but cancellation at exit.
        let sessionAddress = UInt(bitPattern: session)
        thread = PosixThread.start(name: "fuse-evdev") {
            // Validated above; a cpuset that changed since then leaves the thread where it was.
            if let serverCPUs { try? CPUAffinity.restrictCurrentThread(to: serverCPUs) }
            _ = fuse_session_loop(OpaquePointer(bitPattern: sessionAddress))
        }
    }

    private let context: Unmanaged<ServerContext>
    /// Whether `init` created the folder (``close()`` removes only such a folder).
    private let createdFolder: Bool

    deinit { close() }

    /// Removes every node, unmounts the folder and stops serving. Safe to call twice.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for node in state.withLock({ Array($0.nodes.values) }) { node.markRemoved() }
        fuse_session_exit(session)
        // Abort the connection first: a lazy unmount alone leaves it alive, and the
        // serving thread blocked in its read, while any file on the folder is still
        // open (a reader that has not closed yet, an inotify watch).
        Self.guardLock.locked { ringloop_unguard_mount(guardSlot) }
        _ = ringloop_force_unmount(path)
        fuse_session_unmount(session)
        // The forced unmount fails with EBUSY while a reader still has a node open (after
        // aborting the connection): detach the dead mount, or it stays behind.
        if Self.isMountPoint(path) { _ = ringloop_lazy_unmount(path) }
        ringloop_stop_fuse_guardian(guardian)
        thread?.join()
        // No callback runs any more: free what readers still open would have freed.
        for node in state.withLock({ Array($0.nodes.values) }) { node.releasePollHandles() }
        fuse_session_destroy(session)
        context.takeUnretainedValue().folder = nil
        context.release()
        if createdFolder { rmdir(path) }
    }

    /// Adds a node for `description`; returns it once it is visible in the folder.
    /// - Parameters:
    ///   - description: What the device says about itself.
    ///   - bufferSize: Events each reader's buffer holds before it overflows (default: the
    ///     kernel's choice for such a device: evdev's `evdev_compute_buffer_size`).
    ///   - appliesFuzz: Whether absolute values are defuzzed as the input core does.
    ///     Pass `false` to replay a recording: its values were filtered when recorded,
    ///     and a second pass would move them (readers still see the recorded fuzz).
    public func addDevice(
        _ description: InputDeviceDescription, bufferSize: Int? = nil, appliesFuzz: Bool = true
    )
        throws(VirtualDeviceError) -> FUSEEvdevNode
    {
        guard !closed.load(ordering: .acquiring) else { throw .removed(path) }
        let node = state.withLock { state in
            let index = state.nextIndex
            state.nextIndex += 1
            let inode = UInt64(index) + 2
            let node = FUSEEvdevNode(
                folder: self, name: "event\(index)", inode: inode, description: description,
                bufferSize: bufferSize ?? Self.kernelBufferSize(description), appliesFuzz: appliesFuzz)
            state.nodes[inode] = node
            return node
        }
        // Create the entry through the kernel (a mknod this server accepts only for
        // nodes being added), so watchers see it as any new file: inotify's IN_CREATE.
        if mknod(node.path, S_IFREG | 0o660, 0) != 0 {
            let error = errno
            forget(node)
            throw .folder(path: node.path, errno: Errno(rawValue: error))
        }
        return node
    }

    /// The kernel's choice (`evdev_compute_buffer_size`): 8 packets of the device's
    /// typical frame, at least 64 events, rounded up to a power of two; the typical
    /// frame as `input_estimate_events_per_packet` estimates it when the driver gives no
    /// hint (slots, or the tracking-id range clamped to 2…32, or 2 for protocol A; one per
    /// axis and each multitouch axis once per slot; relative axes; 7 for keys and
    /// `MSC_*`; the frame's `SYN_MT_REPORT`s and `SYN_REPORT`).
    static func kernelBufferSize(_ description: InputDeviceDescription) -> Int {
        let absolute = description.codes[Evdev.EV_ABS] ?? []
        let slots: Int
        if description.slotCount > 0 {
            slots = description.slotCount
        } else if absolute.contains(Evdev.ABS_MT_TRACKING_ID), let tracking = description.absoluteAxes[Evdev.ABS_MT_TRACKING_ID] {
            slots = Int(min(max(Int64(tracking.maximum) - Int64(tracking.minimum) + 1, 2), 32))
        } else if absolute.contains(Evdev.ABS_MT_POSITION_X) {
            slots = 2
        } else {
            slots = 0
        }
        var events = slots + 1
        for code in absolute {
            // input_is_mt_axis (only with real multitouch)
            events += Evdev.isMultitouchAxis(code) ? slots : 1
        }
        events += description.codes[Evdev.EV_REL]?.count ?? 0
        events += 7
        let wanted = max(events * 8, 64)
        var power = 1
        while power < wanted { power <<= 1 }
        return power
    }

    /// Takes a removed node's entry out of the folder through the kernel (an `unlink`
    /// that this server accepts only for removed nodes), so the kernel reports it like
    /// any deletion: inotify's `IN_DELETE` fires and later lookups fail.
    func unlinkRemoved(_ node: FUSEEvdevNode) {
        guard !closed.load(ordering: .acquiring) else { return }
        if unlink(node.path) != 0, errno != ENOENT {
            Self.logger.debug("unlink \(node.path) failed: errno \(errno)")
        }
    }

    func node(_ inode: UInt64) -> FUSEEvdevNode? { state.withLock { $0.nodes[inode] } }

    func node(named name: String) -> FUSEEvdevNode? {
        state.withLock { state in state.nodes.values.first { $0.name == name && $0.published && !$0.unlinked } }
    }

    func liveNodes() -> [FUSEEvdevNode] {
        state.withLock { state in
            state.nodes.values.filter { $0.published && !$0.unlinked }.sorted { $0.inode < $1.inode }
        }
    }

    func forget(_ node: FUSEEvdevNode) {
        state.withLock { $0.nodes[node.inode] = nil }
    }

    // MARK: Mount point

    /// Creates the folder, detaching a stale mount of a crashed run first.
    /// Serializes changes to the crash handler's table of mounts.
    static let guardLock = ThreadLock<Void>(())

    /// Readies `path` to be mounted on: creates it if missing (then ``close()`` removes
    /// it), detaches a dead mount a crashed run of this package left there, and refuses
    /// anything else mounted there — a live folder of another process, a tmpfs — which it
    /// must neither hide nor detach.
    /// - Returns: Whether the folder was created here.
    static func prepareMountPoint(_ path: String) throws(VirtualDeviceError) -> Bool {
        var info = stat()
        if stat(path, &info) != 0 {
            let error = errno
            if (error == ENOTCONN || error == EIO), let mount = mountEntry(path), mount.isOurs {
                // A folder of this package whose server died: detach it, then use the folder.
                _ = ringloop_lazy_unmount(path)
                return false
            }
            guard error == ENOENT else { throw .folder(path: path, errno: Errno(rawValue: error)) }
        } else {
            if let mount = mountEntry(path) {
                throw .mountPoint(path: path, mounted: mount.description)
            }
            guard info.st_mode & S_IFMT == S_IFDIR else { throw .folder(path: path, errno: .notDirectory) }
            return false
        }
        if mkdir(path, 0o755) != 0 {
            if errno == EEXIST { return false }
            throw .folder(path: path, errno: Errno(rawValue: errno))
        }
        return true
    }

    /// What is mounted at `path`, from this process's mount table.
    struct MountEntry {
        var fileSystem: String
        var source: String
        /// A FUSE folder of this package (`ringloop-evdev` on `fuse.evdev`).
        var isOurs: Bool { source == "ringloop-evdev" && fileSystem.hasPrefix("fuse") }
        var description: String { isOurs ? "a folder of virtual devices of another process" : "\(fileSystem) (\(source))" }
    }

    static func mountEntry(_ path: String) -> MountEntry? {
        guard let file = fopen("/proc/self/mountinfo", "r") else { return nil }
        defer { fclose(file) }
        let target = absolutePath(path)
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        var found: MountEntry?
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            let fields = text.split(separator: " ")
            guard fields.count > 4, fields[4] == target else { continue }
            // After the " - " separator: file system type, source, options. The last
            // mount at a path is the one seen there.
            let tail = text.firstRange(of: " - ").map { text[$0.upperBound...].split(separator: " ") } ?? []
            found = MountEntry(
                fileSystem: tail.first.map(String.init) ?? "?", source: tail.dropFirst().first.map(String.init) ?? "?")
        }
        return found
    }

    /// `path` made absolute and free of `.`, `..` and links where it exists (as the mount
    /// table writes paths).
    static func absolutePath(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let folder = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return folder + "/" + path
    }

    static func isMountPoint(_ path: String) -> Bool { mountEntry(path) != nil }
}

/// Folder state shared by libfuse's thread and the API.
final class FolderLock: Sendable {
    struct State {
        var nodes: [UInt64: FUSEEvdevNode] = [:]
        var nextIndex = 0
    }
    private let lock = ThreadLock(State())
    func withLock<T>(_ body: (inout State) -> T) -> T { lock.withLock(body) }
}

/// What libfuse hands back to the callbacks as user data.
final class ServerContext: @unchecked Sendable {
    // @unchecked: `folder` is set before the loop starts and cleared after it ended.
    weak var folder: FUSEDeviceFolder?
}
