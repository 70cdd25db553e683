/// libinput's calibration matrix: the first two rows `[a b c; d e f]` of a 3×3 affine
/// matrix applied to a device's **normalized** coordinates (0…1 over each axis's range,
/// the origin at the axes' minimum), as `libinput_device_config_calibration_set_matrix`
/// documents it:
///
/// ```
/// x′ = a·x + b·y + c
/// y′ = d·x + e·y + f
/// ```
///
/// The translation `c`, `f` is in device widths and heights (`c = 1` moves one width to
/// the right). It corrects the panel in its own frame; a screen's rotation
/// (``ScreenRotation/matrix``) comes after it. The same six numbers are written in udev's
/// `LIBINPUT_CALIBRATION_MATRIX` property and in the per-device settings file.
public struct CalibrationMatrix: Sendable, Hashable, CustomStringConvertible {
    public var a: Double
    public var b: Double
    public var c: Double
    public var d: Double
    public var e: Double
    public var f: Double

    /// The matrix that changes nothing, `1 0 0 0 1 0`.
    public static let identity = CalibrationMatrix(unchecked: 1, 0, 0, 0, 1, 0)

    /// A matrix from six numbers, not checked (for constants; use ``init(_:)`` for values
    /// from outside).
    init(unchecked a: Double, _ b: Double, _ c: Double, _ d: Double, _ e: Double, _ f: Double) {
        self.a = a
        self.b = b
        self.c = c
        self.d = d
        self.e = e
        self.f = f
    }

    /// A matrix from its six values in libinput's order `a b c d e f`.
    /// - Throws: ``ScreenSettingError`` when there are not six values, one is not finite,
    ///   or the matrix is singular.
    public init(_ values: [Double]) throws(ScreenSettingError) {
        guard values.count == 6 else { throw .matrixCount(values.count) }
        for value in values where !value.isFinite { throw .matrixValue(String(value)) }
        self.init(unchecked: values[0], values[1], values[2], values[3], values[4], values[5])
        guard !isSingular else { throw .singularMatrix(self) }
    }

    /// A matrix written as udev's property and libinput's tools write it: six numbers
    /// separated by spaces, tabs or commas (`"1 0 0 0 1 0"`).
    /// - Throws: ``ScreenSettingError`` as ``init(_:)``, or for a word that is not a number.
    public init(parsing text: some StringProtocol) throws(ScreenSettingError) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," || $0 == "\r" })
        var values: [Double] = []
        for word in words {
            guard let value = Double(word), value.isFinite else { throw .matrixValue(String(word)) }
            values.append(value)
        }
        try self.init(values)
    }

    /// The six values in libinput's order.
    public var values: [Double] { [a, b, c, d, e, f] }

    /// The determinant of the linear part, `a·e − b·d`.
    public var determinant: Double { a * e - b * d }

    /// Whether the matrix folds the surface onto a line or a point (its determinant is
    /// zero, or too small to be told from zero: under 1e-9 of its largest linear value).
    public var isSingular: Bool {
        let scale = max(abs(a), abs(b), abs(d), abs(e))
        return scale == 0 || abs(determinant) <= 1e-9 * scale * scale
    }

    /// Where the matrix takes the point (`x`, `y`).
    @inline(__always)
    public func apply(x: Double, y: Double) -> (x: Double, y: Double) {
        (a * x + b * y + c, d * x + e * y + f)
    }

    /// This matrix applied after `first`: the matrix of `self(first(p))`.
    public func after(_ first: CalibrationMatrix) -> CalibrationMatrix {
        CalibrationMatrix(
            unchecked: a * first.a + b * first.d, a * first.b + b * first.e, a * first.c + b * first.f + c,
            d * first.a + e * first.d, d * first.b + e * first.e, d * first.c + e * first.f + f)
    }

    /// The matrix that undoes this one, or `nil` when it is singular.
    public var inverse: CalibrationMatrix? {
        guard !isSingular else { return nil }
        let det = determinant
        let ia = e / det
        let ib = -b / det
        let id = -d / det
        let ie = a / det
        return CalibrationMatrix(unchecked: ia, ib, -(ia * c + ib * f), id, ie, -(id * c + ie * f))
    }

    /// The six values as libinput's tools and udev's property write them (`"1 0 0 0 1 0"`;
    /// shortest round-tripping decimals).
    public var text: String { values.map(Self.shortest).joined(separator: " ") }

    public var description: String { text }

    /// `value` in the shortest form that reads back equal (`1`, `-0.5`, `0.123456789`).
    static func shortest(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
