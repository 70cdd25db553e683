/// One mode's items (loop thread only; unchecked exclusivity as for the loop's own
/// per-pass state, see `RingRunLoop`).
final class ModeState {
    let mode: RingRunLoop.Mode
    /// Index in the loop's mode table; the bit items keep in their `modeMask`.
    let index: Int
    var bit: UInt64 { 1 << UInt64(index) }

    /// Version-0 sources, in the order they were added.
    @exclusivity(unchecked) var sources0: [LoopSource] = []
    /// Port-backed sources, in the order they were added.
    @exclusivity(unchecked) var sources1: [LoopPortSource] = []
    /// Observers sorted by order, ties in the order they were added.
    @exclusivity(unchecked) var observers: [LoopObserver] = []
    /// The union of the observers' activities, to skip observer passes quickly.
    var observerMask: RingRunLoop.Activity = []
    /// The mode's timers (see ``TimerQueue``).
    @exclusivity(unchecked) var timers = TimerQueue()
    /// Timers in this mode.
    var timerCount: Int {
        get { timers.count }
        set { timers.count = newValue }
    }

    init(mode: RingRunLoop.Mode, index: Int) {
        self.mode = mode
        self.index = index
    }

    func isLive(_ entry: TimerEntry) -> Bool {
        entry.stamp == entry.timer.stamp && entry.timer.membership.modeMask & bit != 0 && entry.timer.isValid
    }

    /// Rebuilds the timer heaps without stale entries when they dominate them.
    func compactTimersIfNeeded() {
        let bit = self.bit
        timers.compactIfNeeded { entry in
            entry.stamp == entry.timer.stamp && entry.timer.membership.modeMask & bit != 0 && entry.timer.isValid
        }
    }

    /// Whether the mode has anything that keeps a run in it alive (blocks are checked by
    /// the loop).
    var hasSourcesOrTimers: Bool {
        !sources0.isEmpty || !sources1.isEmpty || timerCount > 0
    }
}
