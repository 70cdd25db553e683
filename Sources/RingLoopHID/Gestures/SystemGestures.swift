import RingLoop

/// A pinch of many fingers: the hand closing or opening on the surface (continuous), as
/// iPadOS's multitasking pinch (four or five fingers drawn together goes home). Measures
/// the spread, the mean distance of the fingers from their centroid; begins once it has
/// changed by ``threshold`` with the fingers between ``minimumFingers`` and
/// ``maximumFingers``; reports the scale (spread over the spread when the fingers were
/// all down) and its velocity; ends when fewer than ``minimumFingers`` remain. A finger
/// added or lifted mid-gesture does not make the scale jump.
public final class SpreadPinchGestureRecognizer: GestureRecognizer {
    /// The fewest fingers it follows.
    public let minimumFingers: Int
    /// The most fingers it follows; more make it fail before it begins.
    public let maximumFingers: Int
    /// How far the spread must change before it begins.
    public var threshold = GestureLength(millimetres: 8)

    private var began = false
    private var startSpread = 0.0
    private var baseScale = 1.0
    private var scale = 1.0
    private var lastLive = 0
    private var lastTime: UInt64 = 0
    private var lastScale = 1.0
    private var scaleVelocity = 0.0

    /// A pinch of `fingers` fingers (five by default, iPadOS's), of kind `kind`.
    public init(fingers: ClosedRange<Int> = 5...5, kind: GestureKind = .pinch) {
        precondition(fingers.lowerBound >= 3, "a spread pinch needs at least three fingers (a two-finger pinch is PinchGestureRecognizer)")
        minimumFingers = fingers.lowerBound
        maximumFingers = fingers.upperBound
        super.init(kind: kind, discrete: false)
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let live = touches.liveCount
        let fingers = touches.fingerCount
        if !began, fingers > maximumFingers {
            request(.failed, values)
            return
        }
        if live < minimumFingers {
            if began {
                request(.ended, report(touches, fingers: lastLive))
            } else if live == 0 {
                request(.failed, values)
            }
            lastLive = live
            return
        }
        let spread = Self.spread(of: touches)
        if live != lastLive || touches.hasBegan || startSpread == 0 {
            // The fingers changed: continue from the scale reached so far.
            baseScale = scale
            startSpread = max(spread, 1e-3)
        }
        lastLive = live
        scale = baseScale * spread / startSpread
        let now = touches.timestamp.nanoseconds
        if lastTime != 0, now > lastTime {
            scaleVelocity = 0.6 * scaleVelocity + 0.4 * (scale - lastScale) / (Double(now - lastTime) / 1e9)
        }
        lastTime = now
        lastScale = scale
        if began {
            request(.changed, report(touches, fingers: fingers))
        } else if abs(scale / baseScale - 1) * startSpread >= threshold.value(on: touches.surface) {
            began = true
            request(.began, report(touches, fingers: fingers))
        }
    }

    /// The mean distance of the live touches from their centroid.
    static func spread(of touches: GestureTouches) -> Double {
        let centroid = touches.centroid
        var total = 0.0
        var count = 0
        for index in 0..<touches.count {
            let touch = touches[index]
            guard touch.phase != .ended && touch.phase != .cancelled else { continue }
            total += (touch.location - centroid).length
            count += 1
        }
        return count > 0 ? total / Double(count) : 0
    }

    private func report(_ touches: GestureTouches, fingers: Int) -> GestureValues {
        var values = GestureValues()
        values.fingers = fingers
        values.location = touches.liveCount > 0 ? touches.centroid : self.values.location
        values.scale = scale
        values.scaleVelocity = scaleVelocity
        return values
    }

    public override func reset() {
        began = false
        startSpread = 0
        baseScale = 1
        scale = 1
        lastLive = 0
        lastTime = 0
        lastScale = 1
        scaleVelocity = 0
        super.reset()
    }
}

extension StandardGestures {
    /// iPadOS's multitasking gestures on a touchscreen: a pan of three to five fingers
    /// (which waits for the swipes to fail), swipes of three, four and five fingers in
    /// four directions, and a five-finger pinch. Part of ``uikit(surfaces:)``.
    public static func multitasking(surfaces: Set<GestureSurface.Kind> = [.touchscreen]) -> [GestureRecognizer] {
        let pan = PanGestureRecognizer(fingers: 3...5)
        let swipes = (3...5).map { SwipeGestureRecognizer(directions: [.right, .left, .up, .down], fingers: $0) }
        for swipe in swipes { pan.require(toFail: swipe) }
        let all: [GestureRecognizer] = [pan] + swipes + [SpreadPinchGestureRecognizer(fingers: 5...5)]
        for recognizer in all { recognizer.surfaces = surfaces }
        return all
    }
}
