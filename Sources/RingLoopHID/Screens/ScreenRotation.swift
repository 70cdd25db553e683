/// How a screen is turned from its panel's natural orientation, clockwise.
///
/// The rotation maps a device's normalized coordinates (after its calibration matrix) through
/// the matrix libinput's documentation gives for a touchscreen rotated that far clockwise
/// (`libinput_device_config_calibration_set_matrix`): 90° is `[0 −1 1; 1 0 0]`, 180° is
/// `[−1 0 1; 0 −1 1]`, 270° is `[0 1 0; −1 0 1]`.
public enum ScreenRotation: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The panel's natural orientation.
    case upright = 0
    /// Turned a quarter clockwise.
    case clockwise90 = 90
    /// Upside down.
    case upsideDown = 180
    /// Turned three quarters clockwise (a quarter counter-clockwise).
    case clockwise270 = 270

    /// The rotation of `degrees` clockwise (0, 90, 180 or 270).
    /// - Throws: ``ScreenSettingError/rotation(_:)`` for any other angle.
    public init(degrees: Int) throws(ScreenSettingError) {
        guard let rotation = ScreenRotation(rawValue: degrees) else { throw .rotation(String(degrees)) }
        self = rotation
    }

    /// The rotation written as degrees (`"90"`; a trailing `°` or `deg` is accepted).
    /// - Throws: ``ScreenSettingError/rotation(_:)`` for text that is not 0, 90, 180 or 270.
    public init(parsing text: some StringProtocol) throws(ScreenSettingError) {
        var digits = Substring(text.trimmingWhitespace)
        for suffix in ["°", "deg"] where digits.hasSuffix(suffix) { digits = digits.dropLast(suffix.count) }
        guard let degrees = Int(digits), let rotation = ScreenRotation(rawValue: degrees) else {
            throw .rotation(String(text))
        }
        self = rotation
    }

    /// The angle in degrees, clockwise.
    public var degrees: Int { rawValue }

    /// Whether the rotation swaps the panel's width and height.
    public var swapsAxes: Bool { self == .clockwise90 || self == .clockwise270 }

    /// libinput's matrix for a touchscreen rotated this far clockwise, on normalized
    /// coordinates.
    public var matrix: CalibrationMatrix {
        switch self {
        case .upright: .identity
        case .clockwise90: CalibrationMatrix(unchecked: 0, -1, 1, 1, 0, 0)
        case .upsideDown: CalibrationMatrix(unchecked: -1, 0, 1, 0, -1, 1)
        case .clockwise270: CalibrationMatrix(unchecked: 0, 1, 0, -1, 0, 1)
        }
    }

    public var description: String { String(rawValue) }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    var trimmingWhitespace: Substring {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return text
    }
}
