import RingLoop

/// One report of a recognizer: the state it entered and its values then. Actions receive
/// these in the order the states were entered, at the loop's BeforeWaiting.
public struct GestureEvent: Sendable {
    /// The recognizer's ``GestureRecognizer/kind`` (``GestureKind/tap``, ``GestureKind/pan``,
    /// ``GestureKind/swipe``…).
    public var gesture: GestureKind
    public var state: GestureRecognizer.State
    public var values: GestureValues
    /// The device the touches are on.
    public var device: HIDDeviceID
    /// The surface (its kind and unit).
    public var surface: GestureSurface
    /// The kernel's timestamp of the frame that caused it, or the time a deadline passed.
    public var timestamp: MonotonicInstant
    /// The direction of a swipe (`nil` for other gestures).
    public var direction: SwipeGestureRecognizer.Direction?
}

/// A gesture recognizer over the digitizer stream of touchscreens and touchpads, with
/// UIGestureRecognizer's state machine.
///
/// Continuous gestures (pan, pinch, rotation, long press…) go ``GestureRecognizer/State/possible`` →
/// ``GestureRecognizer/State/began`` → ``GestureRecognizer/State/changed``… → ``GestureRecognizer/State/ended`` (or ``GestureRecognizer/State/cancelled``);
/// discrete ones (tap, swipe) go ``GestureRecognizer/State/possible`` → ``GestureRecognizer/State/ended`` (recognized).
/// Either may go to ``GestureRecognizer/State/failed`` instead. Recognizers are evaluated in an observer at
/// BeforeWaiting (as UIKit's `_UIGestureRecognizerUpdateObserver`), and their actions run
/// there; see ``HIDEventSystem/addGestureRecognizer(_:)``.
///
/// Subclass to write your own: override ``GestureRecognizer/touchesChanged(_:)`` (and ``GestureRecognizer/deadline`` with
/// ``GestureRecognizer/deadlineReached(at:)`` for time-based steps, ``GestureRecognizer/reset()`` to clear your state) and
/// call ``GestureRecognizer/request(_:_:)``. Recognizers live on the client loop's thread.
open class GestureRecognizer {
    /// UIGestureRecognizer's states.
    public enum State: String, Sendable, Hashable {
        case possible, began, changed, ended, cancelled, failed
        /// A discrete gesture's success (the same as ``ended``).
        public static var recognized: State { .ended }
    }

    /// The gesture it reports (``GestureKind/tap``, ``GestureKind/doubleTap``,
    /// ``GestureKind/pan``…); its ``GestureKind/rawValue`` names it in reports and JSON.
    public let kind: GestureKind
    /// Whether it is a discrete gesture (recognized at once) rather than continuous.
    public let isDiscrete: Bool
    /// A disabled recognizer sees no touches (and a tracking one is cancelled).
    @exclusivity(unchecked) public final var isEnabled = true {
        didSet { if !isEnabled, state == .began || state == .changed { arena?.force(self, to: .cancelled) } }
    }
    /// The surfaces it listens to (both by default).
    public var surfaces: Set<GestureSurface.Kind> = Set(GestureSurface.Kind.allCases) {
        didSet { surfaceMask = surfaces.reduce(0) { $0 | Self.bit($1) } }
    }
    /// ``surfaces`` as bits, for the per-frame test.
    @exclusivity(unchecked) final var surfaceMask: UInt8 = 3

    static func bit(_ kind: GestureSurface.Kind) -> UInt8 { kind == .touchscreen ? 1 : 2 }
    /// When it begins (or a discrete one is recognized while fingers are down), the
    /// handler chain gets those touches as cancelled and no further frames of them
    /// (UIKit's `cancelsTouchesInView`).
    @exclusivity(unchecked) public var cancelsTouchesInHandlers = true
    /// Whether an event system that tracks interactions runs its loop in
    /// `RingRunLoop.Mode.tracking` while this gesture is under way (pans and drags).
    @exclusivity(unchecked) public var tracksInteraction = false
    // The fields the arena reads for every recognizer and frame are exempt from dynamic
    // exclusivity checks (about a third of the per-frame cost): they are touched on the
    // client loop's thread only, by short accesses that never overlap.

    /// The current state.
    @exclusivity(unchecked) public internal(set) final var state: State = .possible
    /// The values of the last report.
    @exclusivity(unchecked) public internal(set) final var values = GestureValues()
    /// The device whose touches it is following (`nil` when idle).
    @exclusivity(unchecked) public internal(set) final var device: HIDDeviceID?

    @exclusivity(unchecked) final var actions: [(GestureEvent) -> Void] = []
    @exclusivity(unchecked) final var required: [GestureRecognizer] = []
    /// Called with another recognizer when both want to proceed at once.
    var simultaneous: ((GestureRecognizer, GestureRecognizer) -> Bool)?
    /// Recognizes alongside every other (the event system's own tracking recognizer).
    var isSimultaneousWithAll = false
    /// A begin (or recognition) waiting for recognizers it requires to fail, and whether
    /// the gesture has ended since.
    @exclusivity(unchecked) final var held: GestureValues?
    @exclusivity(unchecked) final var heldEnded = false
    /// The arena it belongs to; the arena clears it when it lets the recognizer go or
    /// goes itself, so it never dangles.
    unowned(unsafe) var arena: GestureArena?
    @exclusivity(unchecked) final var surface = GestureSurface(kind: .touchscreen, unit: .deviceUnits, width: 0, height: 0)

    /// Creates a recognizer of gestures of kind `kind` (discrete gestures are recognized
    /// once, others begin, change and end).
    public init(kind: GestureKind, discrete: Bool) {
        self.kind = kind
        self.isDiscrete = discrete
    }

    /// Adds an action, called with each state the recognizer enters (except failed) on
    /// the loop's thread.
    public func addAction(_ action: @escaping (GestureEvent) -> Void) { actions.append(action) }

    /// This recognizer proceeds only once `other` has failed; if `other` succeeds, this
    /// one fails (a single tap that waits for a double tap to fail).
    public func require(toFail other: GestureRecognizer) {
        precondition(other !== self, "a recognizer cannot require itself to fail")
        required.append(other)
    }

    /// Lets this recognizer proceed at the same time as those for which `predicate`
    /// answers `true` (UIKit's `gestureRecognizer(_:shouldRecognizeSimultaneouslyWith:)`).
    /// Either side saying yes is enough.
    public func recognizeSimultaneously(_ predicate: @escaping (GestureRecognizer, GestureRecognizer) -> Bool) {
        simultaneous = predicate
    }

    // MARK: For subclasses

    /// Called with the device's touches after each frame (live ones, and those that
    /// ended in the frame). Not called once the recognizer has failed, ended or been
    /// cancelled, until it is reset.
    open func touchesChanged(_ touches: GestureTouches) {}

    /// When the recognizer must look again without a frame (a long press's duration, a
    /// tap's time limit); `nil` for none.
    open var deadline: MonotonicInstant? { nil }

    /// Called once ``GestureRecognizer/deadline`` has passed.
    open func deadlineReached(at now: MonotonicInstant) {}

    /// Clears the recognizer's own state; called when it returns to ``GestureRecognizer/State/possible``
    /// after the touches are gone. Call `super.reset()`.
    open func reset() {}

    /// Asks to enter `state` with `values`: ``GestureRecognizer/State/began``, ``GestureRecognizer/State/changed``,
    /// ``GestureRecognizer/State/ended``, ``GestureRecognizer/State/cancelled`` or ``GestureRecognizer/State/failed``. The event system applies
    /// it (or holds a begin until required recognizers fail, or fails it when another
    /// gesture already won) and reports it to the actions.
    public final func request(_ state: State, _ values: GestureValues) {
        arena?.apply(self, state, values)
    }

    /// The direction a report carries (swipes).
    var reportedDirection: SwipeGestureRecognizer.Direction? { nil }

    /// Whether this recognizer, having begun or been recognized, makes `other` fail
    /// (UIKit's `canPrevent(_:)`). A tap cannot prevent a tap that needs more taps.
    open func canPrevent(_ other: GestureRecognizer) -> Bool { true }

    /// Whether `other`, having begun or been recognized, makes this recognizer fail
    /// (UIKit's `canBePrevented(by:)`).
    open func canBePrevented(by other: GestureRecognizer) -> Bool { true }

    /// Whether `winner` going ahead makes `other` fail.
    static func prevents(_ winner: GestureRecognizer, _ other: GestureRecognizer) -> Bool {
        winner.canPrevent(other) && other.canBePrevented(by: winner) && !winner.allowsSimultaneous(with: other)
    }

    /// Whether this recognizer may proceed while `other` does.
    func allowsSimultaneous(with other: GestureRecognizer) -> Bool {
        if isSimultaneousWithAll || other.isSimultaneousWithAll { return true }
        if let simultaneous, simultaneous(self, other) { return true }
        if let predicate = other.simultaneous, predicate(other, self) { return true }
        return false
    }

    /// Began or changed: under way.
    var isActive: Bool { state == .began || state == .changed }
    var isFinished: Bool { state == .ended || state == .cancelled || state == .failed }
}

/// Velocity from the samples of the last ``window``: the slope between the oldest and the
/// newest, so one noisy frame does not dominate. A class, so a recognizer updates and
/// reads it in place (a struct held by a class is copied out for each read); its samples
/// are inline, allocated once with the recognizer.
final class VelocityTracker {
    static let window: UInt64 = 100_000_000
    private var times = InlineArray<8, UInt64>(repeating: 0)
    private var xs = InlineArray<8, Double>(repeating: 0)
    private var ys = InlineArray<8, Double>(repeating: 0)
    private var next = 0
    private var count = 0

    func reset() {
        count = 0
        next = 0
    }

    func add(_ point: GesturePoint, at time: MonotonicInstant) {
        times[next] = time.nanoseconds
        xs[next] = point.x
        ys[next] = point.y
        next = (next + 1) & 7
        count = min(count + 1, 8)
    }

    /// Units per second.
    var velocity: GesturePoint {
        guard count >= 2 else { return .zero }
        let newest = (next + 7) & 7
        var oldest = newest
        for back in 1..<count {
            let index = (newest - back + 8) & 7
            if times[newest] &- times[index] > Self.window { break }
            oldest = index
        }
        if oldest == newest { oldest = (newest + 7) & 7 }
        let seconds = Double(times[newest] &- times[oldest]) / 1e9
        guard seconds > 0 else { return .zero }
        return GesturePoint(x: (xs[newest] - xs[oldest]) / seconds, y: (ys[newest] - ys[oldest]) / seconds)
    }
}
