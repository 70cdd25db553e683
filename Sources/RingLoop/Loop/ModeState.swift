/// One mode's items (loop thread only; unchecked exclusivity as for the loop's own
/// per-pass state, see `RingRunLoop`).
final class ModeState {
    let mode: RingRunLoop.Mode
    /// Index in the loop's mode table; the bit items keep in their `modeMask`.
    let index: Int
    var bit: UInt64 { 1 << UInt64(index) }
    /// Whether the mode is one of the loop's common modes (kept with the loop's set, so a
    /// pass asks without hashing the mode's name).
    var isCommon = false

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

#if DEBUG
extension ModeState {
    /// Traps unless the mode's invariants hold (debug builds only; tests call it after
    /// operations). Loop thread, when no change from another thread is waiting to reach
    /// the loop (see ``TimerQueue/checkInvariants(isLive:)``).
    ///
    /// - `source0Positions` maps each version-0 source to its index in `sources0`, and
    ///   nothing else.
    /// - Every source, port source and observer held here has this mode's bit in its
    ///   membership's mask; `sources1` is keyed by each source's identity.
    /// - Observers appear once each, sorted by order; `observerMask` is the union of
    ///   their activities.
    /// - The timer queue's own invariants.
    func checkInvariants() {
        precondition(
            source0Positions.count == sources0.count,
            "ModeState '\(mode)': \(source0Positions.count) positions for \(sources0.count) sources")
        for (position, source) in sources0.enumerated() {
            precondition(
                source0Positions[ObjectIdentifier(source)] == position,
                "ModeState '\(mode)': a source at \(position) recorded at \(String(describing: source0Positions[ObjectIdentifier(source)]))"
            )
            precondition(source.membership.modeMask & bit != 0, "ModeState '\(mode)': a source without the mode's bit")
        }
        for (key, source) in sources1 {
            precondition(key == ObjectIdentifier(source), "ModeState '\(mode)': a port source under another's key")
            precondition(source.membership.modeMask & bit != 0, "ModeState '\(mode)': a port source without the mode's bit")
        }
        var activities: RingRunLoop.Activity = []
        var seen = Set<ObjectIdentifier>()
        for (position, observer) in observers.enumerated() {
            precondition(seen.insert(ObjectIdentifier(observer)).inserted, "ModeState '\(mode)': an observer twice")
            precondition(
                position == 0 || observers[position - 1].order <= observer.order,
                "ModeState '\(mode)': observers out of order at \(position)")
            precondition(observer.membership.modeMask & bit != 0, "ModeState '\(mode)': an observer without the mode's bit")
            activities.formUnion(observer.activities)
        }
        precondition(activities == observerMask, "ModeState '\(mode)': observer mask \(observerMask), observers want \(activities)")
        timers.checkInvariants(isLive: isLive)
    }
}
#endif
