import Glibc
import RingLoop

/// How a device is held, as `UIDevice.Orientation` names it, from the direction of
/// gravity in the sensor's axes (x to the right, y towards the top, z out of the face).
public enum DeviceOrientation: String, Sendable, Hashable, CaseIterable {
    /// Not known yet (no steady sample so far).
    case unknown
    /// Upright, the top up (+y up).
    case portrait
    /// Upright, the top down (−y up).
    case portraitUpsideDown
    /// On its side, the top to the left (+x up; UIKit's home button on the right).
    case landscapeLeft
    /// On its side, the top to the right (−x up).
    case landscapeRight
    /// Lying flat, the face up (+z up).
    case faceUp
    /// Lying flat, the face down (−z up).
    case faceDown

    /// The direction that is up in this orientation, in the sensor's axes.
    var up: MotionVector? {
        switch self {
        case .unknown: nil
        case .portrait: MotionVector(x: 0, y: 1, z: 0)
        case .portraitUpsideDown: MotionVector(x: 0, y: -1, z: 0)
        case .landscapeLeft: MotionVector(x: 1, y: 0, z: 0)
        case .landscapeRight: MotionVector(x: -1, y: 0, z: 0)
        case .faceUp: MotionVector(x: 0, y: 0, z: 1)
        case .faceDown: MotionVector(x: 0, y: 0, z: -1)
        }
    }
}

/// The device's orientation, as `UIDevice.orientation` follows it: gravity is the
/// accelerometer's reading smoothed over ``gravityTimeConstant``; the orientation whose
/// up direction is nearest becomes the device's once gravity has stayed within
/// 45° − ``hysteresis`` of it for ``settleTime`` while the reading's strength was within
/// ``acceptedMagnitude`` (a device being swung or falling says nothing). Near a border
/// between two orientations the current one holds. Each change is reported to the
/// actions; the first (from ``DeviceOrientation/unknown``) too.
///
/// The sensor's axes are taken as a screen's; a sensor mounted otherwise (a controller,
/// a panel rotated in its case) is set right with ``mountMatrix``, as udev's
/// `ACCEL_MOUNT_MATRIX` sets right an IIO accelerometer.
public final class OrientationRecognizer: MotionRecognizer {
    /// One orientation change.
    public struct Event: Sendable, Hashable {
        public var orientation: DeviceOrientation
        public var previous: DeviceOrientation
        public var device: HIDDeviceID
        /// The kernel's stamp of the sample that settled it.
        public var timestamp: MonotonicInstant
        /// Gravity's reaction (1 g up at rest) in the mounted axes, in g.
        public var gravity: MotionVector
    }

    /// How far past the 45° border between two orientations gravity must be, degrees.
    public var hysteresis = 15.0 { didSet { entryCosine = cos((45 - hysteresis) * .pi / 180) } }
    /// How long gravity must stay in a new orientation before it is reported.
    public var settleTime: Duration = .milliseconds(200) { didSet { settle = Self.nanoseconds(settleTime) } }
    /// The time constant of the filter that takes gravity from the readings.
    public var gravityTimeConstant: Duration = .milliseconds(100) {
        didSet { tau = Double(Self.nanoseconds(gravityTimeConstant)) / 1e9 }
    }
    /// Readings of this strength (g) say where gravity is; others are motion.
    @exclusivity(unchecked) public var acceptedMagnitude: ClosedRange<Double> = 0.8...1.2
    /// Rows of the matrix that turns the sensor's axes into a screen's (identity by
    /// default): `mounted.x = row0 · reading`, and so on.
    @exclusivity(unchecked) public var mountMatrix: (MotionVector, MotionVector, MotionVector) = (
        MotionVector(x: 1, y: 0, z: 0), MotionVector(x: 0, y: 1, z: 0), MotionVector(x: 0, y: 0, z: 1)
    )

    private struct Track {
        var device: HIDDeviceID
        var gravity: MotionVector
        var clock = SampleClock()
        var orientation = DeviceOrientation.unknown
        var candidate = DeviceOrientation.unknown
        var candidateSince: UInt64 = 0
    }

    // The per-sample state and the settings in the units the samples use, exempt from
    // dynamic exclusivity checks (see ShakeRecognizer).
    @exclusivity(unchecked) private var tracks: [Track] = []
    @exclusivity(unchecked) private var entryCosine = cos(30 * Double.pi / 180)
    @exclusivity(unchecked) private var settle: UInt64 = 200_000_000
    @exclusivity(unchecked) private var tau = 0.1
    private var actions: [(Event) -> Void] = []

    /// An orientation recognizer (``GestureKind/orientation``).
    public init() { super.init(kind: .orientation) }

    /// Adds an action, called with each change on the loop's thread.
    public func addAction(_ action: @escaping (Event) -> Void) { actions.append(action) }

    /// The current orientation of `device` (``DeviceOrientation/unknown`` before any).
    public func orientation(of device: HIDDeviceID) -> DeviceOrientation {
        tracks.first { $0.device == device }?.orientation ?? .unknown
    }

    override func take(_ sample: MotionEvent, device: HIDDeviceID, at time: MonotonicInstant) {
        let reading = mounted(sample.acceleration)
        var index = -1
        for candidate in tracks.indices where tracks[candidate].device == device {
            index = candidate
            break
        }
        if index < 0 {
            tracks.append(Track(device: device, gravity: reading))
            index = tracks.count - 1
        }
        let dt = tracks[index].clock.advance(kernel: time.nanoseconds, sensor: sample.sensorTime)
        let now = tracks[index].clock.now
        let gravity = tracks[index].gravity
        let updated = gravity + (reading - gravity) * Self.smoothing(dt, tau: tau)
        tracks[index].gravity = updated
        let strength = updated.magnitude
        guard acceptedMagnitude.contains(strength), acceptedMagnitude.contains(reading.magnitude) else {
            tracks[index].candidate = .unknown
            return
        }
        let nearest = Self.nearest(updated * (1 / strength))
        let current = tracks[index].orientation
        guard nearest.orientation != current, nearest.cosine >= entryCosine else {
            tracks[index].candidate = .unknown
            return
        }
        if tracks[index].candidate != nearest.orientation {
            tracks[index].candidate = nearest.orientation
            tracks[index].candidateSince = now
        }
        guard now &- tracks[index].candidateSince >= settle else { return }
        tracks[index].orientation = nearest.orientation
        tracks[index].candidate = .unknown
        let event = Event(
            orientation: nearest.orientation, previous: current, device: device, timestamp: time, gravity: updated)
        for action in actions { Self.callAction(action, event) }
    }

    public override func removeDevice(_ device: HIDDeviceID, at time: MonotonicInstant) {
        tracks.removeAll { $0.device == device }
    }

    private func mounted(_ value: MotionVector) -> MotionVector {
        func dot(_ row: MotionVector) -> Double { row.x * value.x + row.y * value.y + row.z * value.z }
        return MotionVector(x: dot(mountMatrix.0), y: dot(mountMatrix.1), z: dot(mountMatrix.2))
    }

    /// The orientation whose up direction is nearest to `up` (a unit vector), and the
    /// cosine of the angle between them.
    static func nearest(_ up: MotionVector) -> (orientation: DeviceOrientation, cosine: Double) {
        let (x, y, z) = (abs(up.x), abs(up.y), abs(up.z))
        if z >= x && z >= y { return (up.z > 0 ? .faceUp : .faceDown, z) }
        if y >= x { return (up.y > 0 ? .portrait : .portraitUpsideDown, y) }
        return (up.x > 0 ? .landscapeLeft : .landscapeRight, x)
    }
}
