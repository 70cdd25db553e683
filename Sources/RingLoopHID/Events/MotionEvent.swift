/// Three components along a motion sensor's axes.
///
/// The axes are the sensor's own, as its driver reports them on `ABS_X`/`ABS_Y`/`ABS_Z`
/// (and `ABS_RX`/`ABS_RY`/`ABS_RZ` for rotation): for a screen, x to the right, y towards
/// the top and z out of the face, the convention of Linux's IIO sensors, Android and
/// Core Motion; a controller's driver says how its sensor sits.
public struct MotionVector: Sendable, Hashable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double

    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    public static let zero = MotionVector(x: 0, y: 0, z: 0)

    /// The vector's length.
    public var magnitude: Double { (x * x + y * y + z * z).squareRoot() }

    public static func + (lhs: MotionVector, rhs: MotionVector) -> MotionVector {
        MotionVector(x: lhs.x + rhs.x, y: lhs.y + rhs.y, z: lhs.z + rhs.z)
    }

    public static func - (lhs: MotionVector, rhs: MotionVector) -> MotionVector {
        MotionVector(x: lhs.x - rhs.x, y: lhs.y - rhs.y, z: lhs.z - rhs.z)
    }

    public static func * (lhs: MotionVector, rhs: Double) -> MotionVector {
        MotionVector(x: lhs.x * rhs, y: lhs.y * rhs, z: lhs.z * rhs)
    }

    public var description: String {
        func format(_ value: Double) -> String { String(Double(Int((value * 1000).rounded())) / 1000) }
        return "(\(format(x)), \(format(y)), \(format(z)))"
    }
}

/// One sample of a motion sensor (an accelerometer, a gyroscope, or both on one node).
///
/// Values are converted with the axes' resolution, which the kernel defines for nodes
/// with `INPUT_PROP_ACCELEROMETER` as units per g on `ABS_X`/`ABS_Y`/`ABS_Z` and units
/// per degree per second on `ABS_RX`/`ABS_RY`/`ABS_RZ` (hid-playstation: 8192 per g and
/// 1024 per °/s; hid-sony's DualShock 4 the same; hid-nintendo's Joy-Cons 4096 per g).
/// An axis without a resolution cannot be converted: its value is then in device
/// units and ``isCalibrated`` is `false`.
public struct MotionEvent: Sendable, Hashable {
    /// Which sensors a node has.
    public struct Sensors: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// `ABS_X`, `ABS_Y`, `ABS_Z`: acceleration.
        public static let accelerometer = Sensors(rawValue: 1)
        /// `ABS_RX`, `ABS_RY`, `ABS_RZ`: angular velocity.
        public static let gyroscope = Sensors(rawValue: 2)
    }

    /// The specific force the accelerometer measures, in g: gravity's reaction included,
    /// so a device at rest reads 1 g pointing up (Core Motion's `CMAccelerometerData`).
    public var acceleration: MotionVector
    /// Angular velocity about each axis, in degrees per second (right-handed).
    public var rotationRate: MotionVector
    /// The sensor's own clock (`MSC_TIMESTAMP`), in microseconds, made continuous: the
    /// kernel's value is a 32-bit count that wraps about every 71.6 minutes, and the
    /// decoder carries the wraps on; a jump of more than 10 s counts as the sensor's
    /// reset, and the time the kernel saw pass is added instead. `nil` when the node
    /// does not report it.
    public var sensorTime: UInt64?
    /// Samples per second, estimated from the intervals between samples (the sensor's
    /// clock where it has one, else the kernel's); 0 until the second sample.
    public var sampleRate: Double
    /// How many samples this event stands for: 1, or more when the event system
    /// coalesces motion (``HIDEventSystem/Configuration/coalesceMotion``) and this is the
    /// newest of several samples of one loop pass.
    public var sampleCount: UInt32
    /// The sensors the node has.
    public var sensors: Sensors
    /// Whether the values are in g and °/s (every axis the node has gives a resolution).
    public var isCalibrated: Bool

    public init(
        acceleration: MotionVector, rotationRate: MotionVector, sensorTime: UInt64? = nil, sampleRate: Double = 0,
        sampleCount: UInt32 = 1, sensors: Sensors = [.accelerometer, .gyroscope], isCalibrated: Bool = true
    ) {
        self.acceleration = acceleration
        self.rotationRate = rotationRate
        self.sensorTime = sensorTime
        self.sampleRate = sampleRate
        self.sampleCount = sampleCount
        self.sensors = sensors
        self.isCalibrated = isCalibrated
    }
}
