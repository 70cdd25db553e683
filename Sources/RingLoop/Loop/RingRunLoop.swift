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

    enum Item: Sendable {
        case source(LoopSource)
        case portSource(LoopPortSource)
        case observer(LoopObserver)
        case timer(LoopTimer)

        var identity: ObjectIdentifier {
            switch self {
            case .source(let item): ObjectIdentifier(item)
            case .portSource(let item): ObjectIdentifier(item)
            case .observer(let item): ObjectIdentifier(item)
            case .timer(let item): ObjectIdentifier(item)
            }
        }

        var membership: LoopItem {
            switch self {
            case .source(let item): item.membership
            case .portSource(let item): item.membership
            case .observer(let item): item.membership
            case .timer(let item): item.membership
            }
        }

        var isValid: Bool {
            switch self {
            case .source(let item): item.isValid
            case .portSource(let item): item.isValid
            case .observer(let item): item.isValid
            case .timer(let item): item.isValid
            }
        }
    }

    final class RunState: Sendable {
        let stopped = Atomic<Bool>(false)
    }

    struct BlockItem {
        var modes: [Mode]
        var block: @Sendable () -> Void
    }

    enum PendingPortEvent {
        case readiness(LoopPortSource)
        case message(LoopPortSource, PortMessage)
        case mainQueue
    }

    static let logger = Logger(label: "RingLoop.RunLoop")
    /// Modes a loop can hold (each item records its modes in a 64-bit mask).
    public static let maximumModeCount = 64

    // MARK: Shared with other threads

    let signal = WakeUpSignal()
    let inbox: MessageInbox
    /// `pthread_self()` of the loop's thread; 0 until the thread first uses the loop.
    private let ownerThread = Atomic<UInt>(0)
    private let requests = ThreadLock<[@Sendable (RingRunLoop) -> Void]>([])
    private let hasRequests = Atomic<Bool>(false)
    private let currentRun = ThreadLock<RunState?>(nil)

    func swapCurrentRun(_ run: RunState?) -> RunState? {
        currentRun.withLock { current in
            let previous = current
            current = run
            return previous
        }
    }
    /// Whether this is the main thread's loop.
    public let isMain: Bool

    // MARK: Loop thread

    var core: WaitCore?
    private var coreError: RingError?
    /// Waits that failed in a row; reset by one that succeeds.
    var consecutiveWaitFailures = 0
    /// A run that cannot wait this many times in a row ends with ``RunResult/failed``.
    static let waitFailureLimit = 8
    /// The last error of the loop's wait (loop thread): why a run ended with
    /// ``RunResult/failed``.
    public internal(set) var lastError: RingError?
    private var modeTable: [Mode: ModeState] = [:]
    private var modeList: [ModeState] = []
    private var commonModeSet: Set<Mode> = [.default]
    /// Items added to the common modes (a set, as CFRunLoop's `_commonModeItems`).
    private var commonItems: [ObjectIdentifier: Item] = [:]
    private var blocks: Deque<BlockItem> = []
    var currentModeState: ModeState?
    var readinessSources: [PortID: LoopPortSource] = [:]
    var messageSources: [MessagePort: LoopPortSource] = [:]
    var orphanMessages: [MessagePort: Deque<PortMessage>] = [:]
    var pendingPortEvents: Deque<PendingPortEvent> = []
    private var timerSequence: UInt64 = 0
    var source0Scratch: [LoopSource] = []
    var observerScratch: [LoopObserver] = []
    var timerScratch: [TimerEntry] = []
    var keptPortEvents: Deque<PendingPortEvent> = []
    var mainQueuePort: PortID?
    var mainQueuePending = false
    var inMainQueueCallout = false
    /// How early the loop wakes before a precise-mode timer, to spin to its fire date.
    /// Wide enough to cover the kernel's wake-up lateness (p99 ≈ 50 µs on an idle
    /// machine here, ≈ 175 µs with the other core busy); each precise fire spins about
    /// this long. Loop thread.
    public var preciseSpinWindow: Duration = .microseconds(200) {
        didSet { preciseSpinWindowNanoseconds = UInt64(max(0, preciseSpinWindow.nanosecondsClamped)) }
    }
    var preciseSpinWindowNanoseconds: UInt64 = 200_000

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
    public var spinBeforeSleeping: Duration = .zero {
        didSet { spinBeforeSleepingNanoseconds = UInt64(max(0, spinBeforeSleeping.nanosecondsClamped)) }
    }
    var spinBeforeSleepingNanoseconds: UInt64 = 0

    /// Passes through the loop since it was created (loop thread).
    public internal(set) var passCount: UInt64 = 0

    init(isMain: Bool) {
        self.isMain = isMain
        self.inbox = MessageInbox(signal: signal)
        // The default mode exists from the start, as in CFRunLoop.
        _ = modeState(.default, create: true)
    }

    deinit {
        inbox.close()
    }

    // MARK: Loops per thread

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            let loop = Unmanaged<RingRunLoop>.fromOpaque(pointer)
            loop.takeUnretainedValue().finalizeOnThreadExit()
            loop.release()
        }
        return key
    }()

    private static let mainStorage = ThreadLock<RingRunLoop?>(nil)

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

    private func bindOwner() {
        _ = ownerThread.compareExchange(
            expected: 0, desired: UInt(pthread_self()), ordering: .acquiringAndReleasing)
    }

    /// Whether the calling thread is the loop's thread.
    public var isOnLoopThread: Bool {
        ownerThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    func preconditionOnLoopThread(_ what: @autoclosure () -> String) {
        precondition(isOnLoopThread, "\(what()) must be called on the loop's own thread")
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
        for state in modeList {
            state.sources0.forEach(release)
            state.sources1.forEach(release)
            state.observers.forEach(release)
            state.timers.forEachTimer(release)
        }
        for item in commonItems.values { release(item.membership) }
        modeTable = [:]
        modeList = []
        commonItems = [:]
        blocks = []
        pendingPortEvents = []
        keptPortEvents = []
        readinessSources = [:]
        messageSources = [:]
        orphanMessages = [:]
        inbox.close()
    }

    // MARK: Cross-thread requests

    /// Runs `body` on the loop's thread: now if called there, otherwise at the loop's
    /// next pass (and wakes it).
    private func onLoopThread(_ body: @escaping @Sendable (RingRunLoop) -> Void) {
        requests.withLock { $0.append(body) }
        hasRequests.store(true, ordering: .releasing)
        signal.wakeUp()
    }

    func applyRequests() {
        guard hasRequests.load(ordering: .acquiring) else { return }
        let pending = requests.withLock { requests -> [@Sendable (RingRunLoop) -> Void] in
            hasRequests.store(false, ordering: .relaxed)
            defer { requests.removeAll(keepingCapacity: true) }
            return requests
        }
        for request in pending { request(self) }
    }

    // MARK: The wait core

    /// Creates the loop's ring on first need (on the loop's thread, which a
    /// `SINGLE_ISSUER` ring requires). Returns `nil` when the kernel refuses io_uring.
    func waitCore() -> WaitCore? {
        if let core { return core }
        if coreError != nil { return nil }
        do {
            let created = try WaitCore(signal: signal, inbox: inbox)
            core = created
            return created
        } catch {
            coreError = error
            Self.logger.error("io_uring unavailable, the loop cannot wait: \(error)")
            return nil
        }
    }

    /// Creates the loop's io_uring now, on the loop's thread, and reports why it cannot
    /// be created (for example `EPERM` when `kernel.io_uring_disabled` forbids it). A
    /// loop that cannot create its ring returns ``RunResult/finished`` from every run.
    public func prepare() throws(RingError) {
        preconditionOnLoopThread("prepare()")
        if waitCore() == nil, let coreError { throw coreError }
    }

    /// A description of the loop's wait core (ring flags, wake-up mechanism), or why
    /// it has none; loop thread.
    public var waitCoreDescription: String {
        if let core { return core.debugDescription }
        if let coreError { return "no wait core: \(coreError)" }
        return "wait core not created yet"
    }

    // MARK: Modes

    func modeState(_ mode: Mode) -> ModeState? { modeTable[mode] }

    private func modeState(_ mode: Mode, create: Bool) -> ModeState? {
        if let state = modeTable[mode] { return state }
        guard create, mode != .common else { return nil }
        guard modeList.count < Self.maximumModeCount else {
            Self.logger.error("mode '\(mode)' refused: a loop holds at most \(Self.maximumModeCount) modes")
            return nil
        }
        let state = ModeState(mode: mode, index: modeList.count)
        modeTable[mode] = state
        modeList.append(state)
        return state
    }

    /// The mode the innermost run is in, or `nil` when the loop is not running.
    /// Loop thread.
    public var currentMode: Mode? { currentModeState?.mode }

    /// The modes marked common (always including ``Mode/default``). Loop thread.
    public var commonModes: Set<Mode> { commonModeSet }

    /// Every mode the loop knows. Loop thread.
    public var allModes: [Mode] { modeList.map(\.mode) }

    /// Marks `mode` common: every item added to ``Mode/common`` joins it, now and later.
    public func addCommonMode(_ mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.addCommonMode(mode) }
            return
        }
        guard mode != .common, !commonModeSet.contains(mode), modeState(mode, create: true) != nil else { return }
        commonModeSet.insert(mode)
        for item in commonItems.values { addItem(item, toConcrete: mode) }
    }

    // MARK: Adding and removing items

    /// Adds a version-0 source to `mode` (or to every common mode with ``Mode/common``).
    public func add(_ source: LoopSource, to mode: Mode) { addItem(.source(source), to: mode) }
    /// Removes a version-0 source from `mode`.
    public func remove(_ source: LoopSource, from mode: Mode) { removeItem(.source(source), from: mode) }
    /// Whether `mode` contains the source. Loop thread.
    public func contains(_ source: LoopSource, in mode: Mode) -> Bool { containsItem(.source(source), in: mode) }

    /// Adds a port-backed source to `mode` (or to every common mode with ``Mode/common``).
    public func add(_ source: LoopPortSource, to mode: Mode) { addItem(.portSource(source), to: mode) }
    /// Removes a port-backed source from `mode`.
    public func remove(_ source: LoopPortSource, from mode: Mode) { removeItem(.portSource(source), from: mode) }
    /// Whether `mode` contains the source. Loop thread.
    public func contains(_ source: LoopPortSource, in mode: Mode) -> Bool {
        containsItem(.portSource(source), in: mode)
    }

    /// Adds an observer to `mode` (or to every common mode with ``Mode/common``). An
    /// observer belongs to one loop.
    public func add(_ observer: LoopObserver, to mode: Mode) { addItem(.observer(observer), to: mode) }
    /// Removes an observer from `mode`.
    public func remove(_ observer: LoopObserver, from mode: Mode) { removeItem(.observer(observer), from: mode) }
    /// Whether `mode` contains the observer. Loop thread.
    public func contains(_ observer: LoopObserver, in mode: Mode) -> Bool {
        containsItem(.observer(observer), in: mode)
    }

    /// Adds a timer to `mode` (or to every common mode with ``Mode/common``). A timer
    /// belongs to one loop.
    public func add(_ timer: LoopTimer, to mode: Mode) { addItem(.timer(timer), to: mode) }
    /// Removes a timer from `mode`; it stays valid and can be added again.
    public func remove(_ timer: LoopTimer, from mode: Mode) { removeItem(.timer(timer), from: mode) }
    /// Whether `mode` contains the timer. Loop thread.
    public func contains(_ timer: LoopTimer, in mode: Mode) -> Bool { containsItem(.timer(timer), in: mode) }

    /// Makes a message port whose messages this loop receives; schedule a
    /// ``LoopPortSource`` for it to handle them. Safe from any thread.
    public func makeMessagePort() -> MessagePort { MessagePort(inbox: inbox) }

    private func addItem(_ item: Item, to mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.addItem(item, to: mode) }
            return
        }
        guard item.isValid else { return }
        if mode == .common {
            guard commonItems.updateValue(item, forKey: item.identity) == nil else { return }
            for common in commonModeSet.sorted(by: { $0.rawValue < $1.rawValue }) {
                addItem(item, toConcrete: common)
            }
        } else {
            addItem(item, toConcrete: mode)
        }
    }

    private func addItem(_ item: Item, toConcrete mode: Mode) {
        guard item.isValid, let state = modeState(mode, create: true) else { return }
        let membership = item.membership
        guard membership.modeMask & state.bit == 0 else { return }
        guard membership.bind(to: self) else {
            Self.logger.error("item not added to mode '\(mode)': it belongs to another loop")
            return
        }
        switch item {
        case .source(let source):
            state.sources0.append(source)
            membership.modeMask |= state.bit
            if let schedule = source.schedule {
                Callout.toScheduleOrCancel { schedule(self, mode) }
            }
        case .portSource(let source):
            if membership.modeMask == 0, !register(source) {
                membership.unbindIfUnused()
                return
            }
            state.sources1.append(source)
            membership.modeMask |= state.bit
        case .observer(let observer):
            let index = state.observers.lastIndex(where: { $0.order <= observer.order }).map { $0 + 1 } ?? 0
            state.observers.insert(observer, at: index)
            state.observerMask.formUnion(observer.activities)
            membership.modeMask |= state.bit
        case .timer(let timer):
            membership.modeMask |= state.bit
            state.timerCount += 1
            reschedule(timer)
        }
    }

    private func removeItem(_ item: Item, from mode: Mode) {
        guard isOnLoopThread else {
            onLoopThread { $0.removeItem(item, from: mode) }
            return
        }
        if mode == .common {
            guard commonItems.removeValue(forKey: item.identity) != nil else { return }
            for common in commonModeSet { removeItem(item, fromConcrete: common) }
        } else {
            removeItem(item, fromConcrete: mode)
        }
    }

    private func removeItem(_ item: Item, fromConcrete mode: Mode) {
        guard let state = modeTable[mode] else { return }
        let membership = item.membership
        guard membership.modeMask & state.bit != 0 else { return }
        membership.modeMask &= ~state.bit
        switch item {
        case .source(let source):
            state.sources0.removeAll { $0 === source }
            if let cancel = source.cancel {
                Callout.toScheduleOrCancel { cancel(self, mode) }
            }
        case .portSource(let source):
            state.sources1.removeAll { $0 === source }
            if membership.modeMask == 0 { unregister(source) }
        case .observer(let observer):
            state.observers.removeAll { $0 === observer }
            state.observerMask = state.observers.reduce(into: []) { $0.formUnion($1.activities) }
        case .timer(let timer):
            state.timerCount -= 1
            reschedule(timer)
            state.compactTimersIfNeeded()
        }
        membership.unbindIfUnused()
    }

    private func containsItem(_ item: Item, in mode: Mode) -> Bool {
        preconditionOnLoopThread("contains(_:in:)")
        if mode == .common { return commonItems[item.identity] != nil }
        guard let state = modeTable[mode], item.membership.loop === self else { return false }
        return item.membership.modeMask & state.bit != 0
    }

    /// Removes an invalidated item from every mode (any thread).
    func removeEverywhere(_ item: Item) {
        guard isOnLoopThread else {
            onLoopThread { $0.removeEverywhere(item) }
            return
        }
        commonItems.removeValue(forKey: item.identity)
        for state in modeList where item.membership.modeMask & state.bit != 0 {
            removeItem(item, fromConcrete: state.mode)
        }
    }

    // MARK: Ports

    private func register(_ source: LoopPortSource) -> Bool {
        switch source.port {
        case .readiness(let fd, let events):
            guard let core = waitCore() else { return false }
            do {
                let id = try core.addReadinessPort(fd: fd, events: events)
                source.readinessPort = id
                readinessSources[id] = source
            } catch {
                // The source stays in the mode and learns it at its next perform, as for a
                // descriptor that fails later: `POLLNVAL`, with the error in `failure`.
                Self.logger.error("cannot watch descriptor \(fd): \(error)")
                source.failure = error
                if source.pendingReadiness == 0 { pendingPortEvents.append(.readiness(source)) }
                source.pendingReadiness |= Int16(POLLNVAL)
            }
        case .messages(let port):
            guard port.inbox === inbox else {
                Self.logger.error("message port belongs to another loop")
                return false
            }
            guard messageSources[port] == nil else {
                Self.logger.error("message port already has a source in this loop")
                return false
            }
            messageSources[port] = source
            if let waiting = orphanMessages.removeValue(forKey: port) {
                for message in waiting { pendingPortEvents.append(.message(source, message)) }
            }
        }
        return true
    }

    private func unregister(_ source: LoopPortSource) {
        switch source.port {
        case .readiness:
            if let id = source.readinessPort {
                readinessSources[id] = nil
                source.readinessPort = nil
                source.pendingReadiness = 0
                do { try core?.removePort(id) } catch {
                    Self.logger.error("cannot stop watching \(id): \(error)")
                }
            }
        case .messages(let port):
            if messageSources[port] === source { messageSources[port] = nil }
            // Messages not yet performed go back to the port's queue, as in a Mach port.
            var remaining: Deque<PendingPortEvent> = []
            while let event = pendingPortEvents.popFirst() {
                if case .message(let owner, let message) = event, owner === source {
                    orphanMessages[port, default: []].append(message)
                } else {
                    remaining.append(event)
                }
            }
            pendingPortEvents = remaining
        }
    }

    // MARK: Timers

    /// Puts fresh heap entries for `timer` in every mode it is in; older entries go stale.
    func reschedule(_ timer: LoopTimer) {
        timer.stamp &+= 1
        let mask = timer.membership.modeMask
        guard mask != 0, timer.isValid else { return }
        timerSequence &+= 1
        let entry = TimerEntry(fire: timer.fireNanoseconds, sequence: timerSequence, stamp: timer.stamp, timer: timer)
        for state in modeList where mask & state.bit != 0 {
            state.timers.insert(entry)
        }
    }

    /// Called when a timer's fire date is set (any thread).
    func timerWasRescheduled(_ timer: LoopTimer) {
        guard isOnLoopThread else {
            onLoopThread { $0.timerWasRescheduled(timer) }
            return
        }
        reschedule(timer)
    }

    /// When the running mode's timers need the loop awake: the earliest exact fire date,
    /// the earliest end of a tolerance window, or a spin window before a precise timer.
    func nextTimerDeadline(_ state: ModeState) -> UInt64? {
        guard state.timerCount > 0 else { return nil }
        return state.timers.wakeDeadline(isLive: state.isLive, spinWindow: preciseSpinWindowNanoseconds)
    }

    // MARK: Blocks

    /// Performs `block` on the loop's thread during a run in one of `modes`, in the order
    /// blocks were enqueued (`CFRunLoopPerformBlock`). Safe from any thread; does not
    /// wake the loop: call ``wakeUp()`` when it may be asleep.
    public func perform(inModes modes: [Mode] = [.default], _ block: @escaping @Sendable () -> Void) {
        guard isOnLoopThread else {
            onLoopThread { $0.perform(inModes: modes, block) }
            return
        }
        // The modes come into existence, as with CFRunLoopPerformBlock.
        for mode in modes { _ = modeState(mode, create: true) }
        blocks.append(BlockItem(modes: modes, block: block))
    }

    /// Performs `block` on the loop's thread once `delay` has passed, while the loop runs
    /// in one of `modes` (`perform(_:with:afterDelay:)`). Returns the timer: invalidate
    /// it to cancel. Safe from any thread.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.default], tolerance: Duration = .zero,
        _ block: @escaping @Sendable () -> Void
    ) -> LoopTimer {
        let timer = LoopTimer(after: delay, tolerance: tolerance) { _ in block() }
        for mode in modes { add(timer, to: mode) }
        return timer
    }

    private func blockMatches(_ item: BlockItem, _ mode: Mode) -> Bool {
        for candidate in item.modes {
            if candidate == mode { return true }
            if candidate == .common, commonModeSet.contains(mode) { return true }
        }
        return false
    }

    @discardableResult
    func doBlocks(_ state: ModeState) -> Bool {
        applyRequests()
        guard !blocks.isEmpty else { return false }
        var taken: Deque<BlockItem> = []
        swap(&taken, &blocks)
        var kept: Deque<BlockItem> = []
        var did = false
        while let item = taken.popFirst() {
            if blockMatches(item, state.mode) {
                Callout.toBlock(item.block)
                did = true
            } else {
                kept.append(item)
            }
        }
        if !kept.isEmpty {
            kept.append(contentsOf: blocks)
            blocks = kept
        }
        return did
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

    /// Whether the loop sleeps in the kernel right now. Safe from any thread.
    public var isWaiting: Bool { signal.isSleeping }

    // MARK: Emptiness

    var servesMainQueueHere: Bool {
        isMain && !inMainQueueCallout && ringloop_is_main_thread_cached()
    }

    func isEmpty(_ state: ModeState) -> Bool {
        if servesMainQueueHere, commonModeSet.contains(state.mode) { return false }
        if state.hasSourcesOrTimers { return false }
        for item in blocks where blockMatches(item, state.mode) { return false }
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
