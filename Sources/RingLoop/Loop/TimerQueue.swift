import HeapModule

/// One mode's timers, ordered for the two questions the loop asks: when must it wake, and
/// which timers are due.
///
/// Timers fall in three heaps by kind, so each question is answered from heap tops:
/// - `exact`: no tolerance — keyed by fire date;
/// - `tolerant` (keyed by fire date) and `tolerantLatest` (the same timers keyed by
///   fire date + tolerance): the loop wakes no later than the earliest end of a window,
///   and a wake serves every timer whose window has opened;
/// - `precise`: timers in precise mode, keyed by fire date; the loop wakes a spin window
///   early and spins to the date.
///
/// Complexity: insertion O(log n); the next deadline O(1) amortized; removal is lazy —
/// an entry goes stale when its timer is rescheduled, removed or invalidated, stale tops
/// are dropped as they surface, and the heaps are rebuilt when they hold more than three
/// entries a live timer (a tolerant timer is stored twice), so garbage stays bounded.
struct TimerQueue {
    private var exact = Heap<TimerEntry>()
    private var tolerant = Heap<TimerEntry>()
    private var tolerantLatest = Heap<LatestEntry>()
    private var precise = Heap<TimerEntry>()
    /// Live timers in the mode.
    var count = 0

    /// A tolerant timer keyed by the end of its window.
    struct LatestEntry: Comparable {
        var latest: UInt64
        var entry: TimerEntry
        static func < (lhs: LatestEntry, rhs: LatestEntry) -> Bool { lhs.latest < rhs.latest }
        static func == (lhs: LatestEntry, rhs: LatestEntry) -> Bool { lhs.latest == rhs.latest }
    }

    /// Entries held, stale ones included (for tests of the garbage bound).
    var storedEntries: Int { exact.count + tolerant.count + tolerantLatest.count + precise.count }

    mutating func insert(_ entry: TimerEntry) {
        let timer = entry.timer
        if timer.isPrecise {
            precise.insert(entry)
        } else if timer.toleranceNanoseconds == 0 {
            exact.insert(entry)
        } else {
            tolerant.insert(entry)
            let (latest, overflow) = entry.fire.addingReportingOverflow(timer.toleranceNanoseconds)
            tolerantLatest.insert(LatestEntry(latest: overflow ? .max : latest, entry: entry))
        }
    }

    /// The time the loop must wake by, given the precise-mode spin window.
    mutating func wakeDeadline(isLive: (TimerEntry) -> Bool, spinWindow: UInt64) -> UInt64? {
        var deadline = UInt64.max
        if let top = Self.liveTop(&exact, isLive) { deadline = min(deadline, top.fire) }
        while let top = tolerantLatest.min {
            if isLive(top.entry) {
                deadline = min(deadline, top.latest)
                break
            }
            tolerantLatest.removeMin()
        }
        if let top = Self.liveTop(&precise, isLive) {
            deadline = min(deadline, top.fire > spinWindow ? top.fire - spinWindow : 0)
        }
        return deadline == .max ? nil : deadline
    }

    /// The earliest live precise-mode fire date, if it falls before `limit`.
    mutating func preciseFire(before limit: UInt64, isLive: (TimerEntry) -> Bool) -> UInt64? {
        guard let top = Self.liveTop(&precise, isLive), top.fire <= limit else { return nil }
        return top.fire
    }

    /// Removes and returns, in fire-date order, every live entry due at `now`.
    mutating func popDue(now: UInt64, isLive: (TimerEntry) -> Bool, into due: inout [TimerEntry]) {
        let start = due.count
        Self.popDue(&exact, now, isLive, &due)
        Self.popDue(&tolerant, now, isLive, &due)
        Self.popDue(&precise, now, isLive, &due)
        if due.count - start > 1 { due[start...].sort() }
    }

    /// Puts back an entry taken by ``popDue(now:isLive:into:)`` that did not fire.
    mutating func reinsert(_ entry: TimerEntry) {
        if entry.timer.isPrecise {
            precise.insert(entry)
        } else if entry.timer.toleranceNanoseconds == 0 {
            exact.insert(entry)
        } else {
            // Its window entry is still in `tolerantLatest`.
            tolerant.insert(entry)
        }
    }

    /// Every timer with an entry (stale ones included), for teardown.
    func forEachTimer(_ body: (LoopTimer) -> Void) {
        for entry in exact.unordered { body(entry.timer) }
        for entry in tolerant.unordered { body(entry.timer) }
        for entry in precise.unordered { body(entry.timer) }
    }

    /// Rebuilds the heaps without stale entries once those outnumber the live timers. A
    /// tolerant timer is stored twice (its heap and its window's latest), so the bound is
    /// three entries a timer: after a rebuild, re-arms of every timer (each makes its older
    /// entries stale) reach it only after about half as many inserts as there are timers,
    /// and a rebuild's cost is spread over them.
    mutating func compactIfNeeded(isLive: (TimerEntry) -> Bool) {
        guard storedEntries > 3 * count + 64 else { return }
        exact = Heap(exact.unordered.filter(isLive))
        tolerant = Heap(tolerant.unordered.filter(isLive))
        tolerantLatest = Heap(tolerantLatest.unordered.filter { isLive($0.entry) })
        precise = Heap(precise.unordered.filter(isLive))
    }

    private static func liveTop(_ heap: inout Heap<TimerEntry>, _ isLive: (TimerEntry) -> Bool) -> TimerEntry? {
        while let top = heap.min {
            if isLive(top) { return top }
            heap.removeMin()
        }
        return nil
    }

    private static func popDue(
        _ heap: inout Heap<TimerEntry>, _ now: UInt64, _ isLive: (TimerEntry) -> Bool, _ due: inout [TimerEntry]
    ) {
        while let top = liveTop(&heap, isLive), top.fire <= now {
            due.append(heap.removeMin())
        }
    }
}

#if DEBUG
extension TimerQueue {
    /// Traps unless the queue's invariants hold (debug builds only; tests call it after
    /// operations, as swift-collections' `_checkInvariants()`). `isLive` is the mode's
    /// test of an entry. Holds on the loop's thread when no change from another thread
    /// (a fire date or tolerance set there) is waiting to reach the loop. O(n log n).
    ///
    /// - `count` is not negative, and no more timers have a live entry than it counts.
    /// - Each heap holds its kind: `precise` only precise timers, `exact` and `tolerant`
    ///   only others; a live entry in `exact` has no tolerance, one in `tolerant` some.
    /// - A live entry is due at its timer's fire date, and a timer has at most one live
    ///   entry in `exact`, `tolerant` and `precise` together.
    /// - Each live entry of `tolerant` has a live window entry in `tolerantLatest`, which
    ///   ends at the fire date plus the tolerance (saturating); a timer has at most one.
    func checkInvariants(isLive: (TimerEntry) -> Bool) {
        precondition(count >= 0, "TimerQueue: negative timer count \(count)")
        var live = Set<ObjectIdentifier>()
        func check(_ heap: Heap<TimerEntry>, _ name: String, precise: Bool, tolerant: Bool) {
            for entry in heap.unordered {
                let timer = entry.timer
                precondition(timer.isPrecise == precise, "TimerQueue: an entry of the wrong kind in \(name)")
                guard isLive(entry) else { continue }
                precondition(
                    (timer.toleranceNanoseconds > 0) == tolerant,
                    "TimerQueue: a live entry in \(name) whose tolerance is \(timer.toleranceNanoseconds) ns")
                precondition(
                    entry.fire == timer.fireNanoseconds,
                    "TimerQueue: a live entry in \(name) due at \(entry.fire), its timer at \(timer.fireNanoseconds)")
                precondition(
                    live.insert(ObjectIdentifier(timer)).inserted, "TimerQueue: a timer with two live entries (\(name))")
            }
        }
        check(exact, "exact", precise: false, tolerant: false)
        check(tolerant, "tolerant", precise: false, tolerant: true)
        check(precise, "precise", precise: true, tolerant: false)
        precondition(live.count <= count, "TimerQueue: \(live.count) timers with live entries, \(count) counted")
        var windows = Set<ObjectIdentifier>()
        for window in tolerantLatest.unordered where isLive(window.entry) {
            let timer = window.entry.timer
            let (end, overflow) = window.entry.fire.addingReportingOverflow(timer.toleranceNanoseconds)
            precondition(
                window.latest == (overflow ? .max : end), "TimerQueue: a window ends at \(window.latest), not \(end)")
            precondition(windows.insert(ObjectIdentifier(timer)).inserted, "TimerQueue: a timer with two live windows")
        }
        for entry in tolerant.unordered where isLive(entry) {
            precondition(windows.contains(ObjectIdentifier(entry.timer)), "TimerQueue: a tolerant entry without its window")
        }
    }
}
#endif
