import RingLoop
import RingLoopEvdev

/// A point on a device's surface in gesture units: millimetres when the device reports
/// its resolution, device units otherwise (``GestureSurface/unit`` says which).
public struct GesturePoint: Hashable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public static let zero = GesturePoint(x: 0, y: 0)

    /// The distance from the origin.
    public var length: Double { (x * x + y * y).squareRoot() }

    public static func + (a: GesturePoint, b: GesturePoint) -> GesturePoint { GesturePoint(x: a.x + b.x, y: a.y + b.y) }
    public static func - (a: GesturePoint, b: GesturePoint) -> GesturePoint { GesturePoint(x: a.x - b.x, y: a.y - b.y) }

    public var description: String {
        "(\((x * 100).rounded() / 100), \((y * 100).rounded() / 100))"
    }
}

/// A length a recognizer measures against: millimetres on devices that report their
/// resolution, device units on those that do not.
///
/// A length given in millimetres only is converted for a device without resolution as
/// libinput does for touchpads (it assumes a pad ``assumedTouchpadWidth`` mm wide), and a
/// touchscreen's longer side is taken as ``assumedTouchscreenSide`` mm, so a default works
/// everywhere; give `units` to choose the figure for such devices yourself.
public struct GestureLength: Hashable, Sendable {
    public var millimetres: Double
    /// The length on devices without a resolution, in their units; `nil`: scaled from
    /// ``millimetres``.
    public var units: Double?

    /// The width libinput assumes for a touchpad without resolution (69 × 50 mm).
    public static let assumedTouchpadWidth = 69.0
    /// The longer side assumed for a touchscreen without resolution (a 10-inch panel's).
    public static let assumedTouchscreenSide = 220.0

    public init(millimetres: Double, units: Double? = nil) {
        self.millimetres = millimetres
        self.units = units
    }

    /// A length in millimetres (scaled on devices without resolution).
    public static func millimetres(_ value: Double) -> GestureLength { GestureLength(millimetres: value) }

    /// The length in `surface`'s units. In screen points, a length in millimetres is
    /// converted by the surface's ``GestureSurface/pointsPerMillimetre``.
    public func value(on surface: GestureSurface) -> Double {
        if surface.unit == .millimetres { return millimetres }
        if surface.unit == .screenPoints { return millimetres * surface.pointsPerMillimetre }
        if let units { return units }
        switch surface.kind {
        case .touchpad: return millimetres * surface.width / Self.assumedTouchpadWidth
        case .touchscreen: return millimetres * max(surface.width, surface.height) / Self.assumedTouchscreenSide
        }
    }
}

/// What a recognizer knows of the surface a gesture happens on.
public struct GestureSurface: Hashable, Sendable {
    /// The unit of positions, lengths and velocities.
    public enum Unit: String, Hashable, Sendable {
        case millimetres
        case deviceUnits
        /// Pixels of the screen a touchscreen maps to (``Contact/screenLocation``), after
        /// its calibration and rotation: a swipe "up" is up on the screen as the app draws
        /// it (``HIDEventSystem/gesturesInScreenPoints``).
        case screenPoints
    }

    /// Direct (a touchscreen: the finger is where it acts) or indirect (a touchpad).
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case touchscreen
        case touchpad
    }

    public var kind: Kind
    public var unit: Unit
    /// The surface's size in ``unit``s (0 when the device does not say).
    public var width: Double
    public var height: Double
    /// Semi-multitouch: contacts are a bounding box's corners, not fingers (rotation is
    /// not measurable).
    public var isBoundingBox: Bool
    /// Screen points per millimetre on the surface (``Unit/screenPoints``; 0 otherwise):
    /// from the screen's physical size when given, else from the panel's own size in
    /// millimetres (a touchscreen covers its screen), else a 220 mm longer side
    /// (``GestureLength/assumedTouchscreenSide``).
    public var pointsPerMillimetre: Double = 0

    public init(kind: Kind, unit: Unit, width: Double, height: Double, isBoundingBox: Bool = false) {
        self.kind = kind
        self.unit = unit
        self.width = width
        self.height = height
        self.isBoundingBox = isBoundingBox
    }

    /// The surface of a touchscreen in the points of the screen `mapping` puts it on: the
    /// screen's size as the app sees it (after rotation).
    public init(device: HIDDeviceInfo, screen mapping: ScreenMapping) {
        let own = GestureSurface(device: device)
        self.init(
            kind: own.kind, unit: .screenPoints, width: Double(mapping.screen.width), height: Double(mapping.screen.height),
            isBoundingBox: own.isBoundingBox)
        let longer = max(width, height)
        if let physical = mapping.screen.physicalSize, physical.width > 0, physical.height > 0 {
            pointsPerMillimetre = longer / max(physical.width, physical.height)
        } else if own.unit == .millimetres, max(own.width, own.height) > 0 {
            pointsPerMillimetre = longer / max(own.width, own.height)
        } else {
            pointsPerMillimetre = longer / GestureLength.assumedTouchscreenSide
        }
    }

    /// The surface of a digitizer device, from its axes and class.
    public init(device: HIDDeviceInfo) {
        let rangeX = device.axes[Evdev.ABS_MT_POSITION_X] ?? device.axes[Evdev.ABS_X]
        let rangeY = device.axes[Evdev.ABS_MT_POSITION_Y] ?? device.axes[Evdev.ABS_Y]
        let resolved = (rangeX?.resolution ?? 0) > 0 && (rangeY?.resolution ?? 0) > 0
        func size(_ axis: AbsoluteAxis?) -> Double {
            guard let axis, axis.maximum > axis.minimum else { return 0 }
            let units = Double(Int64(axis.maximum) - Int64(axis.minimum))
            return resolved ? units / Double(axis.resolution) : units
        }
        let direct = device.deviceClass == .touchscreen || device.properties.contains(Evdev.INPUT_PROP_DIRECT)
        self.init(
            kind: direct ? .touchscreen : .touchpad, unit: resolved ? .millimetres : .deviceUnits, width: size(rangeX),
            height: size(rangeY), isBoundingBox: device.isSemiMultitouch)
    }
}

/// One finger on the surface, as recognizers see it.
public struct GestureTouch: Hashable, Sendable {
    /// The contact's tracking id.
    public var id: Int32 = -1
    /// Where it is now, in the surface's unit.
    public var location: GesturePoint = .zero
    /// Where it touched down.
    public var startLocation: GesturePoint = .zero
    /// Its position over the surface, 0…1 on each axis.
    public var normalized: GesturePoint = .zero
    /// When it touched down (the kernel's timestamp of the frame).
    public var began: MonotonicInstant = MonotonicInstant(nanoseconds: 0)
    /// The phase in the latest frame.
    public var phase: Contact.Phase = .began

    /// How far it has moved from where it touched down.
    public var distanceMoved: Double { (location - startLocation).length }
}

/// Room for ``GestureTouches/capacity`` touches (see ``FixedBuffer``).
typealias GestureTouchStorage = FixedBuffer<GestureTouch>

extension FixedBuffer where Element == GestureTouch {
    convenience init() { self.init(capacity: GestureTouches.capacity, repeating: GestureTouch()) }
}

/// The touches on one device after a frame: the live ones, and those that ended or were
/// cancelled in it. A value (copy on write); the event system reuses its storage from
/// frame to frame, so recognizers read it without copying and nothing is allocated.
public struct GestureTouches: Sendable {
    /// Touches one value holds (those beyond it are not tracked).
    public static let capacity = DigitizerFrame.capacity
    private var storage = GestureTouchStorage()
    /// Touches in this value (live, ended and cancelled).
    public private(set) var count = 0
    /// The device.
    public var device = HIDDeviceID(rawValue: 0)
    /// Its surface.
    public var surface = GestureSurface(kind: .touchscreen, unit: .deviceUnits, width: 0, height: 0)
    /// When the frame was stamped.
    public var timestamp = MonotonicInstant(nanoseconds: 0)
    /// Fingers on the surface: the touchpad's own count (`BTN_TOOL_*`, which can exceed
    /// the contacts it tracks), or the live touches.
    public var fingerCount = 0
    /// Whether any touch was cancelled in this frame (the device went away, or input was
    /// lost and resynced).
    public var hasCancelled = false

    public init() {}

    public subscript(index: Int) -> GestureTouch {
        get {
            precondition(index >= 0 && index < count, "touch index out of range")
            return storage.items[index]
        }
        set {
            precondition(index >= 0 && index < count, "touch index out of range")
            makeUnique()
            storage.items[index] = newValue
        }
    }

    private mutating func makeUnique() {
        guard !isKnownUniquelyReferenced(&storage) else { return }
        storage = storage.copy()
    }

    mutating func append(_ touch: GestureTouch) {
        guard count < Self.capacity else { return }
        makeUnique()
        storage.items[count] = touch
        count += 1
    }

    /// Empties the value for the next frame, keeping its storage.
    mutating func removeAll() {
        count = 0
        hasCancelled = false
        fingerCount = 0
    }

    /// The index of the touch with `id`.
    func index(of id: Int32) -> Int? {
        let items = storage.items
        for index in 0..<count where items[index].id == id { return index }
        return nil
    }

    /// Live touches (not ended or cancelled).
    public var liveCount: Int {
        let items = storage.items
        var live = 0
        for index in 0..<count where items[index].phase != .ended && items[index].phase != .cancelled { live += 1 }
        return live
    }

    /// Whether a touch began in this frame.
    public var hasBegan: Bool {
        let items = storage.items
        for index in 0..<count where items[index].phase == .began { return true }
        return false
    }

    /// Whether a touch ended (lifted) in this frame.
    public var hasEnded: Bool {
        let items = storage.items
        for index in 0..<count where items[index].phase == .ended { return true }
        return false
    }

    /// The mean position of the live touches (of every touch when none is live).
    public var centroid: GesturePoint {
        let items = storage.items
        var sumX = 0.0
        var sumY = 0.0
        var n = 0
        for index in 0..<count where items[index].phase != .ended && items[index].phase != .cancelled {
            sumX += items[index].location.x
            sumY += items[index].location.y
            n += 1
        }
        if n == 0 {
            for index in 0..<count {
                sumX += items[index].location.x
                sumY += items[index].location.y
                n += 1
            }
        }
        return n == 0 ? .zero : GesturePoint(x: sumX / Double(n), y: sumY / Double(n))
    }

    /// The first two live touches, for two-finger measures (span and angle).
    func firstTwoLive() -> (GestureTouch, GestureTouch)? {
        let items = storage.items
        var first = -1
        for index in 0..<count where items[index].phase != .ended && items[index].phase != .cancelled {
            if first >= 0 { return (items[first], items[index]) }
            first = index
        }
        return nil
    }

    /// The largest distance a touch has moved from where it touched down.
    var largestMove: Double {
        let items = storage.items
        var largest = 0.0
        for index in 0..<count { largest = max(largest, items[index].distanceMoved) }
        return largest
    }
}

/// What a recognizer reports with its state: the fingers, where, how far and how fast,
/// in the surface's unit (``GestureSurface/Unit``).
public struct GestureValues: Hashable, Sendable {
    /// Fingers involved.
    public var fingers = 0
    /// Where the gesture is: the centroid of its touches (of the taps, for a tap).
    public var location = GesturePoint.zero
    /// How far the centroid moved since the gesture started (pans, swipes).
    public var translation = GesturePoint.zero
    /// The centroid's velocity, units per second (pans, swipes).
    public var velocity = GesturePoint.zero
    /// The span between two fingers over its value when the gesture began (pinches).
    public var scale = 1.0
    /// The change of scale per second (pinches).
    public var scaleVelocity = 0.0
    /// The angle turned since the gesture began, radians, clockwise on the surface
    /// (y grows downwards) positive (rotations).
    public var rotation = 0.0
    /// The change of rotation per second (rotations).
    public var rotationVelocity = 0.0
    /// Taps counted (taps).
    public var taps = 0
    /// The unit of locations, translations and velocities.
    public var unit = GestureSurface.Unit.deviceUnits

    public init() {}
}
