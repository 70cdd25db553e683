import RingLoop

/// Taps: `taps` quick touches of `fingers` fingers in about one place (discrete, as
/// `UITapGestureRecognizer`). Recognized when the last tap lifts; fails when a finger
/// moves too far, stays too long, more fingers touch, or the next tap comes too late.
///
/// On a touchpad the fingers are counted as the pad counts them (`BTN_TOOL_TRIPLETAP`…),
/// so a three-finger tap on a pad that tracks two contacts is still three fingers.
public final class TapGestureRecognizer: GestureRecognizer {
    /// Taps to recognize (2 for a double tap).
    public let tapsRequired: Int
    /// Fingers each tap is made with.
    public let fingersRequired: Int
    /// From a tap's first touch to its last lift.
    @exclusivity(unchecked) public var maximumTapDuration: Duration = .milliseconds(350)
    /// From a tap's lift to the next tap's first touch.
    @exclusivity(unchecked) public var maximumTapInterval: Duration = .milliseconds(350)
    /// How far a finger may move during a tap.
    @exclusivity(unchecked) public var allowableMovement = GestureLength(millimetres: 5)
    /// How far a later tap may be from the first.
    @exclusivity(unchecked) public var maximumTapDistance = GestureLength(millimetres: 15)

    private var tapsDone = 0
    private var tapStart: MonotonicInstant?
    private var lastLift: MonotonicInstant?
    private var mostFingers = 0
    private var firstLocation: GesturePoint?
    private var location = GesturePoint.zero

    /// A recognizer of `taps` taps with `fingers` fingers, of kind ``GestureKind/doubleTap``
    /// for two taps, ``GestureKind/tripleTap`` for three and ``GestureKind/tap`` otherwise
    /// unless `kind` says.
    public init(taps: Int = 1, fingers: Int = 1, kind: GestureKind? = nil) {
        precondition(taps >= 1 && fingers >= 1 && fingers <= GestureTouches.capacity, "taps and fingers must be at least 1")
        tapsRequired = taps
        fingersRequired = fingers
        super.init(kind: kind ?? (taps == 2 ? .doubleTap : taps == 3 ? .tripleTap : .tap), discrete: true)
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let fingers = touches.fingerCount
        if tapStart == nil {
            guard fingers > 0 else { return }
            tapStart = touches.timestamp
            mostFingers = 0
            if let firstLocation, (touches.centroid - firstLocation).length > maximumTapDistance.value(on: touches.surface) {
                request(.failed, values)
                return
            }
        }
        mostFingers = max(mostFingers, fingers)
        if mostFingers > fingersRequired {
            request(.failed, values)
            return
        }
        if touches.largestMove > allowableMovement.value(on: touches.surface) {
            request(.failed, values)
            return
        }
        if fingers > 0 {
            location = touches.centroid
            return
        }
        // Every finger lifted: one tap done.
        guard mostFingers == fingersRequired else {
            request(.failed, values)
            return
        }
        tapsDone += 1
        if firstLocation == nil { firstLocation = location }
        tapStart = nil
        lastLift = touches.timestamp
        if tapsDone == tapsRequired {
            lastLift = nil  // nothing more to wait for (a recognition may wait for others)
            var report = GestureValues()
            report.fingers = fingersRequired
            report.location = firstLocation ?? location
            report.taps = tapsDone
            request(.recognized, report)
        }
    }

    /// A tap does not prevent a tap that needs more taps (so a double tap can follow two
    /// single taps, unless the single tap requires it to fail).
    public override func canPrevent(_ other: GestureRecognizer) -> Bool {
        if let tap = other as? TapGestureRecognizer, tap.tapsRequired > tapsRequired { return false }
        return true
    }

    public override var deadline: MonotonicInstant? {
        if let tapStart { return tapStart + maximumTapDuration }
        if let lastLift { return lastLift + maximumTapInterval }
        return nil
    }

    public override func deadlineReached(at now: MonotonicInstant) {
        request(.failed, values)
    }

    public override func reset() {
        tapsDone = 0
        tapStart = nil
        lastLift = nil
        mostFingers = 0
        firstLocation = nil
        super.reset()
    }
}

/// A long press: fingers held still for ``minimumDuration`` (continuous, as
/// `UILongPressGestureRecognizer`): began then, changed as they move, ended when one
/// lifts. Fails if they move too far or lift before.
///
/// ``touchpadHold()`` makes libinput's hold gesture: one to four fingers resting on a
/// touchpad for 180 ms, cancelled as soon as they move.
public final class LongPressGestureRecognizer: GestureRecognizer {
    /// How many fingers it is made with.
    public let fingers: ClosedRange<Int>
    /// How long they must stay still.
    @exclusivity(unchecked) public var minimumDuration: Duration = .milliseconds(500)
    /// How far a finger may move before the press begins.
    @exclusivity(unchecked) public var allowableMovement = GestureLength(millimetres: 10)
    /// Whether movement after it began cancels it (libinput's hold) rather than being
    /// reported as changes.
    @exclusivity(unchecked) public var cancelsOnMovement = false

    private var downAt: MonotonicInstant?
    private var began = false
    private var fingersAtBegin = 0
    private var lastLocation = GesturePoint.zero
    private var beganLocation = GesturePoint.zero
    /// Fingers at the last frame (the deadline's report has no frame of its own).
    private var lastFingers = 0

    /// A long press with `fingers` fingers.
    public init(fingers: ClosedRange<Int> = 1...1, kind: GestureKind = .longPress) {
        precondition(fingers.lowerBound >= 1, "a long press needs at least one finger")
        self.fingers = fingers
        super.init(kind: kind, discrete: false)
    }

    /// libinput's hold gesture on touchpads: 1–4 fingers still for 180 ms; movement cancels it.
    public static func touchpadHold() -> LongPressGestureRecognizer {
        let hold = LongPressGestureRecognizer(fingers: 1...4, kind: .hold)
        hold.minimumDuration = .milliseconds(180)
        hold.allowableMovement = GestureLength(millimetres: 1.5)
        hold.cancelsOnMovement = true
        hold.surfaces = [.touchpad]
        // libinput reports a hold beside whatever else the fingers do.
        hold.recognizeSimultaneously { _, _ in true }
        hold.cancelsTouchesInHandlers = false
        return hold
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let count = touches.fingerCount
        lastLocation = touches.centroid
        lastFingers = count
        let limit = allowableMovement.value(on: touches.surface)
        if !began {
            if count == 0 || count > fingers.upperBound {
                request(.failed, values)
                return
            }
            if touches.largestMove > limit {
                request(.failed, values)
                return
            }
            if fingers.contains(count) {
                if downAt == nil || touches.hasBegan { downAt = touches.timestamp }
            } else {
                downAt = nil
            }
            return
        }
        var report = values
        report.location = lastLocation
        report.translation = lastLocation - beganLocation
        if count < fingersAtBegin || touches.hasEnded {
            request(.ended, report)
        } else if cancelsOnMovement, report.translation.length > limit {
            request(.cancelled, report)
        } else if touches.hasBegan {
            request(.cancelled, report)
        } else {
            request(.changed, report)
        }
    }

    public override var deadline: MonotonicInstant? {
        guard !began, let downAt else { return nil }
        return downAt + minimumDuration
    }

    public override func deadlineReached(at now: MonotonicInstant) {
        began = true
        beganLocation = lastLocation
        var report = GestureValues()
        report.location = lastLocation
        report.fingers = lastFingers
        fingersAtBegin = lastFingers
        request(.began, report)
    }

    public override func reset() {
        downAt = nil
        began = false
        fingersAtBegin = 0
        lastFingers = 0
        super.reset()
    }
}
