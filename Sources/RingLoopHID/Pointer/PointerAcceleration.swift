#if canImport(Glibc)
import Glibc
#endif

/// How a relative device's deltas become a pointer's: libinput's acceleration profiles
/// and speed setting, written from libinput's documentation ("Pointer acceleration",
/// "The custom acceleration profile") and checked against libinput itself on the booted
/// kernel (`ringloop kernel-check pointer/`).
///
/// - ``AccelerationProfile/flat``: every delta times `1 + speed` (speed −1…1: 0 to 200 %),
///   whatever the motion's speed; the device's own counts, as libinput's flat profile
///   ("you get what the device does": no normalization to 1000 dpi).
/// - ``AccelerationProfile/adaptive``: libinput's default, its linear profile: the
///   deltas are normalized to 1000 dpi (``PointerSettings/dotsPerInch``), the motion's velocity is
///   measured across the recent deltas in the same direction and pace, and
///   the factor is a deceleration down to 0.3 for very slow motion, 1:1 for normal
///   motion, and a linear incline to a maximum factor for fast motion; the speed setting
///   moves where the incline starts, how steep it is and its maximum.
/// - Touchpads (the touchpad stage's deltas, already normalized to 1000 dpi): libinput's
///   touchpad curve, measured on libinput 1.22: flat is ``touchpadFlatFactor``, adaptive
///   ``touchpadFactor(atVelocity:)``, custom the curve on the normalized deltas.
/// - ``AccelerationProfile/custom``: libinput 1.23's custom profile for motion: points
///   `f[0], f[1], …` of output speed at input speeds `0, step, 2·step, …` (device units per
///   millisecond), linearly interpolated between points and extrapolated past the last
///   two; the factor is `f(v) / v`. The speed setting has no effect on it.
public struct PointerAcceleration: Sendable, Hashable, CustomStringConvertible {
    /// The profile.
    public var profile: AccelerationProfile
    /// The speed setting, −1…1 (0 is libinput's default).
    public private(set) var speed: Double
    /// A custom profile's curve (``AccelerationProfile/custom`` needs one).
    public private(set) var curve: CustomAccelerationCurve?

    /// libinput's default: the adaptive profile at speed 0.
    public static let libinputDefault = PointerAcceleration(checkedProfile: .adaptive, speed: 0, curve: nil)

    /// An acceleration of `profile` at `speed`, with `curve` for the custom profile.
    /// - Parameters:
    ///   - profile: The profile.
    ///   - speed: The speed setting, −1…1.
    ///   - curve: The custom profile's curve; required for ``AccelerationProfile/custom``.
    /// - Throws: ``PointerSettingError`` naming what would be valid.
    public init(profile: AccelerationProfile, speed: Double = 0, curve: CustomAccelerationCurve? = nil) throws(PointerSettingError) {
        guard speed.isFinite, speed >= -1, speed <= 1 else { throw .speed(speed) }
        if profile == .custom, curve == nil { throw .missingCurve }
        self.init(checkedProfile: profile, speed: speed, curve: curve)
    }

    private init(checkedProfile profile: AccelerationProfile, speed: Double, curve: CustomAccelerationCurve?) {
        self.profile = profile
        self.speed = speed
        self.curve = curve
        touchpadPlateau = Self.touchpadPlateau(speed: speed)
    }

    /// `flat 0.5`, `adaptive 0`, `custom step 1 points 0 1 2.5`.
    public var description: String {
        switch profile {
        case .flat, .adaptive: "\(profile.rawValue) \(TextFormat.fixed(speed, 2))"
        case .custom: "custom \(curve.map { "\($0)" } ?? "")"
        }
    }

    /// The flat profile's factor: `1 + speed`.
    public var flatFactor: Double { 1 + speed }

    // MARK: The adaptive profile

    /// Speeds below this (units per ms, at 1000 dpi) are slowed, down to
    /// ``slowestFactor`` at standstill.
    static let decelerationEnd = 0.07
    /// The factor of the slowest motion.
    static let slowestFactor = 0.3

    /// Where the adaptive profile's incline starts (units per ms at 1000 dpi): 0.4 at speed
    /// 0, sooner for higher speeds, never below 0.2.
    var adaptiveThreshold: Double { max(0.2, 0.4 - 0.25 * speed) }
    /// The adaptive profile's largest factor: 2 at speed 0, 0.5 to 3.5 over the speeds.
    var adaptiveMaximum: Double { 2 + 1.5 * speed }
    /// The incline's slope (factor per unit/ms).
    var adaptiveIncline: Double { 1.1 + 0.75 * speed }

    /// The adaptive profile's factor at `velocity` (units per ms, normalized to 1000 dpi).
    public func adaptiveFactor(atVelocity velocity: Double) -> Double {
        let factor: Double
        if velocity < Self.decelerationEnd {
            factor = Self.slowestFactor + (1 - Self.slowestFactor) / Self.decelerationEnd * velocity
        } else if velocity < adaptiveThreshold {
            factor = 1
        } else {
            factor = 1 + adaptiveIncline * (velocity - adaptiveThreshold)
        }
        return min(adaptiveMaximum, factor)
    }

    /// The adaptive factor of a motion whose velocity went from `previous` to `current`:
    /// the profile's mean over that change (Simpson's rule over the two ends and the
    /// middle), so a sudden change of speed does not jump the factor.
    func adaptiveFactor(from previous: Double, to current: Double) -> Double {
        let middle = (previous + current) / 2
        return (adaptiveFactor(atVelocity: previous) + 4 * adaptiveFactor(atVelocity: middle) + adaptiveFactor(atVelocity: current)) / 6
    }

    // MARK: Touchpads

    /// libinput's constant deceleration of touchpad motion ("Pointer acceleration on
    /// touchpads"), measured: libinput 1.22's flat profile on a touchpad that reports its
    /// resolution moves the pointer 0.2967 × (1 + speed) per normalized unit at every
    /// speed setting (kernel-check `pointer/touchpad/flat`).
    public static let touchpadSlowdown = 0.2967

    /// The flat profile's factor on a touchpad's normalized deltas: `(1 + speed)` times
    /// ``touchpadSlowdown``.
    public var touchpadFlatFactor: Double { (1 + speed) * Self.touchpadSlowdown }

    /// The adaptive touchpad profile's factor for motion at normal and fast velocities,
    /// before the slowdown: measured on libinput 1.22 (one finger's motion on three real
    /// pads at nine speed settings, −1 to 1 by quarters) as the same factor from 0.3 to 4
    /// units per ms, 0.0424, 0.0729, 0.208, 0.473, 0.902, 1.501, 2.292, 3.23, 4.33–4.50;
    /// `0.045 + 0.857 × (1 + speed)^2.378` follows all nine within 4 %.
    let touchpadPlateau: Double

    static func touchpadPlateau(speed: Double) -> Double { 0.045 + 0.857 * pow(1 + speed, 2.378) }

    /// Below this velocity (units per ms, normalized) the adaptive touchpad profile
    /// slows motion further: the mouse's deceleration (0.3 at standstill to 1 at 0.07)
    /// on the velocity after the slowdown, 0.07 / ``touchpadSlowdown``. Measured: a
    /// motion at 0.1 units per ms got 0.74 of the factor of faster ones at every speed
    /// setting.
    static let touchpadDecelerationEnd = decelerationEnd / touchpadSlowdown

    /// The adaptive profile's factor on a touchpad at `velocity` (units per ms, normalized
    /// to 1000 dpi): ``touchpadSlowdown`` times the speed setting's factor for normal and
    /// fast motion, decelerated below 0.236 units per ms (down to 0.3 of it at standstill).
    public func touchpadFactor(atVelocity velocity: Double) -> Double {
        let deceleration = min(1, Self.slowestFactor + (1 - Self.slowestFactor) * max(0, velocity) / Self.touchpadDecelerationEnd)
        return Self.touchpadSlowdown * touchpadPlateau * deceleration
    }

    /// The touchpad factor of a motion whose velocity went from `previous` to `current`
    /// (the mean over the change, as ``adaptiveFactor(from:to:)``).
    func touchpadFactor(from previous: Double, to current: Double) -> Double {
        let middle = (previous + current) / 2
        return (touchpadFactor(atVelocity: previous) + 4 * touchpadFactor(atVelocity: middle) + touchpadFactor(atVelocity: current)) / 6
    }
}

/// A custom acceleration profile's curve (libinput 1.23): output speeds at input speeds
/// `0, step, 2·step, …` in device units per millisecond.
public struct CustomAccelerationCurve: Sendable, Hashable, CustomStringConvertible {
    /// The input speed between two points (units per ms), within ``validSteps``.
    public let step: Double

    /// The steps a curve takes (units per ms): from a thousandth (a finer step would put
    /// ordinary speeds millions of points past the last) to 10,000.
    public static let validSteps: ClosedRange<Double> = 0.001...10_000
    /// The output speeds at `0, step, 2·step, …` (at least two, none negative).
    public let points: [Double]

    /// The most points a curve takes (libinput's limit is of the same order).
    public static let maximumPointCount = 64

    /// A curve of `points` spaced `step` apart.
    /// - Throws: ``PointerSettingError`` naming what would be valid: a step outside
    ///   ``validSteps``, fewer than two points, more than ``maximumPointCount``, a negative
    ///   or infinite point.
    public init(step: Double, points: [Double]) throws(PointerSettingError) {
        guard Self.validSteps.contains(step) else { throw .curveStep(step) }
        guard points.count >= 2, points.count <= Self.maximumPointCount else { throw .curvePointCount(points.count) }
        if let bad = points.first(where: { !$0.isFinite || $0 < 0 }) { throw .curvePoint(bad) }
        self.step = step
        self.points = points
    }

    /// A curve as the settings file and `--accel-points` write it: the step, then the
    /// points (`1 0 1 2.5`), separated by spaces, tabs or commas.
    /// - Throws: ``PointerSettingError`` naming what would be valid.
    public init(parsing text: some StringProtocol) throws(PointerSettingError) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
        var numbers: [Double] = []
        for word in words {
            guard let number = Double(word) else { throw .curveText(String(text)) }
            numbers.append(number)
        }
        guard let step = numbers.first else { throw .curveText(String(text)) }
        try self.init(step: step, points: Array(numbers.dropFirst()))
    }

    /// The output speed at `velocity`: interpolated between the two points around it,
    /// extrapolated from the last two beyond the last.
    public func outputSpeed(at velocity: Double) -> Double {
        let position = max(0, velocity) / step
        // Compared as a Double first: a position beyond Int's range (a huge velocity, a
        // tiny step) would trap in the conversion.
        let last = points.count - 2
        let lower = position < Double(last) ? Int(position) : last
        let fraction = position - Double(lower)
        return points[lower] + (points[lower + 1] - points[lower]) * fraction
    }

    /// The factor at `velocity`: output speed over input speed (the slope of the first
    /// segment at standstill).
    public func factor(at velocity: Double) -> Double {
        guard velocity > 0 else { return (points[1] - points[0]) / step }
        return outputSpeed(at: velocity) / velocity
    }

    /// `step 1 points 0 1 2.5`.
    public var description: String {
        "step \(CalibrationMatrix.shortest(step)) points " + points.map(CalibrationMatrix.shortest).joined(separator: " ")
    }
}

/// A pointer setting refused, with what would be valid.
public enum PointerSettingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A speed outside −1…1.
    case speed(Double)
    /// The custom profile without points.
    case missingCurve
    /// A custom curve's step outside ``CustomAccelerationCurve/validSteps``.
    case curveStep(Double)
    /// A custom curve with too few or too many points.
    case curvePointCount(Int)
    /// A custom curve's negative or infinite point.
    case curvePoint(Double)
    /// Text that is not a step and points.
    case curveText(String)
    /// A scroll factor of 0 or less.
    case scrollFactor(Double)
    /// A resolution outside 1…100000 dpi.
    case dotsPerInch(Int)

    public var description: String {
        switch self {
        case .speed(let speed): "\(speed) is not a speed; valid speeds are −1…1 (0 is the default)"
        case .missingCurve: "the custom profile needs points (the step, then at least two speeds: 1 0 1 2.5)"
        case .curveStep(let step): "\(step) is not a step; a custom curve's step is from 0.001 to 10000"
        case .curvePointCount(let count):
            "\(count) point(s) do not make a curve; a custom curve has 2…\(CustomAccelerationCurve.maximumPointCount) points after its step"
        case .curvePoint(let point): "\(point) is not a point; a custom curve's points are speeds of 0 or more"
        case .curveText(let text):
            "'\(text)' is not a step and points; write numbers: the step (above 0), then at least two speeds (1 0 1 2.5)"
        case .scrollFactor(let factor): "\(factor) is not a scroll factor; valid factors are numbers above 0 (1 is the default)"
        case .dotsPerInch(let dpi): "\(dpi) is not a resolution; valid resolutions are 1…100000 dpi (1000 is the default)"
        }
    }
}
