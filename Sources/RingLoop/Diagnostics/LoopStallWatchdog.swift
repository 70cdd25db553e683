import CThreads
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A pass of a loop that ran longer than a watchdog's threshold without reaching
/// BeforeWaiting: what iOS developers call a stall ("卡顿"), found with the observers
/// that bracket each pass.
public struct LoopStallReport: Sendable, CustomStringConvertible {
    /// The kind of callout the loop was in when the stall was seen.
    public enum Callout: String, Sendable, Hashable {
        case source0, timer, port, block, observer, job, mainQueue
        /// The loop's own work between callouts (or a callout of a kind not tracked).
        case loop
    }

    /// How long the pass had been running when the watchdog looked.
    public var duration: Duration
    /// The mode of the run the pass belongs to.
    public var mode: RingRunLoop.Mode?
    /// What the loop was calling out to.
    public var callout: Callout
    /// The item called (its label, or its kind and identity), `nil` for blocks and jobs.
    public var item: String?
    /// Stalls left unreported since the last report (rate limit).
    public var suppressed: Int

    public var description: String {
        let ms = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        var text = "loop stalled \(Int(ms.rounded())) ms in mode \(mode?.rawValue ?? "?"), in a \(callout.rawValue) callout"
        if let item { text += " (\(item))" }
        if suppressed > 0 { text += "; \(suppressed) more since the last report" }
        return text
    }
}

/// What a loop is doing, published for a watchdog on another thread: the callout kind and
/// item running, the mode, and since when the current pass has been busy.
///
/// Threading: written on the loop's thread (callouts, the watchdog's observer), read by the
/// watchdog thread, all under one lock; `parked` is a futex word used only through the
/// atomic and futex calls of CThreads.
package final class CalloutProbe: @unchecked Sendable {
    // @unchecked: `state` is a lock; `parked` points to a word only touched atomically.
    struct State {
        var callout = LoopStallReport.Callout.loop
        var item: LoopItem?
        var mode: RingRunLoop.Mode?
        /// Monotonic nanoseconds when the current pass began; 0 while the loop sleeps.
        var busySince: UInt64 = 0
        /// Counts passes, so one long pass is reported once.
        var pass: UInt64 = 0
        /// Runs entered and not exited (nested runs).
        var depth = 0
    }

    let state = ThreadLock(State())
    /// 1 while the watchdog thread is parked until the loop gets busy (a futex word).
    let parked: UnsafeMutablePointer<UInt32>

    init() {
        parked = .allocate(capacity: 1)
        parked.initialize(to: 0)
    }

    deinit { parked.deallocate() }

    /// A callout begins; returns what to restore when it ends (callouts nest).
    @inline(__always)
    func enter(_ callout: LoopStallReport.Callout, _ item: LoopItem?) -> (LoopStallReport.Callout, LoopItem?) {
        state.withLock { state in
            let saved = (state.callout, state.item)
            state.callout = callout
            state.item = item
            return saved
        }
    }

    @inline(__always)
    func leave(_ saved: (LoopStallReport.Callout, LoopItem?)) {
        state.withLock { state in
            state.callout = saved.0
            state.item = saved.1
        }
    }

    /// A pass boundary, from the watchdog's observer.
    func observe(_ activity: RingRunLoop.Activity, mode: RingRunLoop.Mode?) {
        let now = MonotonicInstant.now.nanoseconds
        state.withLock { state in
            switch activity {
            case .entry:
                state.depth += 1
                state.mode = mode
                state.busySince = now
                state.pass &+= 1
            case .beforeTimers, .afterWaiting:
                state.mode = mode
                state.busySince = now
                state.pass &+= 1
            case .beforeWaiting:
                state.busySince = 0
            case .exit:
                state.depth -= 1
                // The outer run's callout goes on; the outermost run's end is rest.
                state.busySince = state.depth > 0 ? now : 0
                state.pass &+= 1
            default:
                break
            }
        }
        if activity != .beforeWaiting, ringloop_atomic_load_u32(parked) == 1 {
            ringloop_atomic_store_u32(parked, 0)
            _ = ringloop_futex_wake(parked)
        }
    }
}

/// Watches a loop for passes that run longer than `threshold` and reports each once,
/// from a thread of its own (the loop itself is the one stuck), with the time so far, the
/// mode, and the callout running with its item. At most one report per
/// `minimumInterval`; the ones in between are counted (``LoopStallReport/suppressed``).
///
/// Passes are bracketed by an observer of every activity in the common modes: a pass is
/// busy from AfterWaiting (or its BeforeTimers, or the run's entry) until BeforeWaiting.
/// While the loop sleeps the watchdog parks and costs nothing; while the loop is busy
/// it looks every quarter threshold. The loop publishes its callouts under a lock only
/// while a watchdog is attached (about 40 ns per callout).
///
/// ```swift
/// let watchdog = LoopStallWatchdog(loop: .main, threshold: .milliseconds(100)) { report in
///     logger.warning("\(report)")
/// }
/// …
/// watchdog.stop()
/// ```
public final class LoopStallWatchdog: Sendable {
    /// The pass length that counts as a stall.
    public let threshold: Duration
    /// The shortest time between two reports.
    public let minimumInterval: Duration
    private let watch: Watch
    private let observer: LoopObserver
    private let thread = ThreadLock<PosixThread?>(nil)
    private let loop: RingRunLoop

    /// Starts watching `loop` (from any thread). Stalls are reported to `report` on the
    /// watchdog's thread.
    public init(
        loop: RingRunLoop, threshold: Duration = .milliseconds(250), minimumInterval: Duration = .seconds(1),
        report: @escaping @Sendable (LoopStallReport) -> Void
    ) {
        precondition(threshold > .zero, "a stall threshold must be positive")
        self.threshold = threshold
        self.minimumInterval = minimumInterval
        self.loop = loop
        let watch = Watch(threshold: threshold, minimumInterval: minimumInterval, report: report)
        self.watch = watch
        let probe = watch.probe
        observer = LoopObserver(activities: .all, order: .min, label: "LoopStallWatchdog") { _, activity in
            probe.observe(activity, mode: RingRunLoop.current.modes.current?.mode)
        }
        loop.onLoopThread { loop in loop.calloutProbe = probe }
        loop.add(observer, to: .common)
        thread.withLock { $0 = PosixThread.start(name: "ringloop-stalls") { watch.run() } }
    }

    deinit { stop() }

    /// Stalls seen so far (reported or suppressed). Any thread.
    public var stallCount: Int { watch.stalls.load(ordering: .relaxed) }

    /// Stops watching and joins the watchdog's thread, from any thread. From inside the
    /// report closure, which runs on that thread, it does not wait: no report follows,
    /// and the thread ends when the closure returns.
    public func stop() {
        guard !watch.stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        observer.invalidate()
        let probe = watch.probe
        loop.onLoopThread { loop in if loop.calloutProbe === probe { loop.calloutProbe = nil } }
        ringloop_atomic_store_u32(probe.parked, 0)
        _ = ringloop_futex_wake(probe.parked)
        thread.withLock { $0 }?.join()
    }

    /// The watchdog thread: looks every quarter threshold while the loop is busy, parks
    /// while it sleeps.
    private final class Watch: Sendable {
        let probe = CalloutProbe()
        let threshold: Duration
        let minimumInterval: Duration
        let stopped = Atomic<Bool>(false)
        let stalls = Atomic<Int>(0)
        let report: @Sendable (LoopStallReport) -> Void

        init(threshold: Duration, minimumInterval: Duration, report: @escaping @Sendable (LoopStallReport) -> Void) {
            self.threshold = threshold
            self.minimumInterval = minimumInterval
            self.report = report
        }

        func run() {
            let thresholdNanoseconds = UInt64(threshold.nanosecondsClamped)
            let interval = UInt64(max(1_000_000, min(thresholdNanoseconds / 4, 250_000_000)))
            var reportedPass: UInt64 = .max
            var lastReport: UInt64 = 0
            var suppressed = 0
            var lastSeenPass: UInt64 = .max
            while !stopped.load(ordering: .acquiring) {
                let now = MonotonicInstant.now.nanoseconds
                let snapshot = probe.state.withLock { ($0.busySince, $0.pass, $0.callout, $0.item, $0.mode) }
                let (busySince, pass, callout, item, mode) = snapshot
                if busySince != 0, now > busySince, now - busySince >= thresholdNanoseconds, pass != reportedPass {
                    reportedPass = pass
                    stalls.add(1, ordering: .relaxed)
                    if lastReport == 0 || now - lastReport >= UInt64(minimumInterval.nanosecondsClamped) {
                        lastReport = now
                        report(
                            LoopStallReport(
                                duration: .nanoseconds(Int64(now - busySince)), mode: mode, callout: callout,
                                item: item.map(\.stallDescription), suppressed: suppressed))
                        suppressed = 0
                    } else {
                        suppressed += 1
                    }
                }
                if busySince == 0 && pass == lastSeenPass {
                    // Asleep, and no pass since the last look: park until the loop gets busy.
                    ringloop_atomic_store_u32(probe.parked, 1)
                    let resting = probe.state.withLock { $0.busySince == 0 && $0.pass == pass }
                    if resting, !stopped.load(ordering: .acquiring) { _ = ringloop_futex_wait(probe.parked, 1) }
                    ringloop_atomic_store_u32(probe.parked, 0)
                    lastSeenPass = .max
                    continue
                }
                lastSeenPass = pass
                var pause = timespec(tv_sec: Int(interval / 1_000_000_000), tv_nsec: Int(interval % 1_000_000_000))
                var left = timespec()
                while nanosleep(&pause, &left) != 0, errno == EINTR { pause = left }
            }
        }
    }
}
