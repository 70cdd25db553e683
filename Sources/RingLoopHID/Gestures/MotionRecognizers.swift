import RingLoop

/// What apps build on motion sensors: a recognizer fed the samples of ``HIDDeviceClass/motion``
/// nodes (``MotionEvent``), each device followed on its own. ``ShakeRecognizer`` and
/// ``OrientationRecognizer`` are the two UIKit has (`motionBegan(_:with:)` for
/// `.motionShake`, `UIDevice.orientation`).
///
/// Attached with ``HIDEventSystem/addMotionRecognizer(_:)``, a recognizer sees every
/// sample (also when the event system coalesces motion for handlers) and is evaluated at
/// BeforeWaiting with the gesture recognizers, its actions running there on the loop's
/// thread. It is pure otherwise: time comes from the samples (the sensor's own clock where
/// it has one, the kernel's stamps otherwise) and from ``advance(to:)``, so a recording
/// gives the same results from memory as live, and reports batched by a Bluetooth link
/// or delayed by a busy machine are timed as the sensor sampled them. Samples
/// that are not calibrated (``MotionEvent/isCalibrated``) or have no accelerometer are
/// ignored. Per sample nothing is allocated (a device's first sample adds its state).
public class MotionRecognizer {
    /// What the recognizer recognizes (``GestureKind/shake`` or ``GestureKind/orientation``),
    /// as a gesture recognizer's ``GestureRecognizer/kind`` does; its raw value is the name
    /// reports and JSON show.
    public let kind: GestureKind
    /// A disabled recognizer ignores samples.
    @exclusivity(unchecked) public var isEnabled = true
    /// Attached to an event system.
    var isAttached = false

    /// A recognizer of `kind`.
    init(kind: GestureKind) { self.kind = kind }

    /// Feeds one sample of `device`, stamped `time` by the kernel.
    public final func process(_ sample: MotionEvent, device: HIDDeviceID, at time: MonotonicInstant) {
        guard isEnabled, sample.isCalibrated, sample.sensors.contains(.accelerometer) else { return }
        take(sample, device: device, at: time)
    }

    /// Lets time pass to `now` without a sample (a shake ends when the hand stops, even
    /// if the sensor stops sending).
    public func advance(to now: MonotonicInstant) {}

    /// When the recognizer must look again without a sample; `nil` for none.
    public var deadline: MonotonicInstant? { nil }

    /// The device is gone: what was under way on it is cancelled, its state dropped.
    public func removeDevice(_ device: HIDDeviceID, at time: MonotonicInstant) {}

    func take(_ sample: MotionEvent, device: HIDDeviceID, at time: MonotonicInstant) {}

    /// The fraction of a step of `dt` seconds a low-pass filter of time constant `seconds`
    /// moves towards a new value.
    static func smoothing(_ dt: Double, tau seconds: Double) -> Double {
        dt <= 0 ? 0 : dt / (seconds + dt)
    }

    /// A non-negative duration in nanoseconds.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return seconds < 0 ? 0 : UInt64(seconds) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    static func callAction<Event>(_ action: (Event) -> Void, _ event: Event) { action(event) }
}

/// A device's time as its samples tell it: steps between samples from the sensor's own
/// clock (``MotionEvent/sensorTime``) where it has one, from the kernel's stamps
/// otherwise. The host stamps a sample when it arrives, so a Bluetooth controller's
/// batched reports, or a loaded machine, give stamps that bunch and gap; the sensor
/// samples at its steady rate. Deadlines without a sample are kernel instants, mapped
/// onto this time by the kernel's clock since the last sample.
struct SampleClock {
    /// Where the device's time is, nanoseconds (the first sample's kernel stamp to start).
    private(set) var now: UInt64 = 0
    /// The kernel's stamp of the last sample.
    private(set) var lastKernel: UInt64 = 0
    private var lastSensor: UInt64 = 0
    private var hasSensor = false

    /// Whether the samples carry the sensor's clock: such a sensor sends steadily, so a
    /// silence is the host's delay, not the device's stillness.
    var isSteady: Bool { hasSensor }

    /// Moves to a sample stamped `kernel` by the kernel, `sensor` µs on its own clock;
    /// returns the step in seconds (at most 0.1: a gap is not motion).
    mutating func advance(kernel: UInt64, sensor: UInt64?) -> Double {
        var step: UInt64 = 0
        if lastKernel == 0 {
            now = kernel
        } else if let sensor, hasSensor, sensor >= lastSensor, sensor - lastSensor < 1_000_000 {
            step = (sensor - lastSensor) * 1000
        } else if kernel > lastKernel {
            step = kernel - lastKernel
        }
        now &+= step
        lastKernel = kernel
        if let sensor {
            lastSensor = sensor
            hasSensor = true
        } else {
            hasSensor = false
        }
        return min(0.1, Double(step) / 1e9)
    }

    /// The device's time at the kernel instant `kernel` (after the last sample).
    func time(at kernel: UInt64) -> UInt64 { kernel > lastKernel ? now &+ (kernel - lastKernel) : now }

    /// The kernel instant of the device's time `time` (as far as the last sample says).
    func kernelInstant(of time: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: time >= now ? lastKernel &+ (time - now) : lastKernel &- min(lastKernel, now - time))
    }
}

/// A shake, with UIKit's semantics for `.motionShake`: ``Phase/began`` when the device,
/// moved hard (the hand's acceleration, gravity filtered out, over ``threshold``), first
/// reverses direction; ``Phase/ended`` once it has been still for ``quietInterval``
/// after at least ``minimumStrokes`` strokes; ``Phase/cancelled`` when it stops sooner (a
/// knock, not a shake), lasts beyond ``maximumDuration``, or the device goes away.
///
/// The stillness is measured on the device's time: a sensor with its own clock
/// (`MSC_TIMESTAMP`) sends steadily, and its shake ends on the first sample a quiet
/// interval after the last stroke; one without may stop sending when still, and its
/// shake ends when the kernel's clock has passed the quiet interval.
public final class ShakeRecognizer: MotionRecognizer {
    /// UIKit's `motionBegan`, `motionEnded`, `motionCancelled`.
    public enum Phase: String, Sendable, Hashable { case began, ended, cancelled }

    /// One report of a shake.
    public struct Event: Sendable, Hashable {
        public var phase: Phase
        public var device: HIDDeviceID
        /// The kernel's stamp of the sample (or the time a deadline passed).
        public var timestamp: MonotonicInstant
        /// Strokes so far: moves over the threshold, each the other way from the last.
        public var strokes: Int
        /// The strongest acceleration of the hand so far, in g.
        public var peak: Double
        /// Since the first stroke.
        public var duration: Duration
    }

    /// How hard a stroke is: the hand's acceleration (gravity filtered out), in g.
    @exclusivity(unchecked) public var threshold = 1.5
    /// Strokes a shake takes (four: there, back, there, back).
    @exclusivity(unchecked) public var minimumStrokes = 4
    /// Stillness after the last stroke that ends a shake.
    public var quietInterval: Duration = .milliseconds(250) { didSet { quiet = Self.nanoseconds(quietInterval) } }
    /// A shake longer than this is cancelled (someone walking with the device).
    public var maximumDuration: Duration = .seconds(3) { didSet { longest = Self.nanoseconds(maximumDuration) } }
    /// The time constant of the filter that tells gravity from the hand's acceleration.
    public var gravityTimeConstant: Duration = .milliseconds(250) {
        didSet { tau = Double(Self.nanoseconds(gravityTimeConstant)) / 1e9 }
    }

    // The per-sample state and the settings in the units the samples use, exempt from
    // dynamic exclusivity checks (a third of the per-sample cost): the recognizer lives on
    // the client loop's thread and no access overlaps another.
    @exclusivity(unchecked) private var quiet: UInt64 = 250_000_000
    @exclusivity(unchecked) private var longest: UInt64 = 3_000_000_000
    @exclusivity(unchecked) private var tau = 0.25

    private struct Track {
        var device: HIDDeviceID
        var gravity = MotionVector.zero
        var clock = SampleClock()
        var shaking = false
        var announced = false
        /// After a cancel for length: nothing starts until the device is still again.
        var coolingDown = false
        var axis = MotionVector.zero
        var sign = 0
        var strokes = 0
        var start: UInt64 = 0
        var lastStroke: UInt64 = 0
        var peak = 0.0
    }

    @exclusivity(unchecked) private var tracks: [Track] = []
    private var actions: [(Event) -> Void] = []

    /// A shake recognizer (``GestureKind/shake``).
    public init() { super.init(kind: .shake) }

    /// Adds an action, called with each phase on the loop's thread.
    public func addAction(_ action: @escaping (Event) -> Void) { actions.append(action) }

    /// Whether a shake is under way (began, not yet ended or cancelled) on `device`.
    public func isShaking(_ device: HIDDeviceID) -> Bool { tracks.contains { $0.device == device && $0.announced } }

    override func take(_ sample: MotionEvent, device: HIDDeviceID, at time: MonotonicInstant) {
        let index = trackIndex(device, sample)
        let dt = tracks[index].clock.advance(kernel: time.nanoseconds, sensor: sample.sensorTime)
        let now = tracks[index].clock.now
        finishIfQuiet(index, now: now)
        let gravity = tracks[index].gravity
        let updated = gravity + (sample.acceleration - gravity) * Self.smoothing(dt, tau: tau)
        tracks[index].gravity = updated
        let hand = sample.acceleration - updated
        let strength = hand.magnitude
        guard strength >= threshold else { return }
        if tracks[index].coolingDown {
            tracks[index].lastStroke = now
            return
        }
        if !tracks[index].shaking {
            tracks[index].shaking = true
            tracks[index].axis = hand * (1 / strength)
            tracks[index].sign = 1
            tracks[index].strokes = 1
            tracks[index].start = now
            tracks[index].peak = strength
        } else {
            let along = hand.x * tracks[index].axis.x + hand.y * tracks[index].axis.y + hand.z * tracks[index].axis.z
            let sign = along >= 0 ? 1 : -1
            if sign != tracks[index].sign {
                tracks[index].sign = sign
                tracks[index].strokes += 1
            }
            tracks[index].peak = max(tracks[index].peak, strength)
        }
        tracks[index].lastStroke = now
        if !tracks[index].announced, tracks[index].strokes >= 2 {
            tracks[index].announced = true
            report(.began, index, at: now)
        }
        if now &- tracks[index].start > longest {
            if tracks[index].announced { report(.cancelled, index, at: now) }
            tracks[index].shaking = false
            tracks[index].announced = false
            tracks[index].coolingDown = true
        }
    }

    /// Ends the shake of track `index` if it has been quiet long enough by `now`.
    private func finishIfQuiet(_ index: Int, now: UInt64) {
        let track = tracks[index]
        guard track.shaking || track.coolingDown, track.lastStroke != 0 else { return }
        guard now >= track.lastStroke &+ quietNanoseconds else { return }
        if track.announced {
            report(track.strokes >= minimumStrokes ? .ended : .cancelled, index, at: track.lastStroke &+ quietNanoseconds)
        }
        tracks[index].shaking = false
        tracks[index].announced = false
        tracks[index].coolingDown = false
        tracks[index].strokes = 0
    }

    private var quietNanoseconds: UInt64 { quiet }

    /// Ends shakes on sensors without a clock of their own that have gone quiet (a sensor
    /// with one sends steadily, and its shake ends on the sample that shows the stillness,
    /// so a host that falls behind does not end a shake early).
    public override func advance(to now: MonotonicInstant) {
        for index in tracks.indices where !tracks[index].clock.isSteady {
            finishIfQuiet(index, now: tracks[index].clock.time(at: now.nanoseconds))
        }
    }

    public override var deadline: MonotonicInstant? {
        var earliest: UInt64?
        for track in tracks where (track.shaking || track.coolingDown) && track.lastStroke != 0 && !track.clock.isSteady {
            let due = track.clock.kernelInstant(of: track.lastStroke &+ quietNanoseconds).nanoseconds
            earliest = min(earliest ?? due, due)
        }
        return earliest.map { MonotonicInstant(nanoseconds: $0) }
    }

    public override func removeDevice(_ device: HIDDeviceID, at time: MonotonicInstant) {
        guard let index = tracks.firstIndex(where: { $0.device == device }) else { return }
        if tracks[index].announced { report(.cancelled, index, at: tracks[index].clock.time(at: time.nanoseconds)) }
        tracks.remove(at: index)
    }

    private func trackIndex(_ device: HIDDeviceID, _ sample: MotionEvent) -> Int {
        for index in tracks.indices where tracks[index].device == device { return index }
        tracks.append(Track(device: device, gravity: sample.acceleration))
        return tracks.count - 1
    }

    /// Reports `phase` at the device's time `time` (stamped with its kernel instant).
    private func report(_ phase: Phase, _ index: Int, at time: UInt64) {
        let track = tracks[index]
        let event = Event(
            phase: phase, device: track.device, timestamp: track.clock.kernelInstant(of: time), strokes: track.strokes,
            peak: track.peak, duration: .nanoseconds(Int64(time &- track.start)))
        for action in actions { Self.callAction(action, event) }
    }
}
