import HeapModule

/// One mode's items (loop thread only).
final class ModeState {
    let mode: RingRunLoop.Mode
    /// Index in the loop's mode table; the bit items keep in their `modeMask`.
    let index: Int
    var bit: UInt64 { 1 << UInt64(index) }

    /// Version-0 sources, in the order they were added.
    var sources0: [LoopSource] = []
    /// Port-backed sources, in the order they were added.
    var sources1: [LoopPortSource] = []
    /// Observers sorted by order, ties in the order they were added.
    var observers: [LoopObserver] = []
    /// The union of the observers' activities, to skip observer passes quickly.
    var observerMask: RingRunLoop.Activity = []
    /// Timers by fire date. Entries go stale when their timer is rescheduled, removed or
    /// invalidated; stale entries are dropped when they reach the top, and the heap is
    /// rebuilt when they outnumber the live ones, so garbage never grows without bound.
    var timers = Heap<TimerEntry>()
    /// Timers in this mode.
    var timerCount = 0

    init(mode: RingRunLoop.Mode, index: Int) {
        self.mode = mode
        self.index = index
    }

    func isLive(_ entry: TimerEntry) -> Bool {
        entry.stamp == entry.timer.stamp && entry.timer.membership.modeMask & bit != 0 && entry.timer.isValid
    }

    /// The earliest live timer entry, dropping stale ones on the way.
    func earliestTimer() -> TimerEntry? {
        while let top = timers.min {
            if isLive(top) { return top }
            timers.removeMin()
        }
        return nil
    }

    /// Rebuilds the heap without stale entries when they dominate it.
    func compactTimersIfNeeded() {
        guard timers.count > 2 * timerCount + 64 else { return }
        timers = Heap(timers.unordered.filter(isLive))
    }

    /// Whether the mode has anything that keeps a run in it alive (blocks are checked by
    /// the loop).
    var hasSourcesOrTimers: Bool {
        !sources0.isEmpty || !sources1.isEmpty || timerCount > 0
    }
}
