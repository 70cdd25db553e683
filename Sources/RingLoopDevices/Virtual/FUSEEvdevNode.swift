import CFuse
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// One `eventN` node of a ``FUSEDeviceFolder``: a virtual evdev device whose events you
/// send and which any process reads like a kernel device.
public final class FUSEEvdevNode: @unchecked Sendable {
    // @unchecked: every mutable field is in `guarded` (a NodeState behind a lock), the
    // rest is constant; libfuse replies are made after unlocking, so no libfuse thread
    // ever waits on a reader or on this lock for long.

    /// The node's file name (`event0`…).
    public let name: String
    /// The full path of the node.
    public let path: String
    /// What the device says about itself.
    public let deviceDescription: InputDeviceDescription
    let inode: UInt64
    private weak var folder: FUSEDeviceFolder?
    /// The node's whole mutable state, one lock around it (`ThreadLock` rather than
    /// `Mutex`, for ThreadSanitizer's sake: see ``ThreadLock``).
    let guarded: ThreadLock<NodeState>
    let bufferSize: Int
    /// A pipe written at every open and close and at a reader's first read or poll (a
    /// byte, never blocking), read by ``waitForReaderChange(timeout:)``.
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
    public var servedRequests: ServedRequests { guarded.withLock { $0.served } }

    /// What programs asked the device's force feedback to do, in order (uploads, plays,
    /// stops, erasures, gain): a test rig asserts an app's rumble with it. The node takes
    /// `EVIOCSFF` rumbles, `EV_FF` writes and `EVIOCRMFF` where its description has
    /// `FF_RUMBLE` (up to 16 effects, as the kernel's memoryless drivers).
    public var forceFeedbackRequests: [ForceFeedbackRequest] { guarded.withLock { $0.forceFeedback.requests } }

    /// The rumbles playing now, by id (played and neither stopped nor erased since; the
    /// node does not time them out).
    public var rumblesPlaying: [Int16: RumbleEffect] {
        guarded.withLock { node in node.effects.filter { node.playing.contains($0.key) } }
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
        self.guarded = ThreadLock(NodeState(device: EvdevDeviceState(description: description, appliesFuzz: appliesFuzz)))
        self.bufferSize = bufferSize
    }

    deinit {
        if openings.read >= 0 { close(openings.read) }
        if openings.write >= 0 { close(openings.write) }
    }

    fileprivate func signalOpening() {
        var byte: UInt8 = 1
        _ = Glibc.write(openings.write, &byte, 1)
    }

    /// Marks the reader at `index` as one that asked for events, waking a wait for readers
    /// the first time.
    fileprivate func noteAsked(_ node: inout NodeState, at index: Dictionary<UInt64, Client>.Index) {
        guard !node.clients.values[index].hasAskedForEvents else { return }
        node.clients.values[index].hasAskedForEvents = true
        signalOpening()
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
        let alive = guarded.withLock { node -> Bool in
            if node.removed { return false }
            for event in events {
                if let frame = node.device.feed(type: event.type, code: event.code, value: event.value) {
                    node.deliver(frame, replies: &replies)
                }
            }
            return true
        }
        perform(replies)
        if !alive { throw .removed(path) }
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
        get { guarded.withLock { $0.unlinked } }
        set { guarded.withLock { $0.unlinked = newValue } }
    }

    /// Set once the kernel has created the entry (the folder's mknod).
    var published: Bool {
        get { guarded.withLock { $0.published } }
        set { guarded.withLock { $0.published = newValue } }
    }

    func markRemoved() {
        var replies: [Reply] = []
        guarded.withLock { node in
            guard !node.removed else { return }
            node.removed = true
            node.forEachClient { node, index in node.wake(at: index, replies: &replies) }
        }
        perform(replies)
    }

    /// Whether ``remove()`` was called.
    public var isRemoved: Bool { guarded.withLock { $0.removed } }

    /// Open files on the node.
    public var clientCount: Int { guarded.withLock { $0.clients.count } }

    /// Open files on the node whose readers have asked for events (read or polled it) —
    /// the readers a replay waits for. A reader counts from its first read or poll, not
    /// its open: between the two it sets its clock, which flushes what it had queued into
    /// a `SYN_DROPPED` (as the kernel's evdev does), and reads the description. (A reader
    /// that polls first and sets its clock after can still lose what came between.)
    /// A file revoked (`EVIOCREVOKE`) is not counted: it gets no more events.
    public var readerCount: Int { guarded.withLock { $0.clients.values.count { $0.hasAskedForEvents && !$0.revoked } } }

    /// Events each open file has not read yet, one count per file in no particular order
    /// (a test waits for another program's reader to have taken everything).
    package var unreadEventCounts: [Int] { guarded.withLock { $0.clients.values.map(\.buffer.unreadCount) } }

    /// Events the open files' reads have taken so far, all files together (a test waits
    /// for a reader to have counted as many as it was given).
    package var eventsTaken: Int { guarded.withLock { $0.clients.values.reduce(0) { $0 + $1.eventsTaken } } }

    /// Overflows of readers' buffers so far (each delivered a `SYN_DROPPED`).
    public var overflowCount: Int { guarded.withLock { $0.clients.values.reduce(0) { $0 + $1.buffer.overflowCount } } }

    /// Whether a reader holds `EVIOCGRAB`.
    public var isGrabbed: Bool { guarded.withLock { $0.grabbedBy != nil } }

    /// The LEDs currently on (written by readers with `EV_LED` events).
    public var ledsOn: Set<UInt16> {
        guarded.withLock { node in Set((0..<16).map(UInt16.init).filter { node.device.leds.contains($0) }) }
    }

    // MARK: File operations (libfuse threads)

    /// Poll handles kept for readers' next wake-up.
    var storedPollHandles: Int { guarded.withLock { $0.clients.values.filter { $0.pollHandle != nil }.count } }

    /// Frees every kept poll handle: the folder is closing and its connection is gone, so
    /// readers still open will get no RELEASE that would free them.
    func releasePollHandles() {
        guarded.withLock { node in
            node.forEachClient { node, index in
                if let handle = node.clients.values[index].pollHandle { fuse_pollhandle_destroy(handle) }
                node.clients.values[index].pollHandle = nil
            }
        }
    }

    func openClient() -> UInt64 {
        guarded.withLock { node in
            let id = node.nextClient
            node.nextClient += 1
            node.clients[id] = Client(buffer: EvdevClientBuffer(capacity: bufferSize))
            signalOpening()
            return id
        }
    }

    func closeClient(_ id: UInt64) {
        var replies: [Reply] = []
        guarded.withLock { node in
            guard let client = node.clients.removeValue(forKey: id) else { return }
            signalOpening()
            if node.grabbedBy == id { node.grabbedBy = nil }
            if let handle = client.pollHandle { replies.append(.notifyPoll(handle)) }
            for read in client.pendingReads { replies.append(.error(read.request, EBADF)) }
        }
        perform(replies)
    }

    func read(req: fuse_req_t?, client id: UInt64, size: Int, nonblocking: Bool) {
        guard let req else { return }
        var replies: [Reply] = []
        guarded.withLock { node in
            node.served.reads += 1
            // A reader that is gone (its file released) has no buffer: EBADF.
            guard let index = node.clients.index(forKey: id) else { return replies.append(.error(req, EBADF)) }
            noteAsked(&node, at: index)
            if node.removed || node.clients.values[index].revoked { return replies.append(.error(req, ENODEV)) }
            if size < InputEvent.size { return replies.append(.error(req, EINVAL)) }
            if node.clients.values[index].buffer.hasReadableEvents {
                replies.append(.data(req, node.clients.values[index].takeEvents(maximumBytes: size)))
            } else if nonblocking {
                replies.append(.error(req, EAGAIN))
            } else {
                node.clients.values[index].pendingReads.append((req, size))
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
        let status: Int32 = guarded.withLock { node in
            guard let client = node.clients[id] else { return EBADF }
            if node.removed || client.revoked { return ENODEV }
            // A grab by another reader keeps writes from reaching the device.
            if let grabbedBy = node.grabbedBy, grabbedBy != id { return 0 }
            for index in 0..<(size / InputEvent.size) {
                let record = InputEvent(bytes: bytes + index * InputEvent.size)
                // Force feedback goes to the device, not to its readers (the kernel's
                // INPUT_PASS_TO_DEVICE): play, stop, gain.
                if record.type == Evdev.EV_FF {
                    node.forceFeedbackWrite(code: record.code, value: record.value, hasRumble: hasRumble)
                    continue
                }
                if let frame = node.device.feed(type: record.type, code: record.code, value: record.value) {
                    node.deliver(frame, replies: &replies)
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
        guarded.withLock { node in
            node.served.polls += 1
            guard let index = node.clients.index(forKey: id) else {
                if let handle { fuse_pollhandle_destroy(handle) }
                return UInt32(POLLERR | POLLHUP)
            }
            noteAsked(&node, at: index)
            let hungUp = node.removed || node.clients.values[index].revoked
            if let handle {
                if hungUp {
                    // Nothing will be notified again: the reply says POLLHUP now, and a
                    // handle kept would outlive the connection (libfuse allocates each).
                    fuse_pollhandle_destroy(handle)
                } else {
                    if let old = node.clients.values[index].pollHandle { fuse_pollhandle_destroy(old) }
                    node.clients.values[index].pollHandle = handle
                }
            }
            // The newest handle stays registered even when data is ready now: the
            // reply tells the caller about this data, the handle the next arrival.
            var mask: Int32 = hungUp ? POLLHUP | POLLERR : POLLOUT | POLLWRNORM
            if node.clients.values[index].buffer.hasReadableEvents { mask |= POLLIN | POLLRDNORM }
            return UInt32(mask)
        }
    }

    // MARK: Helpers

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
