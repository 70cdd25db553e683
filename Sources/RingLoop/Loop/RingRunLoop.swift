import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging
import Synchronization

/// A run loop with CFRunLoop's semantics whose wait core is io_uring: modes and common
/// modes, version-0 and port-backed sources, timers, observers, blocks, nested runs.
///
/// Each thread has at most one loop (``current``); the main thread's is ``main``. A loop
/// runs only on its own thread. Adding and removing items, signalling sources,
/// performing blocks, waking and stopping are safe from any thread: calls from other
/// threads are handed to the loop's thread and take effect at its next pass.
///
/// ```swift
/// let loop = RingRunLoop.current
/// let timer = LoopTimer(after: .milliseconds(5)) { _ in print("timer") }
/// let source = LoopSource { print("source") }
/// let observer = LoopObserver(activities: .beforeWaiting) { _, _ in print("about to sleep") }
/// loop.add(timer, to: .default)
/// loop.add(source, to: .default)
/// loop.add(observer, to: .default)
/// source.signal()
/// let result = loop.run(mode: .default, for: .milliseconds(10))   // .timedOut
/// ```
///
/// Where a Mach-port run loop takes one port message per pass, this loop hands over every
/// completion that is ready in one pass, in arrival order: one system call serves many
/// events.
public final class RingRunLoop: @unchecked Sendable {
    // @unchecked: state below "Loop thread" is confined to the loop's thread (checked by
    // `preconditionOnLoopThread`); state shared with other threads is atomic or locked.

    final class RunState: Sendable {
        let stopped = Atomic<Bool>(false)
    }

    struct BlockItem {
        var modes: [Mode]
        var block: @Sendable () -> Void
    }

    enum PendingPortEvent {
        case readiness(LoopPortSource)
        case message(LoopPortSource, LoopDoorbell.Message)
        case completion(LoopPortSource, PendingIO)
        case mainQueue

        /// Whether its source is still valid (the main queue always is).
        var sourceIsValid: Bool {
            switch self {
            case .readiness(let source), .message(let source, _), .completion(let source, _): source.isValid
            case .mainQueue: true
            }
        }
    }

    static let logger = Logger(label: "RingLoop.RunLoop")
    /// Modes a loop can hold (each item records its modes in a 64-bit mask).
    public static let maximumModeCount = 64

    // MARK: Shared with other threads

    let signal = WakeUpSignal()
    let inbox: MessageInbox
    /// `pthread_self()` of the loop's thread; 0 until the thread first uses the loop.
    let ownerThread = Atomic<UInt>(0)
    let requests = ThreadLock<[@Sendable (RingRunLoop) -> Void]>([])
    let hasRequests = Atomic<Bool>(false)
    /// Set (under `requests`' lock) once the loop's thread has exited: requests are then
    /// dropped at once, which releases what they hold (a `perform` waiting until done).
    let threadExited = Atomic<Bool>(false)
    /// Set by a callout that ran a user's callback on behalf of a source that does not
    /// count as handled by itself (a named port's transport): loop thread.
    var calloutHandledSource = false
    /// Jobs of Swift concurrency waiting for the blocks phase.
    let jobs = JobQueue()
    /// Delayed performs by target, for `cancelPerforms(target:)`.
    let targetedPerforms = ThreadLock<[ObjectIdentifier: [TargetedPerform]]>([:])
    /// The serial executor of actors isolated to the loop (set once, in `init`).
    private(set) var serialExecutor: LoopSerialExecutor!
    let currentRun = ThreadLock<RunState?>(nil)

    func swapCurrentRun(_ run: RunState?) -> RunState? {
        currentRun.withLock { current in
            let previous = current
            current = run
            return previous
        }
    }
    /// Whether this is the main thread's loop.
    public let isMain: Bool

    // MARK: Loop thread (what a pass touches is unchecked, as in `WaitCore`)

    @exclusivity(unchecked) var core: WaitCore?
    var coreError: RingError?
    /// Waits that failed in a row; reset by one that succeeds.
    var consecutiveWaitFailures = 0
    /// A run that cannot wait this many times in a row ends with ``RunResult/failed``.
    static let waitFailureLimit = 8
    /// The last error of the loop's wait (loop thread): why a run ended with
    /// ``RunResult/failed``.
    public var lastError: RingError? {
        preconditionOnLoopThread("lastError")
        return waitError
    }
    var waitError: RingError?
    /// The modes, the common ones and their items, the current one.
    var modes = LoopModes()
    @exclusivity(unchecked) var blocks: Deque<BlockItem> = []
    var readinessSources: [PortID: LoopPortSource] = [:]
    var doorbellSources: [LoopDoorbell: LoopPortSource] = [:]
    var orphanDoorbellMessages: [LoopDoorbell: Deque<LoopDoorbell.Message>] = [:]
    /// Completion I/O: operations in flight, channels busy.
    @exclusivity(unchecked) var io = LoopIOOperations()
    @exclusivity(unchecked) var pendingPortEvents: Deque<PendingPortEvent> = []
    var timerSequence: UInt64 = 0
    /// Arrays a pass reuses.
    @exclusivity(unchecked) var scratch = PassScratch()
    /// Jobs enqueued on the loop's own thread, which need no lock.
    @exclusivity(unchecked) var localJobs: [JobQueue.Entry] = []
    var localModedJobs = 0
    @exclusivity(unchecked) var keptPortEvents: Deque<PendingPortEvent> = []
    /// Set while a ``LoopStallWatchdog`` watches the loop: callouts are published to it.
    var calloutProbe: CalloutProbe?
    var mainQueuePort: PortID?
    var mainQueuePending = false
    var inMainQueueCallout = false
    /// How early the loop wakes before a precise-mode timer, to spin to its fire date.
    /// By default it follows the wake-up lateness this loop observes (twice the 99th
    /// percentile of how late its sleeps end, 50 µs to 2 ms; 200 µs until it has seen
    /// enough), so precise timers stay on time on a machine that wakes slowly and cost
    /// little spinning on one that wakes fast. Setting it fixes it. Loop thread.
    public var preciseSpinWindow: Duration {
        get {
            preconditionOnLoopThread("preciseSpinWindow")
            return .nanoseconds(Int64(clamping: preciseSpinWindowNanoseconds))
        }
        set {
            preconditionOnLoopThread("preciseSpinWindow")
            spin.fixedPreciseWindow = UInt64(max(0, newValue.nanosecondsClamped))
        }
    }
    var preciseSpinWindowNanoseconds: UInt64 { spin.fixedPreciseWindow ?? spin.wakeLateness.window }
    /// When and how long the loop spins instead of sleeping (loop thread).
    var spin = SpinPolicy()
    /// Nanoseconds spent spinning to precise timers' fire dates, and fires that spun (loop thread).
    package var preciseSpin: (nanoseconds: UInt64, fires: UInt64) { spin.preciseSpin }
    /// The 99th percentile of how late this loop's sleeps end, as last estimated (loop thread).
    package var observedWakeLateness99: Duration { .nanoseconds(Int64(clamping: spin.wakeLateness.lateness99)) }

    /// How long the loop polls for work before it goes to sleep (zero, the default:
    /// it sleeps at once).
    ///
    /// A sleeping thread pays the machine's wake-up latency when work arrives (about
    /// 20–25 µs on the virtual machine the benchmarks ran on) and its sender pays a
    /// system call. A loop that polls shared memory for a while first catches work that
    /// comes within the window in about a microsecond, with no system call on either
    /// side — at the price of a busy core for up to this long each time the loop runs
    /// out of work. For loops that must react fastest to a steady stream (a robot's
    /// control loop, a test rig); leave it at zero on battery or shared machines.
    /// Timers still fire on time: the poll ends at the next timer's deadline. Set on the
    /// loop's thread.
    public var spinBeforeSleeping: Duration {
        get {
            preconditionOnLoopThread("spinBeforeSleeping")
            return .nanoseconds(Int64(clamping: spin.beforeSleepingNanoseconds))
        }
        set {
            preconditionOnLoopThread("spinBeforeSleeping")
            spin.beforeSleepingNanoseconds = UInt64(max(0, newValue.nanosecondsClamped))
        }
    }

    /// Polls before sleeping only while it pays: up to `window`, only while work has been
    /// arriving less than `window` apart (a running average of the gaps between wake-ups
    /// that found work), and spending at most `cpuBudget` of a core per second polling
    /// (0.1: 100 ms a second). Replaces ``spinBeforeSleeping`` while set; `nil` (the
    /// default) turns it off. A steady stream gets the spinning loop's latency, an idle or
    /// sparse one costs nothing, a flood is capped by the budget. Loop thread.
    public var adaptiveSpinBeforeSleeping: (window: Duration, cpuBudget: Double)? {
        get {
            preconditionOnLoopThread("adaptiveSpinBeforeSleeping")
            return spin.adaptive.map { (.nanoseconds(Int64(clamping: $0.window)), $0.budget) }
        }
        set {
            preconditionOnLoopThread("adaptiveSpinBeforeSleeping")
            spin.adaptive = newValue.map {
                AdaptiveSpin(window: UInt64(max(0, $0.window.nanosecondsClamped)), budget: min(1, max(0, $0.cpuBudget)))
            }
        }
    }

    /// Passes through the loop since it was created (loop thread).
    public var passCount: UInt64 {
        preconditionOnLoopThread("passCount")
        return passes
    }
    var passes: UInt64 = 0

    init(isMain: Bool) {
        self.isMain = isMain
        self.inbox = MessageInbox(signal: signal)
        // The default mode exists from the start, as in CFRunLoop.
        _ = modeState(.default, create: true)
        serialExecutor = LoopSerialExecutor(loop: self)
    }

    deinit {
        inbox.close()
    }

    // MARK: Loops per thread

    static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            let loop = Unmanaged<RingRunLoop>.fromOpaque(pointer)
            loop.takeUnretainedValue().finalizeOnThreadExit()
            loop.release()
        }
        return key
    }()

    static let mainStorage = ThreadLock<RingRunLoop?>(nil)

    /// The calling thread's loop, created on first use.
    public static var current: RingRunLoop {
        if let pointer = pthread_getspecific(currentKey) {
            return Unmanaged<RingRunLoop>.fromOpaque(pointer).takeUnretainedValue()
        }
        let loop = ringloop_is_main_thread() != 0 ? main : RingRunLoop(isMain: false)
        loop.bindOwner()
        pthread_setspecific(currentKey, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// The main thread's loop. Any thread may get it and add items, perform blocks, wake
    /// or stop it; only the main thread runs it. While it runs on the main thread in a
    /// common mode it also drains `DispatchQueue.main`, so `@MainActor` work and
    /// `DispatchQueue.main.async` blocks run, as under Foundation's `RunLoop.main`.
    public static var main: RingRunLoop {
        let loop = mainStorage.withLock { storage in
            if let loop = storage { return loop }
            let loop = RingRunLoop(isMain: true)
            storage = loop
            return loop
        }
        if ringloop_is_main_thread() != 0, loop.ownerThread.load(ordering: .acquiring) == 0 {
            loop.bindOwner()
        }
        return loop
    }

    func bindOwner() {
        _ = ownerThread.compareExchange(
            expected: 0, desired: UInt(pthread_self()), ordering: .acquiringAndReleasing)
    }

    /// Whether the calling thread is the loop's thread.
    public var isOnLoopThread: Bool {
        ownerThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Traps unless called on the loop's thread, like swift-nio's
    /// `preconditionInEventLoop`: for the members of your own types that only the loop's
    /// thread may use. ``LoopBound`` checks its value this way.
    public func preconditionOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        precondition(isOnLoopThread, "must be called on the loop's own thread", file: file, line: line)
    }

    package func preconditionOnLoopThread(_ what: @autoclosure () -> String) {
        precondition(isOnLoopThread, "\(what()) must be called on the loop's own thread")
    }

    /// Traps unless called on the loop's thread, with `message` as it is.
    package func preconditionOnLoopThread(explaining message: @autoclosure () -> String) {
        precondition(isOnLoopThread, message())
    }

    /// The loop's thread is exiting: items hold their loop strongly (as in CFRunLoop), so
    /// unbind them all and drop the modes, letting the loop and its items go away with
    /// the thread. The main loop lives as long as the process and is left alone.
    func finalizeOnThreadExit() {
        guard !isMain else { return }
        func release(_ item: LoopItem) {
            item.modeMask = 0
            item.unbindIfUnused()
        }
        for state in modes.list {
            state.sources0.forEach(release)
            state.sources1.values.forEach(release)
            state.observers.forEach(release)
            state.timers.forEachTimer(release)
        }
        for item in modes.commonItems.values { release(item.membership) }
        modes.table = [:]
        modes.list = []
        modes.commonItems = [:]
        blocks = []
        if !io.operations.isEmpty || !pendingPortEvents.isEmpty || !io.busyChannels.isEmpty {
            // Close the ring before freeing what operations in flight read or write (a
            // provided-buffer ring may hold the ring object itself a little longer).
            core?.ring.close()
            core = nil
            dropIOOperations()
        }
        pendingPortEvents = []
        keptPortEvents = []
        readinessSources = [:]
        doorbellSources = [:]
        orphanDoorbellMessages = [:]
        targetedPerforms.withLock { $0 = [:] }
        // Requests the thread will never run (they may hold objects that hold the loop).
        requests.withLock {
            threadExited.store(true, ordering: .releasing)
            $0 = []
        }
        inbox.close()
    }

    // MARK: Waking and stopping

    /// Wakes the loop if it sleeps, or makes its next wait return at once (coalesced:
    /// one system call per sleep at most). Safe from any thread.
    public func wakeUp() { signal.wakeUp() }

    /// Ends the innermost run in progress (it returns ``RunResult/stopped``); no effect
    /// when the loop is not running. Safe from any thread.
    public func stop() {
        currentRun.withLock { $0?.stopped.store(true, ordering: .releasing) }
        signal.wakeUp()
    }

    /// Times the loop slept in the kernel (woken by a completion, a wake-up or a
    /// deadline); polls that did not block are not counted. Loop thread.
    package var sleepCount: UInt64 { core?.sleepCount ?? 0 }

    /// Calls into the kernel through the loop's ring. Loop thread.
    package var enterCount: UInt64 { core?.ring.enterCount ?? 0 }

    /// Submission entries the loop's ring handed to the kernel. Loop thread.
    package var submittedEntryCount: UInt64 { core?.ring.submittedEntryCount ?? 0 }

    /// Whether the loop sleeps in the kernel right now. Safe from any thread.
    public var isWaiting: Bool { signal.isSleeping }

    // MARK: Emptiness

    var servesMainQueueHere: Bool {
        isMain && !inMainQueueCallout && ringloop_is_main_thread_cached()
    }

    func isEmpty(_ state: ModeState) -> Bool {
        if servesMainQueueHere, state.isCommon { return false }
        if state.hasSourcesOrTimers { return false }
        for item in blocks where blockMatches(item, state) { return false }
        if hasRunnableJobs(state) { return false }
        return true
    }
}

/// The main thread's `pthread_self()`, once a call on the main thread has seen it (0 before).
private let knownMainThread = Atomic<UInt>(0)

/// Whether the calling thread is the main thread. One system call until the main thread
/// has been seen, a load after.
private func ringloop_is_main_thread_cached() -> Bool {
    let me = UInt(pthread_self())
    let known = knownMainThread.load(ordering: .relaxed)
    if known != 0 { return known == me }
    if ringloop_is_main_thread() != 0 {
        knownMainThread.store(me, ordering: .relaxed)
        return true
    }
    return false
}
