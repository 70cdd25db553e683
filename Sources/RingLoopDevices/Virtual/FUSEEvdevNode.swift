import CFuse
import Logging
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// One `eventN` node of a ``FUSEDeviceFolder``: a virtual evdev device whose events you
/// send and which any process reads like a kernel device.
public final class FUSEEvdevNode: @unchecked Sendable {
    // @unchecked: all mutable state is behind `lock`; libfuse replies are made after
    // unlocking, so no libfuse thread ever waits on a reader or on this lock for long.

    /// The node's file name (`event0`…).
    public let name: String
    /// The full path of the node.
    public let path: String
    /// What the device says about itself.
    public let deviceDescription: InputDeviceDescription
    let inode: UInt64
    private weak var folder: FUSEDeviceFolder?
    let lock = ThreadLock<Void>(())  // guards the stored properties below
    var state: EvdevDeviceState
    var clients: [UInt64: Client] = [:]
    var nextClient: UInt64 = 1
    var grabbedBy: UInt64?
    var removed = false
    let bufferSize: Int
    var served = ServedRequests()
    /// A pipe written at every open and close (a byte, never blocking), read by
    /// ``waitForReaderChange(timeout:)``.
    let openings: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }()

    /// What the node's server has answered so far: how its readers reach their events,
    /// and what each frame costs them in round trips to this process.
    ///
    /// A reader that polls pays a poll request per wake-up besides its read (FUSE's poll
    /// notification carries no events, so the woken poller asks again); a reader whose
    /// read waits here (a blocking read, or the input chain's read through the ring) is
    /// answered by the thread that sends the frame, with no round trip of its own.
    public struct ServedRequests: Sendable, Hashable {
        /// `FUSE_POLL` requests: a poller asking whether there is data.
        public var polls = 0
        /// `FUSE_READ` requests.
        public var reads = 0
        /// Reads that waited for a frame and were answered by its sending.
        public var readsAnsweredAtSending = 0
        /// Poll notifications sent to wake pollers.
        public var pollNotifications = 0

        /// What was served between an earlier reading and this one.
        public static func - (later: ServedRequests, earlier: ServedRequests) -> ServedRequests {
            var difference = ServedRequests()
            difference.polls = later.polls - earlier.polls
            difference.reads = later.reads - earlier.reads
            difference.readsAnsweredAtSending = later.readsAnsweredAtSending - earlier.readsAnsweredAtSending
            difference.pollNotifications = later.pollNotifications - earlier.pollNotifications
            return difference
        }
    }

    /// The requests served so far, counted from the node's creation.
    public var servedRequests: ServedRequests { lockedPerform { served } }

    struct Client {
        var buffer: EvdevClientBuffer
        var clock: Int32 = CLOCK_REALTIME
        var pollHandle: OpaquePointer?
        var pendingReads: [(request: fuse_req_t, size: Int)] = []
        var revoked = false
    }

    /// A libfuse reply to make once the lock is released.
    enum Reply {
        case data(fuse_req_t, [UInt8])
        case error(fuse_req_t, Int32)
        case notifyPoll(OpaquePointer)
    }

    init(
        folder: FUSEDeviceFolder, name: String, inode: UInt64, description: InputDeviceDescription, bufferSize: Int,
        appliesFuzz: Bool
    ) {
        self.folder = folder
        self.name = name
        self.path = folder.path + "/" + name
        self.inode = inode
        self.deviceDescription = description
        self.state = EvdevDeviceState(description: description, appliesFuzz: appliesFuzz)
        self.bufferSize = bufferSize
    }

    deinit {
        if openings.read >= 0 { close(openings.read) }
        if openings.write >= 0 { close(openings.write) }
    }

    private func signalOpening() {
        var byte: UInt8 = 1
        _ = Glibc.write(openings.write, &byte, 1)
    }

    // MARK: Sending events

    /// Sends one event through the device, as its driver would: the input core's filter
    /// applies, and readers see the frame when its `SYN_REPORT` arrives.
    public func send(type: UInt16, code: UInt16, value: Int32) throws(VirtualDeviceError) {
        try send([(type, code, value)])
    }

    /// Sends several events (end frames with `SYN_REPORT`, type 0 code 0).
    public func send(_ events: [(type: UInt16, code: UInt16, value: Int32)]) throws(VirtualDeviceError) {
        var replies: [Reply] = []
        let alive = lockedPerform { () -> Bool in
            if removed { return false }
            for event in events {
                if let frame = state.feed(type: event.type, code: event.code, value: event.value) {
                    deliver(frame, replies: &replies)
                }
            }
            return true
        }
        perform(replies)
        if !alive { throw .removed(path) }
    }

    /// Stamps a frame with the three clocks and hands it to the readers it is for.
    func deliver(_ frame: [(UInt16, UInt16, Int32)], replies: inout [Reply]) {
        var realtime = timespec()
        var monotonic = timespec()
        var boottime = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        clock_gettime(CLOCK_BOOTTIME, &boottime)
        for id in clients.keys {
            if let grabbedBy, grabbedBy != id { continue }
            guard !clients[id]!.revoked else { continue }
            let time: timespec
            switch clients[id]!.clock {
            case CLOCK_MONOTONIC: time = monotonic
            case CLOCK_BOOTTIME: time = boottime
            default: time = realtime
            }
            let seconds = Int64(time.tv_sec)
            let micro = Int32(truncatingIfNeeded: time.tv_nsec / 1000)
            var woke = false
            for (type, code, value) in frame {
                _ = clients[id]!.buffer.push(
                    InputEvent(seconds: seconds, microseconds: micro, type: type, code: code, value: value))
            }
            woke = clients[id]!.buffer.push(
                InputEvent(seconds: seconds, microseconds: micro, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: state.frameEndValue))
            if woke { wake(id, replies: &replies) }
        }
    }

    /// Answers parked reads and poll waiters of a reader that has data (or is gone).
    func wake(_ id: UInt64, replies: inout [Reply]) {
        while !clients[id]!.pendingReads.isEmpty, clients[id]!.buffer.hasReadableEvents || removed || clients[id]!.revoked {
            let read = clients[id]!.pendingReads.removeFirst()
            if removed || clients[id]!.revoked {
                replies.append(.error(read.request, ENODEV))
            } else {
                served.readsAnsweredAtSending += 1
                replies.append(.data(read.request, takeEvents(id, maximumBytes: read.size)))
            }
        }
        if let handle = clients[id]!.pollHandle {
            clients[id]!.pollHandle = nil
            served.pollNotifications += 1
            replies.append(.notifyPoll(handle))
        }
    }

    func takeEvents(_ id: UInt64, maximumBytes: Int) -> [UInt8] {
        var records: [InputEvent] = []
        _ = clients[id]!.buffer.pop(into: &records, maximum: maximumBytes / InputEvent.size)
        var bytes = [UInt8](repeating: 0, count: records.count * InputEvent.size)
        bytes.withUnsafeMutableBytes { raw in
            for (index, record) in records.enumerated() {
                record.store(to: raw.baseAddress! + index * InputEvent.size)
            }
        }
        return bytes
    }

    // MARK: Removal and statistics

    /// Removes the device: readers get `ENODEV`, poll reports `POLLHUP|POLLERR`, and the
    /// node disappears from the folder (inotify sees it deleted).
    public func remove() {
        markRemoved()
        folder?.unlinkRemoved(self)
    }

    /// Set once the kernel has taken the entry out of the folder (libfuse threads).
    var unlinked: Bool {
        get { lockedPerform { isUnlinked } }
        set { lockedPerform { isUnlinked = newValue } }
    }
    var isUnlinked = false

    /// Set once the kernel has created the entry (the folder's mknod).
    var published: Bool {
        get { lockedPerform { isPublished } }
        set { lockedPerform { isPublished = newValue } }
    }
    var isPublished = false

    func markRemoved() {
        var replies: [Reply] = []
        lockedPerform {
            guard !removed else { return }
            removed = true
            for id in clients.keys { wake(id, replies: &replies) }
        }
        perform(replies)
    }

    /// Whether ``remove()`` was called.
    public var isRemoved: Bool { lockedPerform { removed } }

    /// Open files on the node.
    public var clientCount: Int { lockedPerform { clients.count } }

    /// Events each open file has not read yet, one count per file in no particular order
    /// (a test waits for another program's reader to have taken everything).
    package var unreadEventCounts: [Int] { lockedPerform { clients.values.map(\.buffer.unreadCount) } }

    /// Overflows of readers' buffers so far (each delivered a `SYN_DROPPED`).
    public var overflowCount: Int { lockedPerform { clients.values.reduce(0) { $0 + $1.buffer.overflowCount } } }

    /// Whether a reader holds `EVIOCGRAB`.
    public var isGrabbed: Bool { lockedPerform { grabbedBy != nil } }

    /// The LEDs currently on (written by readers with `EV_LED` events).
    public var ledsOn: Set<UInt16> {
        lockedPerform { Set((0..<16).map(UInt16.init).filter { state.leds.contains($0) }) }
    }

    // MARK: File operations (libfuse threads)

    /// Poll handles kept for readers' next wake-up.
    var storedPollHandles: Int { lockedPerform { clients.values.filter { $0.pollHandle != nil }.count } }

    /// Frees every kept poll handle: the folder is closing and its connection is gone, so
    /// readers still open will get no RELEASE that would free them.
    func releasePollHandles() {
        lockedPerform {
            for id in clients.keys {
                if let handle = clients[id]!.pollHandle { fuse_pollhandle_destroy(handle) }
                clients[id]!.pollHandle = nil
            }
        }
    }

    func openClient() -> UInt64 {
        lockedPerform {
            let id = nextClient
            nextClient += 1
            clients[id] = Client(buffer: EvdevClientBuffer(capacity: bufferSize))
            signalOpening()
            return id
        }
    }

    func closeClient(_ id: UInt64) {
        var replies: [Reply] = []
        lockedPerform {
            guard let client = clients.removeValue(forKey: id) else { return }
            signalOpening()
            if grabbedBy == id { grabbedBy = nil }
            if let handle = client.pollHandle { replies.append(.notifyPoll(handle)) }
            for read in client.pendingReads { replies.append(.error(read.request, EBADF)) }
        }
        perform(replies)
    }

    func read(req: fuse_req_t?, client id: UInt64, size: Int, nonblocking: Bool) {
        guard let req else { return }
        var replies: [Reply] = []
        lockedPerform {
            served.reads += 1
            guard clients[id] != nil else { return replies.append(.error(req, EBADF)) }
            if removed || clients[id]!.revoked { return replies.append(.error(req, ENODEV)) }
            if size < InputEvent.size { return replies.append(.error(req, EINVAL)) }
            if clients[id]!.buffer.hasReadableEvents {
                replies.append(.data(req, takeEvents(id, maximumBytes: size)))
            } else if nonblocking {
                replies.append(.error(req, EAGAIN))
            } else {
                clients[id]!.pendingReads.append((req, size))
            }
        }
        perform(replies)
    }

    func write(req: fuse_req_t?, client id: UInt64, bytes: UnsafeRawPointer, size: Int) {
        guard let req else { return }
        guard size >= InputEvent.size else {
            fuse_reply_err(req, EINVAL)
            return
        }
        var replies: [Reply] = []
        let status: Int32 = lockedPerform {
            guard let client = clients[id] else { return EBADF }
            if removed || client.revoked { return ENODEV }
            // A grab by another reader keeps writes from reaching the device.
            if let grabbedBy, grabbedBy != id { return 0 }
            for index in 0..<(size / InputEvent.size) {
                let record = InputEvent(bytes: bytes + index * InputEvent.size)
                if let frame = state.feed(type: record.type, code: record.code, value: record.value) {
                    deliver(frame, replies: &replies)
                }
            }
            return 0
        }
        perform(replies)
        if status != 0 {
            fuse_reply_err(req, status)
        } else {
            fuse_reply_write(req, size - size % InputEvent.size)
        }
    }

    func poll(client id: UInt64, handle: OpaquePointer?) -> UInt32 {
        lockedPerform {
            served.polls += 1
            guard clients[id] != nil else { return UInt32(POLLERR | POLLHUP) }
            if let handle {
                if removed || clients[id]!.revoked {
                    // Nothing will be notified again: the reply says POLLHUP now, and a
                    // handle kept would outlive the connection (libfuse allocates each).
                    fuse_pollhandle_destroy(handle)
                } else {
                    if let old = clients[id]!.pollHandle { fuse_pollhandle_destroy(old) }
                    clients[id]!.pollHandle = handle
                }
            }
            // The newest handle stays registered even when data is ready now: the
            // reply tells the caller about this data, the handle the next arrival.
            var mask: Int32 = removed || clients[id]!.revoked ? POLLHUP | POLLERR : POLLOUT | POLLWRNORM
            if clients[id]!.buffer.hasReadableEvents { mask |= POLLIN | POLLRDNORM }
            return UInt32(mask)
        }
    }

    // MARK: Helpers

    @discardableResult
    func lockedPerform<T>(_ body: () -> T) -> T {
        lock.locked(body)
    }

    func perform(_ replies: [Reply]) {
        for reply in replies {
            switch reply {
            case .data(let request, let data):
                data.withUnsafeBytes { raw in
                    _ = fuse_reply_buf(request, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
                }
            case .error(let request, let code):
                fuse_reply_err(request, code)
            case .notifyPoll(let handle):
                fuse_lowlevel_notify_poll(handle)
                fuse_pollhandle_destroy(handle)
            }
        }
    }
}

func bytes<T: FixedWidthInteger>(of value: T) -> [UInt8] {
    withUnsafeBytes(of: value.littleEndian) { Array($0) }
}
