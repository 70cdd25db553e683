import Glibc
import RingLoop

/// A pan (drag): fingers that move together (continuous, as `UIPanGestureRecognizer`).
/// Begins once the centroid has moved ``threshold``; reports the translation from where
/// the fingers touched down and the velocity; ends when they lift (or fewer than
/// ``minimumFingers`` remain). A finger added or lifted mid-pan does not make the
/// translation jump.
///
/// ``touchpadSwipe()`` makes libinput's swipe gesture: three or four fingers moving on a
/// touchpad, ended by a lift and cancelled when the finger count changes.
public class PanGestureRecognizer: GestureRecognizer {
    /// The fewest fingers it follows.
    // Read for every frame: unchecked, as the base class's per-frame fields.
    @exclusivity(unchecked) public var minimumFingers = 1
    /// The most fingers it follows; more make it fail before it begins.
    @exclusivity(unchecked) public var maximumFingers = Int.max
    /// How far the centroid must move before it begins.
    @exclusivity(unchecked) public var threshold = GestureLength(millimetres: 3)
    /// Whether a change in the finger count ends it as cancelled (libinput's swipe).
    @exclusivity(unchecked) public var cancelsWhenFingersChange = false

    var began = false
    var origin = GesturePoint.zero
    /// Added to the centroid so the translation stays continuous across finger changes.
    var offset = GesturePoint.zero
    var lastCentroid = GesturePoint.zero
    var lastLive = 0
    var fingersAtBegin = 0
    let tracker = VelocityTracker()

    /// A pan with `fingers` fingers (1 or more by default), of kind `kind`.
    public init(fingers: ClosedRange<Int> = 1...Int.max, kind: GestureKind = .pan) {
        precondition(fingers.lowerBound >= 1, "a pan needs at least one finger")
        minimumFingers = fingers.lowerBound
        maximumFingers = fingers.upperBound
        super.init(kind: kind, discrete: false)
        tracksInteraction = true
    }

    /// libinput's swipe gesture: 3–4 fingers on a touchpad.
    public static func touchpadSwipe() -> PanGestureRecognizer {
        let swipe = PanGestureRecognizer(fingers: 3...4, kind: .touchpadSwipe)
        swipe.cancelsWhenFingersChange = true
        swipe.surfaces = [.touchpad]
        return swipe
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let live = touches.liveCount
        let fingers = touches.fingerCount
        if live == 0 {
            if began {
                request(.ended, report(lastCentroid, fingers: fingersAtBegin))
            } else {
                request(.failed, values)
            }
            return
        }
        let centroid = touches.centroid
        if lastLive == 0 {
            origin = centroid
            offset = .zero
        } else if live != lastLive || touches.hasBegan {
            offset = offset + (lastCentroid - centroid)
        }
        let moved = centroid + offset
        tracker.add(moved, at: touches.timestamp)
        lastLive = live
        lastCentroid = centroid
        if !began {
            if fingers > maximumFingers {
                request(.failed, values)
                return
            }
            guard fingers >= minimumFingers, shouldBegin(touches, translation: moved - origin) else { return }
            began = true
            fingersAtBegin = fingers
            request(.began, report(centroid, fingers: fingers))
            return
        }
        if fingers < minimumFingers {
            request(.ended, report(centroid, fingers: fingers))
        } else if cancelsWhenFingersChange, fingers != fingersAtBegin {
            request(.cancelled, report(centroid, fingers: fingers))
        } else {
            request(.changed, report(centroid, fingers: fingers))
        }
    }

    /// Whether the pan may begin, having moved `translation` (subclasses add conditions).
    func shouldBegin(_ touches: GestureTouches, translation: GesturePoint) -> Bool {
        translation.length >= threshold.value(on: touches.surface)
    }

    func report(_ centroid: GesturePoint, fingers: Int) -> GestureValues {
        var values = GestureValues()
        values.fingers = fingers
        values.location = centroid
        values.translation = centroid + offset - origin
        values.velocity = tracker.velocity
        return values
    }

    public override func reset() {
        began = false
        lastLive = 0
        fingersAtBegin = 0
        offset = .zero
        tracker.reset()
        super.reset()
    }
}

/// A pan that starts at an edge of the surface and moves away from it (as
/// `UIScreenEdgePanGestureRecognizer`): the finger must touch down within ``edgeWidth``
/// of one of ``edges`` and move mostly inwards.
public final class ScreenEdgePanGestureRecognizer: PanGestureRecognizer {
    /// Edges of the surface, in its own orientation (y grows downwards).
    public struct Edges: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let left = Edges(rawValue: 1)
        public static let right = Edges(rawValue: 2)
        public static let top = Edges(rawValue: 4)
        public static let bottom = Edges(rawValue: 8)
        public static let all: Edges = [.left, .right, .top, .bottom]
    }

    /// The edges it starts from.
    public let edges: Edges
    /// How close to the edge the finger must touch down.
    @exclusivity(unchecked) public var edgeWidth = GestureLength(millimetres: 4)
    /// The edge the current gesture started from.
    @exclusivity(unchecked) public private(set) var startEdge: Edges = []

    /// An edge pan from any of `edges`, with one finger.
    public init(edges: Edges) {
        self.edges = edges
        super.init(fingers: 1...1, kind: .edgePan)
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        if startEdge.isEmpty, touches.hasBegan {
            startEdge = edge(of: touches)
            if startEdge.isEmpty {
                request(.failed, values)
                return
            }
        }
        super.touchesChanged(touches)
    }

    private func edge(of touches: GestureTouches) -> Edges {
        guard touches.count > 0, touches.surface.width > 0, touches.surface.height > 0 else { return [] }
        let touch = touches[0]
        let width = edgeWidth.value(on: touches.surface)
        let x = touch.normalized.x * touches.surface.width
        let y = touch.normalized.y * touches.surface.height
        if edges.contains(.left), x <= width { return .left }
        if edges.contains(.right), touches.surface.width - x <= width { return .right }
        if edges.contains(.top), y <= width { return .top }
        if edges.contains(.bottom), touches.surface.height - y <= width { return .bottom }
        return []
    }

    override func shouldBegin(_ touches: GestureTouches, translation: GesturePoint) -> Bool {
        guard super.shouldBegin(touches, translation: translation) else { return false }
        let inward: Double
        let across: Double
        switch startEdge {
        case .left: (inward, across) = (translation.x, translation.y)
        case .right: (inward, across) = (-translation.x, translation.y)
        case .top: (inward, across) = (translation.y, translation.x)
        default: (inward, across) = (-translation.y, translation.x)
        }
        if inward <= abs(across) {
            request(.failed, values)
            return false
        }
        return true
    }

    public override func reset() {
        startEdge = []
        super.reset()
    }
}

/// A swipe: fingers moving quickly in one direction (discrete, as
/// `UISwipeGestureRecognizer`). Recognized once they have covered ``minimumDistance``
/// within ``maximumDuration`` of touching down, within ``maximumAngle`` of one of
/// ``directions``; fails otherwise.
public final class SwipeGestureRecognizer: GestureRecognizer {
    /// Directions on the surface (y grows downwards: up is towards the top edge).
    public struct Direction: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let right = Direction(rawValue: 1)
        public static let left = Direction(rawValue: 2)
        public static let up = Direction(rawValue: 4)
        public static let down = Direction(rawValue: 8)

        public var description: String {
            let names: [(Direction, String)] = [(.right, "right"), (.left, "left"), (.up, "up"), (.down, "down")]
            return names.filter { contains($0.0) }.map(\.1).joined(separator: "|")
        }
    }

    /// The directions it recognizes.
    public let directions: Direction
    /// Fingers it is made with.
    public let fingersRequired: Int
    /// How far the fingers must go.
    @exclusivity(unchecked) public var minimumDistance = GestureLength(millimetres: 12)
    /// How soon after touching down.
    @exclusivity(unchecked) public var maximumDuration: Duration = .milliseconds(300)
    /// How fast the fingers must be going when they have covered the distance, per
    /// second: a drag that covers it slowly is a pan, not a swipe.
    @exclusivity(unchecked) public var minimumVelocity = GestureLength(millimetres: 150)
    /// How far from the direction's axis the movement may point, radians.
    @exclusivity(unchecked) public var maximumAngle = 0.5
    /// The direction of the last recognition.
    public private(set) var recognizedDirection: Direction?

    private var start: GesturePoint?
    private var startTime: MonotonicInstant?
    private var lastLive = 0
    private let tracker = VelocityTracker()

    /// A swipe in `directions` with `fingers` fingers.
    public init(directions: Direction, fingers: Int = 1) {
        precondition(fingers >= 1, "a swipe needs at least one finger")
        self.directions = directions
        self.fingersRequired = fingers
        super.init(kind: .swipe, discrete: true)
    }

    public override func touchesChanged(_ touches: GestureTouches) {
        let fingers = touches.fingerCount
        let live = touches.liveCount
        if startTime == nil { startTime = touches.timestamp }
        if fingers > fingersRequired || live == 0 {
            request(.failed, values)
            return
        }
        let centroid = touches.centroid
        if start == nil || live != lastLive { start = centroid }
        lastLive = live
        tracker.add(centroid, at: touches.timestamp)
        guard fingers == fingersRequired, let start else { return }
        let translation = centroid - start
        guard translation.length >= minimumDistance.value(on: touches.surface) else { return }
        let velocity = tracker.velocity
        guard velocity.length >= minimumVelocity.value(on: touches.surface) else {
            request(.failed, values)
            return
        }
        let angle = atan2(translation.y, translation.x)
        let candidates: [(Direction, Double)] = [(.right, 0), (.down, .pi / 2), (.left, .pi), (.up, -.pi / 2)]
        for (direction, axis) in candidates {
            var difference = abs(angle - axis)
            if difference > .pi { difference = 2 * .pi - difference }
            guard difference <= maximumAngle else { continue }
            guard directions.contains(direction) else { break }
            recognizedDirection = direction
            var report = GestureValues()
            report.fingers = fingers
            report.location = centroid
            report.translation = translation
            report.velocity = velocity
            request(.recognized, report)
            return
        }
        request(.failed, values)
    }

    public override var deadline: MonotonicInstant? { startTime.map { $0 + maximumDuration } }

    override var reportedDirection: Direction? { recognizedDirection }

    public override func deadlineReached(at now: MonotonicInstant) {
        request(.failed, values)
    }

    public override func reset() {
        start = nil
        startTime = nil
        lastLive = 0
        tracker.reset()
        super.reset()
    }
}
