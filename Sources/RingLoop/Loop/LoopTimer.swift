import Synchronization

/// A timer of a run loop (`CFRunLoopTimer`): fires its callback on the loop's thread once
/// its fire date has passed, while the loop runs in a mode the timer is in.
///
/// The callback is `@Sendable` (the loop may run on another thread than the one that made
/// the timer): keep its state in a ``LoopBound``.
///
/// A repeating timer never drifts: its next fire date is the last scheduled one plus the
/// interval, and fires missed while the loop was busy are skipped, not bunched. A timer
/// fires at most once per pass of the loop; timers due together fire in fire-date order.
///
/// ```swift
/// let tick = LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { timer in
///     print("tick")
/// }
/// loop.add(tick, to: .common)
/// ```
public final class LoopTimer: LoopItem, @unchecked Sendable {
    // @unchecked: the scheduling state is used on the loop's thread only; the callback is
    // `@Sendable`; the fire date, tolerance and validity are atomic for other threads.

    /// The repeat interval in nanoseconds; 0 for a one-shot timer.
    let intervalNanoseconds: UInt64
    let callback: @Sendable (LoopTimer) -> Void
    private let tolerance_ = Atomic<UInt64>(0)
    /// Whether the timer is in precise mode (see ``init(fireDate:interval:tolerance:precise:_:)``).
    public let isPrecise: Bool
    private let fireDate: Atomic<UInt64>
    /// Changes whenever the timer is (re)scheduled; heap entries with an older stamp are
    /// stale (loop thread).
    var stamp: UInt32 = 0
    /// Set while the callback runs (loop thread).
    var firing = false

    /// Creates a timer that first fires at `fireDate`.
    /// - Parameters:
    ///   - fireDate: When the timer first fires.
    ///   - interval: The repeat interval; `nil` or zero for a one-shot timer, which is
    ///     invalidated after it fires.
    ///   - tolerance: How late it may fire (zero: as close to the date as the loop can).
    ///   - callback: Called on the loop's thread with the timer.
    ///   - precise: Precise mode: the loop wakes ``RingRunLoop/preciseSpinWindow`` early
    ///     and spins to the fire date, trading that much CPU per fire for accuracy the
    ///     kernel's wake-up alone does not give. Tolerance is ignored in precise mode.
    public init(
        fireDate: MonotonicInstant, interval: Duration? = nil, tolerance: Duration = .zero, precise: Bool = false,
        _ callback: @escaping @Sendable (LoopTimer) -> Void
    ) {
        self.fireDate = Atomic(fireDate.nanoseconds)
        let interval = interval?.nanosecondsClamped ?? 0
        self.intervalNanoseconds = interval > 0 ? UInt64(interval) : 0
        self.isPrecise = precise
        self.callback = callback
        tolerance_.store(UInt64(max(0, tolerance.nanosecondsClamped)), ordering: .relaxed)
    }

    /// Creates a timer that first fires `delay` from now, then every `interval` if given.
    public convenience init(
        after delay: Duration, repeating interval: Duration? = nil, tolerance: Duration = .zero, precise: Bool = false,
        _ callback: @escaping @Sendable (LoopTimer) -> Void
    ) {
        self.init(fireDate: .now + delay, interval: interval, tolerance: tolerance, precise: precise, callback)
    }

    /// Creates a timer that calls `action` on `target` (held strongly until the timer is
    /// invalidated, as `Timer`'s target is).
    public convenience init<Target: AnyObject & Sendable>(
        after delay: Duration, repeating interval: Duration? = nil, tolerance: Duration = .zero,
        target: Target, action: @escaping @Sendable (Target) -> (LoopTimer) -> Void
    ) {
        self.init(fireDate: .now + delay, interval: interval, tolerance: tolerance) { timer in
            action(target)(timer)
        }
    }

    /// How late the timer may fire, so that one wake-up of the loop can serve several
    /// timers (the loop wakes by the earliest end of a window, and serves every timer
    /// whose window has opened). Setting it reschedules the timer. Safe from any thread.
    public var tolerance: Duration {
        get { .nanoseconds(Int64(clamping: tolerance_.load(ordering: .relaxed))) }
        set {
            tolerance_.store(UInt64(max(0, newValue.nanosecondsClamped)), ordering: .relaxed)
            loop?.timerWasRescheduled(self)
        }
    }

    var toleranceNanoseconds: UInt64 { isPrecise ? 0 : tolerance_.load(ordering: .relaxed) }

    /// The repeat interval, or `nil` for a one-shot timer.
    public var interval: Duration? {
        intervalNanoseconds == 0 ? nil : .nanoseconds(Int64(clamping: intervalNanoseconds))
    }

    /// Whether the timer repeats.
    public var repeats: Bool { intervalNanoseconds != 0 }

    /// When the timer fires next. Setting it reschedules the timer in every mode it is in;
    /// from inside the timer's own callback, a later date replaces the repeat.
    /// Safe from any thread.
    public var nextFireDate: MonotonicInstant {
        get { MonotonicInstant(nanoseconds: fireDate.load(ordering: .acquiring)) }
        set {
            fireDate.store(newValue.nanoseconds, ordering: .releasing)
            loop?.timerWasRescheduled(self)
        }
    }

    var fireNanoseconds: UInt64 {
        get { fireDate.load(ordering: .relaxed) }
        set { fireDate.store(newValue, ordering: .releasing) }
    }

    override var stallDescription: String {
        let every = intervalNanoseconds == 0 ? "one-shot" : "every \(Duration.nanoseconds(Int64(intervalNanoseconds)))"
        return "LoopTimer (\(every)) \(ObjectIdentifier(self))"
    }

    /// Stops the timer and removes it from every mode. Safe from any thread.
    public func invalidate() {
        guard markInvalid() else { return }
        loop?.removeEverywhere(self)
    }

    /// A timer that never fires: what a perform with no modes returns.
    static func invalidated() -> LoopTimer {
        let timer = LoopTimer(fireDate: .distantFuture, interval: .zero, tolerance: .zero, precise: false) { _ in }
        timer.invalidate()
        return timer
    }
}

/// One scheduling of a timer in one mode's heap.
struct TimerEntry: Comparable {
    var fire: UInt64
    var sequence: UInt64
    var stamp: UInt32
    let timer: LoopTimer

    static func < (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
        lhs.fire != rhs.fire ? lhs.fire < rhs.fire : lhs.sequence < rhs.sequence
    }

    static func == (lhs: TimerEntry, rhs: TimerEntry) -> Bool {
        lhs.fire == rhs.fire && lhs.sequence == rhs.sequence
    }
}
