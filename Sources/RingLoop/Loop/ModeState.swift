/// One mode's items (loop thread only; unchecked exclusivity as for the loop's own
/// per-pass state, see `RingRunLoop`).
final class ModeState {
    let mode: RingRunLoop.Mode
    /// Index in the loop's mode table; the bit items keep in their `modeMask`.
    let index: Int
    var bit: UInt64 { 1 << UInt64(index) }

    /// Version-0 sources, in no particular order (the sources phase orders the signalled
    /// ones by `order` and signal time). Changed only through ``insertSource0(_:)`` and
    /// ``removeSource0(_:)``.
    @exclusivity(unchecked) private(set) var sources0: [LoopSource] = []
    /// Each source's index in `sources0`, so removal is O(1).
    private var source0Positions: [ObjectIdentifier: Int] = [:]
    /// Port-backed sources (a set: they are performed in the order their ports deliver,
    /// not by their place here), so adding and removing one is O(1).
    @exclusivity(unchecked) var sources1: [ObjectIdentifier: LoopPortSource] = [:]
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

    /// Adds a version-0 source (O(1)).
    func insertSource0(_ source: LoopSource) {
        source0Positions[ObjectIdentifier(source)] = sources0.count
        sources0.append(source)
    }

    /// Removes a version-0 source (O(1)): the last one takes its place.
    func removeSource0(_ source: LoopSource) {
        guard let position = source0Positions.removeValue(forKey: ObjectIdentifier(source)) else { return }
        let last = sources0.removeLast()
        if position < sources0.count {
            sources0[position] = last
            source0Positions[ObjectIdentifier(last)] = position
        }
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
