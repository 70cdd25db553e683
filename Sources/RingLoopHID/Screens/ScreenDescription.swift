/// A screen an app draws on, as the app sees it.
///
/// The size is in pixels **after** the rotation: a 1920×1080 panel mounted in portrait is
/// described as `1080x1920@90`. The rotation is clockwise, from the panel's (and its touch
/// sensor's) natural orientation. Several screens may form a layout, each at its
/// ``origin``; a device's locations stay in its own screen's pixels (add ``origin`` for the
/// layout's).
public struct ScreenDescription: Sendable, Hashable, CustomStringConvertible {
    /// The screen's name, which devices are assigned by (a connector name such as
    /// `HDMI-A-1` when the screen is an output; `"screen"` when none is given).
    public var name: String
    /// Width in pixels as the app sees it (after rotation), at least 1.
    public private(set) var width: Int
    /// Height in pixels as the app sees it (after rotation), at least 1.
    public private(set) var height: Int
    /// How the screen is turned from its panel's natural orientation, clockwise.
    public var rotation: ScreenRotation
    /// Width and height of the visible area in millimetres, as the app sees it, when known.
    public var physicalSize: (width: Double, height: Double)? {
        get { physicalWidth.map { ($0, physicalHeight) } }
        set {
            physicalWidth = newValue?.width
            physicalHeight = newValue?.height ?? 0
        }
    }
    private var physicalWidth: Double?
    private var physicalHeight: Double = 0
    /// The screen's top-left corner in a layout of screens, in pixels.
    public var origin: ScreenPoint

    /// A screen of `width`×`height` pixels as the app sees it.
    /// - Throws: ``ScreenSettingError/screenSize(_:)`` when a side is under 1 pixel.
    public init(
        name: String = "screen", width: Int, height: Int, rotation: ScreenRotation = .upright,
        physicalSize: (width: Double, height: Double)? = nil, origin: ScreenPoint = ScreenPoint(x: 0, y: 0)
    ) throws(ScreenSettingError) {
        guard width >= 1, height >= 1 else { throw .screenSize("\(width)x\(height)") }
        if let physicalSize {
            guard physicalSize.width.isFinite, physicalSize.height.isFinite, physicalSize.width > 0, physicalSize.height > 0
            else { throw .pair(what: "physical size in millimetres", text: "\(physicalSize.width)x\(physicalSize.height)") }
        }
        self.name = name
        self.width = width
        self.height = height
        self.rotation = rotation
        self.physicalWidth = physicalSize?.width
        self.physicalHeight = physicalSize?.height ?? 0
        self.origin = origin
    }

    /// A screen written as `--screen` takes it: `WIDTHxHEIGHT[@ROTATION]` (`1080x1920@90`).
    /// - Throws: ``ScreenSettingError`` naming what is wrong and what is valid.
    public init(parsing text: some StringProtocol, name: String = "screen") throws(ScreenSettingError) {
        let trimmed = text.trimmingWhitespace
        let parts = trimmed.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let rotation = parts.count == 2 ? try ScreenRotation(parsing: parts[1]) : .upright
        let sides = parts[0].split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, let width = Int(sides[0]), let height = Int(sides[1]), width >= 1, height >= 1 else {
            throw .screenSize(String(trimmed))
        }
        try self.init(name: name, width: width, height: height, rotation: rotation)
    }

    /// The size as `--screen` takes it (`1080x1920@90`; no `@` when upright).
    public var sizeText: String { "\(width)x\(height)" + (rotation == .upright ? "" : "@\(rotation.degrees)") }

    public var description: String { "\(name) \(sizeText)" }

    public static func == (lhs: ScreenDescription, rhs: ScreenDescription) -> Bool {
        lhs.name == rhs.name && lhs.width == rhs.width && lhs.height == rhs.height && lhs.rotation == rhs.rotation
            && lhs.physicalWidth == rhs.physicalWidth && lhs.physicalHeight == rhs.physicalHeight && lhs.origin == rhs.origin
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(width)
        hasher.combine(height)
        hasher.combine(rotation)
        hasher.combine(origin)
    }
}

/// Parses "AxB" or "A,B" as two finite numbers.
func parsePair(_ text: some StringProtocol, what: String) throws(ScreenSettingError) -> (Double, Double) {
    let trimmed = text.trimmingWhitespace
    let parts = trimmed.split(whereSeparator: { $0 == "x" || $0 == "," || $0 == " " })
    guard parts.count == 2, let first = Double(parts[0]), let second = Double(parts[1]), first.isFinite, second.isFinite else {
        throw .pair(what: what, text: String(trimmed))
    }
    return (first, second)
}
