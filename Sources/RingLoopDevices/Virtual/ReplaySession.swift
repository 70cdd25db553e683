import RingLoop
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Recordings hosted as virtual devices and replayed into them: what `ringloop replay`,
/// `monitor` and `demo` do with a recording, as a library.
///
/// `init` hosts every device of every file (a FUSE folder is mounted, or uinput devices
/// made), so their nodes can be handed to readers before anything is sent. ``start(progress:finished:)``
/// then waits for readers if asked (``Configuration/readers``), replays every file at
/// once — the devices of one file on that file's clock, each file from its own start —
/// and reports progress at most once per ``Configuration/progressInterval``. ``cancel()``
/// ends it at any moment; ``close()`` removes the devices and unmounts.
///
/// ```swift
/// let session = try ReplaySession(files: [try Recording.loadAll(contentsOf: "touchpad.evemu")])
/// print(session.nodePaths)
/// session.start(progress: { print("\($0.framesSent) of \($0.frameCount)") })
/// let outcome = session.wait()
/// session.close()
/// ```
///
/// Every failure — a device that cannot be made, a frame that cannot be sent, readers that
/// never came — is in the ``Outcome`` or thrown; none is dropped.
///
/// Threading: `start`, `cancel`, `wait` and `close` may be called from any thread. The
/// replay runs on threads of its own (one that coordinates, one per file); `progress` and
/// `finished` are called on the coordinating thread.
public final class ReplaySession: Sendable {
    /// How a session hosts and replays.
    public struct Configuration: Sendable, Hashable {
        /// uinput or FUSE; `nil` for uinput where usable, FUSE otherwise.
        public var backend: VirtualDeviceBackend?
        /// The FUSE folder to mount (default: `/tmp/ringloop-replay-PID`). Refused if
        /// something is mounted there; removed at ``ReplaySession/close()`` only if the
        /// session created it.
        public var folderPath: String?
        /// FUSE only: events each reader's buffer holds (default: the kernel's choice).
        public var bufferSize: Int?
        /// Recorded pace, scaled, or as fast as possible.
        public var speed: ReplaySpeed
        /// Readers each node must have before the first frame is sent (0: none): on FUSE
        /// nodes, opens that have read or polled (``FUSEEvdevNode/readerCount``).
        public var readers: Int
        /// How long to wait for ``readers`` (`nil`: until cancelled).
        public var readersTimeout: Duration?
        /// A pause before the first frame (after the readers, if any, are there).
        public var startDelay: Duration
        /// How long the devices stay at least after the last frame before the session
        /// finishes, so readers take the last frames before the devices go (a removed
        /// device's unread events are lost, as a kernel device's are). On FUSE nodes they
        /// then stay until every open reader has taken every event (10 s at most: a reader
        /// that stopped reading does not hold them longer), however slow the readers are.
        /// Zero: the session finishes as soon as the last frame is written.
        public var settleTime: Duration
        /// The least time between two progress reports (at least a second).
        public var progressInterval: Duration

        /// A configuration; every parameter has the default documented on its property.
        public init(
            backend: VirtualDeviceBackend? = nil, folderPath: String? = nil, bufferSize: Int? = nil,
            speed: ReplaySpeed = .recorded, readers: Int = 0, readersTimeout: Duration? = nil, startDelay: Duration = .zero,
            settleTime: Duration = .milliseconds(200), progressInterval: Duration = .seconds(1)
        ) {
            self.backend = backend
            self.folderPath = folderPath
            self.bufferSize = bufferSize
            self.speed = speed
            self.readers = readers
            self.readersTimeout = readersTimeout
            self.startDelay = startDelay
            self.settleTime = settleTime
            self.progressInterval = progressInterval
        }
    }

    /// Where a session is.
    public enum Phase: Sendable, Hashable {
        /// Waiting until every node has ``Configuration/readers`` readers: `ready` nodes
        /// have them so far.
        case waitingForReaders(ready: Int, nodes: Int)
        /// Sending frames.
        case replaying
    }

    /// A progress report.
    public struct Progress: Sendable, Hashable {
        /// Where the session is.
        public var phase: Phase
        /// Frames sent so far, over every device.
        public var framesSent: Int
        /// Frames of every device.
        public var frameCount: Int
    }

    /// How a session ended.
    public struct Outcome: Sendable, Hashable {
        /// Frames sent, over every device.
        public var framesSent: Int
        /// Frames of every device.
        public var frameCount: Int
        /// Whether ``ReplaySession/cancel()`` ended it before every frame was sent.
        public var cancelled: Bool
        /// What went wrong, in the order it happened (empty: nothing).
        public var failures: [ReplaySessionError]
    }

    /// The most devices one session hosts. Each FUSE node keeps its description and a
    /// buffer per reader; each uinput device a descriptor (the command raises its
    /// descriptor limit to match).
    public static let maximumDevices = 4096

    /// The backend the devices were made with.
    public let backend: VirtualDeviceBackend
    /// The hosted devices, per file, in the order of the recordings.
    public let devices: [[any VirtualInputDevice]]
    /// Frames of every device.
    public let frameCount: Int
    /// Where FUSE nodes appear (when the backend is FUSE).
    public var folderPath: String { host.folderPath }
    /// Every device's node, in the order of ``devices``.
    public var nodePaths: [String] { devices.joined().map(\.nodePath) }

    private let host: VirtualDeviceHost
    private let recordings: [[Recording]]
    private let configuration: Configuration
    private let state = ThreadLock(SessionState())
    private let framesSent = Atomic<Int>(0)
    private let cancelled = Atomic<Bool>(false)
    /// Wakes the coordinating thread: a file's replay ended, or ``cancel()``.
    private let wakeUp = SessionLatch(resets: true)
    private let done = SessionLatch(resets: false)

    struct SessionState {
        var coordinator: PosixThread?
        var outcome: Outcome?
        var closed = false
    }

    /// Hosts every device of `files` (each an array of the recordings of one file, whose
    /// devices share its clock).
    /// - Throws: ``ReplaySessionError``: a recording without a description, more devices
    ///   than ``maximumDevices``, no backend, a folder that cannot be mounted, a device
    ///   that cannot be made. Devices made before the failure are removed.
    public init(files: [[Recording]], configuration: Configuration = Configuration()) throws(ReplaySessionError) {
        let count = files.reduce(0) { $0 + $1.count }
        guard count <= Self.maximumDevices else { throw .tooManyDevices(count: count, limit: Self.maximumDevices) }
        for (fileIndex, file) in files.enumerated() {
            for (deviceIndex, recording) in file.enumerated() where recording.description == nil {
                throw .noDescription(file: fileIndex, device: deviceIndex)
            }
        }
        let host: VirtualDeviceHost
        do {
            host = try VirtualDeviceHost(
                backend: configuration.backend, folderPath: configuration.folderPath ?? "/tmp/ringloop-replay-\(getpid())")
        } catch {
            throw .host(error)
        }
        var devices: [[any VirtualInputDevice]] = []
        do {
            for file in files {
                var made: [any VirtualInputDevice] = []
                for recording in file {
                    made.append(try host.create(recording.description!, bufferSize: configuration.bufferSize, forReplay: true))
                }
                devices.append(made)
            }
        } catch {
            host.close()
            throw .host(error)
        }
        self.host = host
        self.backend = host.backend
        self.devices = devices
        self.recordings = files
        self.configuration = configuration
        frameCount = files.joined().reduce(0) { $0 + Replay.frames(of: $1).count }
    }

    deinit { close() }

    /// Starts the replay on threads of its own and returns. Calling it again does nothing.
    /// - Parameters:
    ///   - progress: Called at most once per ``Configuration/progressInterval``, while
    ///     waiting for readers and while replaying (a replay shorter than the interval
    ///     reports nothing).
    ///   - finished: Called once, with the outcome, after the settle time.
    public func start(
        progress: (@Sendable (Progress) -> Void)? = nil, finished: (@Sendable (Outcome) -> Void)? = nil
    ) {
        state.withLock { current in
            guard current.coordinator == nil, !current.closed else { return }
            current.coordinator = PosixThread.start(name: "ringloop-replay") { [self] in
                let outcome = run(progress: progress)
                finished?(outcome)
                state.withLock { $0.outcome = outcome }
                done.set()
            }
        }
    }

    /// Ends the session soon, from any thread: waiting for readers stops, no further
    /// frame is sent, and the settle time is skipped.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        wakeUp.set()
    }

    /// Waits until the session has finished (started or not: a session never started
    /// finishes at once, with nothing sent) and returns how it ended.
    @discardableResult
    public func wait() -> Outcome {
        let started = state.withLock { $0.coordinator != nil || $0.outcome != nil }
        guard started else {
            return Outcome(framesSent: 0, frameCount: frameCount, cancelled: cancelled.load(ordering: .acquiring), failures: [])
        }
        _ = done.wait(until: nil)
        return state.withLock { $0.outcome! }
    }

    /// Cancels the replay, waits for it to end, removes every device and unmounts the
    /// folder. Safe to call twice.
    public func close() {
        let coordinator = state.withLock { state -> PosixThread? in
            defer { state.closed = true }
            return state.closed ? nil : state.coordinator
        }
        cancel()
        if let coordinator {
            _ = done.wait(until: nil)
            coordinator.join()
            // The thread's body holds the session: dropping the thread ends that cycle (it
            // leaked a session closed after a cancelled replay: LeakSanitizer failed serve).
            state.withLock { $0.coordinator = nil }
        }
        host.close()
    }

    // MARK: The replay's own thread

    private var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    private func run(progress: (@Sendable (Progress) -> Void)?) -> Outcome {
        var failures: [ReplaySessionError] = []
        let reporter = ProgressReporter(interval: max(configuration.progressInterval, .seconds(1)), report: progress)
        if configuration.readers > 0 {
            if let failure = waitForReaders(reporter) {
                failures.append(failure)
                return outcome(failures)
            }
        }
        if configuration.startDelay > .zero, wakeUp.wait(until: .now + configuration.startDelay), isCancelled {
            return outcome(failures)
        }
        // One thread per file, started together: each file's devices on its clock.
        let errors = ThreadLock<[ReplaySessionError]>([])
        let finishedFiles = Atomic<Int>(0)
        let speed = configuration.speed
        let threads = zip(recordings, devices).map { file, made in
            let pairs = SendablePairs(Array(zip(file, made)))
            return PosixThread.start(name: "ringloop-replay-file") { [self] in
                do throws(VirtualDeviceError) {
                    try Replay.play(
                        pairs.value.map { (recording: $0.0, device: $0.1) }, timeline: .sharedClock, speed: speed,
                        progress: { _, _ in self.framesSent.add(1, ordering: .relaxed) },
                        shouldStop: { self.isCancelled })
                } catch {
                    errors.withLock { $0.append(.send(error)) }
                }
                finishedFiles.add(1, ordering: .releasing)
                self.wakeUp.set()
            }
        }
        while finishedFiles.load(ordering: .acquiring) < threads.count {
            _ = wakeUp.wait(until: reporter.nextReport)
            reporter.offer(Progress(phase: .replaying, framesSent: sent, frameCount: frameCount))
        }
        for thread in threads { thread.join() }
        failures += errors.withLock { $0 }
        if !isCancelled, configuration.settleTime > .zero {
            _ = wakeUp.wait(until: .now + configuration.settleTime)
            waitForReadersToTakeEverything()
        }
        return outcome(failures)
    }

    /// The longest a session waits after its settle time for FUSE readers to take the last
    /// frames (``Configuration/settleTime``).
    static let readersCatchUpBound = Duration.seconds(10)

    /// Waits until every open reader of the FUSE nodes has taken every event its node
    /// holds for it, at most ``readersCatchUpBound`` (or until cancelled). Reads are not
    /// announced: looks again every 10 ms, as ``waitForReaders(_:)`` does for opens.
    private func waitForReadersToTakeEverything() {
        let nodes = devices.joined().compactMap { $0 as? FUSEEvdevNode }
        let limit = MonotonicInstant.now + Self.readersCatchUpBound
        while !isCancelled, MonotonicInstant.now < limit, nodes.contains(where: { $0.unreadEventCounts.contains { $0 > 0 } }) {
            _ = wakeUp.wait(until: min(limit, .now + .milliseconds(10)))
        }
    }

    private var sent: Int { framesSent.load(ordering: .relaxed) }

    private func outcome(_ failures: [ReplaySessionError]) -> Outcome {
        Outcome(framesSent: sent, frameCount: frameCount, cancelled: isCancelled && sent < frameCount, failures: failures)
    }

    /// Waits until every node has the readers asked for; the failure if they never come.
    private func waitForReaders(_ reporter: ProgressReporter) -> ReplaySessionError? {
        let wanted = configuration.readers
        let all = Array(devices.joined())
        let deadline = configuration.readersTimeout.map { MonotonicInstant.now + $0 }
        while !isCancelled {
            var ready = 0
            for device in all {
                guard let count = Self.readerCount(of: device) else { return .readersUnknown(backend: backend) }
                if count >= wanted { ready += 1 }
            }
            if ready == all.count { return nil }
            if let deadline, MonotonicInstant.now >= deadline {
                return .readersTimedOut(ready: ready, nodes: all.count, readers: wanted)
            }
            reporter.offer(Progress(phase: .waitingForReaders(ready: ready, nodes: all.count), framesSent: 0, frameCount: frameCount))
            // Opens are not announced: look again in 10 ms (or at once when cancelled).
            let next = MonotonicInstant.now + .milliseconds(10)
            _ = wakeUp.wait(until: deadline.map { min($0, next) } ?? next)
        }
        return nil
    }

    /// How many readers read `device`'s node, where the backend can tell: a FUSE node
    /// counts the opens that have read or polled it; the kernel does not say how many
    /// have a uinput device's node open (`nil`).
    static func readerCount(of device: any VirtualInputDevice) -> Int? {
        (device as? FUSEEvdevNode)?.readerCount
    }
}

/// Progress reports no closer together than an interval.
private final class ProgressReporter {
    let interval: Duration
    let report: (@Sendable (ReplaySession.Progress) -> Void)?
    private var reportDue: MonotonicInstant

    init(interval: Duration, report: (@Sendable (ReplaySession.Progress) -> Void)?) {
        self.interval = interval
        self.report = report
        reportDue = .now + interval
    }

    /// When the next report is due: the deadline of a wait that reports; `nil` (wait until
    /// woken) without a callback. A deadline without a callback never moved, and every
    /// wait after it returned at once: `serve`'s replay used a whole core.
    var nextReport: MonotonicInstant? { report == nil ? nil : reportDue }

    func offer(_ progress: ReplaySession.Progress) {
        guard let report, MonotonicInstant.now >= reportDue else { return }
        reportDue = .now + interval
        report(progress)
    }
}

/// Recordings paired with their devices, handed to the one thread that replays them.
private final class SendablePairs: @unchecked Sendable {
    // @unchecked: recordings are values and devices are Sendable; the array is only read.
    let value: [(Recording, any VirtualInputDevice)]
    init(_ value: [(Recording, any VirtualInputDevice)]) { self.value = value }
}

/// A flag threads wait on with a deadline (a pthread condition on CLOCK_MONOTONIC):
/// setting it wakes every waiter at once.
final class SessionLatch: @unchecked Sendable {
    // @unchecked: `isSet` is only touched under `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var isSet = false
    /// Whether a wait that saw the flag clears it (a wake-up), or it stays (an end).
    private let resets: Bool

    init(resets: Bool) {
        self.resets = resets
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func set() {
        pthread_mutex_lock(mutex)
        isSet = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Waits until the flag is set or `deadline` (`nil`: no limit) passes; whether it was
    /// set. A latch that resets clears the flag it saw, so the next wait waits.
    func wait(until deadline: MonotonicInstant?) -> Bool {
        pthread_mutex_lock(mutex)
        defer {
            if resets { isSet = false }
            pthread_mutex_unlock(mutex)
        }
        while !isSet {
            if let deadline {
                let nanoseconds = deadline.nanoseconds
                var time = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
                if pthread_cond_timedwait(condition, mutex, &time) == ETIMEDOUT { break }
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
        return isSet
    }
}

extension ReplaySession: EvdevNodePlayer {
    /// The folder of the session's nodes: its FUSE folder, or `/dev/input` for uinput
    /// devices.
    public var deviceFolderPath: String { backend == .fuse ? folderPath : "/dev/input" }

    /// The names of the session's nodes (`event3`…), one per device of every file.
    public var playedNodeNames: Set<String> {
        Set(nodePaths.map { path in path.split(separator: "/").last.map(String.init) ?? path })
    }

    /// Starts the replay (``start(progress:finished:)``) and calls `finished` when it has
    /// ended; the outcome is ``wait()``'s.
    public func startPlaying(finished: @escaping @Sendable () -> Void) {
        start(finished: { _ in finished() })
    }
}
