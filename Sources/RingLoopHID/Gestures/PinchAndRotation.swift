import Glibc
import RingLoop

/// Two fingers measured against each other: the span between the first two live
/// touches and its angle, kept continuous when a finger is replaced.
struct TwoFingerMeasure {
    var startSpan = 0.0
    var startAngle = 0.0
    var baseScale = 1.0
    var baseRotation = 0.0
    var ids: (Int32, Int32) = (-1, -1)
    var scale = 1.0
    var rotation = 0.0
    var lastTime: UInt64 = 0
    var lastScale = 1.0
    var lastRotation = 0.0
    var scaleVelocity = 0.0
    var rotationVelocity = 0.0
    var location = GesturePoint.zero

    /// Updates from a frame; returns `false` when fewer than two fingers are down.
    mutating func update(_ touches: GestureTouches) -> Bool {
        guard let (a, b) = touches.firstTwoLive() else { return false }
        let delta = b.location - a.location
        let span = delta.length
        let angle = atan2(delta.y, delta.x)
        location = touches.centroid
        if ids != (a.id, b.id) {
            // New pair (or the first): continue from the current scale and rotation.
            if ids.0 != -1 {
                baseScale = scale
                baseRotation = rotation
            }
            ids = (a.id, b.id)
            // Two fingers reported at one point (hostile or broken input) must not make the
            // scale infinite or NaN.
            startSpan = max(span, 1e-3)
            startAngle = angle
        }
        scale = baseScale * span / startSpan
        var turned = angle - startAngle
        while turned > .pi { turned -= 2 * .pi }
        while turned < -.pi { turned += 2 * .pi }
        rotation = baseRotation + turned
        let now = touches.timestamp.nanoseconds
        if lastTime != 0, now > lastTime {
            let seconds = Double(now - lastTime) / 1e9
            // Smoothed over about three frames.
            scaleVelocity = 0.6 * scaleVelocity + 0.4 * (scale - lastScale) / seconds
            rotationVelocity = 0.6 * rotationVelocity + 0.4 * (rotation - lastRotation) / seconds
        }
        lastTime = now
        lastScale = scale
        lastRotation = rotation
        return true
    }

    /// How far the span has changed since the pair was taken, in the surface's unit.
    var spanChange: Double { abs(scale / baseScale - 1) * startSpan }

    mutating func reset() { self = TwoFingerMeasure() }
}

extension GestureRecognizer {
    /// The steps two-finger gestures share: measure the frame; with fewer than two fingers
    /// left, end a gesture that began, or fail one that never did once every finger is up;
    /// otherwise begin once `ready` says so, then report changes.
    func followTwoFingers(
        _ measure: inout TwoFingerMeasure, _ touches: GestureTouches, began: inout Bool, ready: (TwoFingerMeasure) -> Bool,
        report: (TwoFingerMeasure) -> GestureValues
    ) {
        guard measure.update(touches) else {
            if began {
                request(.ended, report(measure))
            } else if touches.liveCount == 0 {
                request(.failed, values)
            }
            return
        }
        if began {
            request(.changed, report(measure))
        } else if ready(measure) {
            began = true
            request(.began, report(measure))
        }
    }
}

/// A pinch: two fingers moving apart or together (continuous, as
/// `UIPinchGestureRecognizer`). Begins once the span between them has changed by
/// ``threshold``; reports the scale (span over the span at touch-down) and its velocity;
/// ends when fewer than two fingers remain.
///
/// ``touchpadPinch()`` makes libinput's pinch gesture: two to four fingers on a
/// touchpad, reporting scale and rotation together, beginning on either.
public final class PinchGestureRecognizer: GestureRecognizer {
    /// How far the span must change before it begins.
    @exclusivity(unchecked) public var threshold = GestureLength(millimetres: 6)
    /// Also begins on rotation and reports it (libinput's pinch); `nil`: scale only.
    @exclusivity(unchecked) public var rotationThreshold: Double?
    /// The most fingers it follows.
    @exclusivity(unchecked) public var maximumFingers = 2

    // Lent to `followTwoFingers` for each frame: unchecked, as the base class's per-frame
    // fields (loop thread only; nothing else reaches them meanwhile).
    @exclusivity(unchecked) private var measure = TwoFingerMeasure()
    @exclusivity(unchecked) private var began = false

    /// A two-finger pinch of kind `kind`.
    public init(kind: GestureKind = .pinch) {
        super.init(kind: kind, discrete: false)
    }

    /// libinput's pinch gesture on touchpads: 2–4 fingers, scale and rotation.
    public static func touchpadPinch() -> PinchGestureRecognizer {
        let pinch = PinchGestureRecognizer(kind: .touchpadPinch)
        pinch.rotationThreshold = 0.2
        pinch.maximumFingers = 4
        pinch.surfaces = [.touchpad]
        return pinch
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let fingers = touches.fingerCount
        if !began, fingers > maximumFingers {
            request(.failed, values)
            return
        }
        let span = threshold.value(on: touches.surface)
        let turn = touches.surface.isBoundingBox ? nil : rotationThreshold
        followTwoFingers(
            &measure, touches, began: &began,
            ready: { measure in measure.spanChange >= span || turn.map { abs(measure.rotation) >= $0 } ?? false },
            report: { measure in self.report(measure, fingers: fingers) })
    }

    private func report(_ measure: TwoFingerMeasure, fingers: Int) -> GestureValues {
        var values = GestureValues()
        values.fingers = max(2, fingers)
        values.location = measure.location
        values.scale = measure.scale
        values.scaleVelocity = measure.scaleVelocity
        if rotationThreshold != nil {
            values.rotation = measure.rotation
            values.rotationVelocity = measure.rotationVelocity
        }
        return values
    }

    public override func reset() {
        measure.reset()
        began = false
        super.reset()
    }
}

/// A rotation: two fingers turning around each other (continuous, as
/// `UIRotationGestureRecognizer`). Begins once they have turned ``threshold`` radians;
/// reports the angle since touch-down (clockwise on the surface positive) and its
/// velocity. Bounding-box (semi-multitouch) surfaces cannot show a rotation: it fails
/// there.
public final class RotationGestureRecognizer: GestureRecognizer {
    /// How far the fingers must turn before it begins, radians.
    @exclusivity(unchecked) public var threshold = 0.2

    @exclusivity(unchecked) private var measure = TwoFingerMeasure()
    @exclusivity(unchecked) private var began = false

    /// A two-finger rotation.
    public init() {
        super.init(kind: .rotation, discrete: false)
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        if touches.surface.isBoundingBox || (!began && touches.fingerCount > 2) {
            request(.failed, values)
            return
        }
        let threshold = self.threshold
        followTwoFingers(
            &measure, touches, began: &began, ready: { abs($0.rotation) >= threshold }, report: Self.report)
    }

    private static func report(_ measure: TwoFingerMeasure) -> GestureValues {
        var values = GestureValues()
        values.fingers = 2
        values.location = measure.location
        values.rotation = measure.rotation
        values.rotationVelocity = measure.rotationVelocity
        return values
    }

    public override func reset() {
        measure.reset()
        began = false
        super.reset()
    }
}
