/// How one device's positions become locations on its screen: normalized (0…1 over the
/// axes' ranges) → the device's calibration matrix → the screen's rotation → pixels.
///
/// The three steps are affine, so they are composed once into one matrix when the mapping
/// is made and each location costs four multiplications and four additions — no
/// allocation, no branch. The composition is exact up to rounding (within 1e-12 of the
/// step-by-step result over a unit square).
public struct ScreenMapping: Sendable, Hashable {
    /// The screen the locations are in.
    public let screen: ScreenDescription
    /// The device's calibration, applied before the rotation.
    public let calibration: CalibrationMatrix
    /// Normalized device coordinates → screen pixels.
    let toPixels: CalibrationMatrix

    /// The mapping of a device with `calibration` onto `screen`.
    public init(screen: ScreenDescription, calibration: CalibrationMatrix = .identity) {
        self.screen = screen
        self.calibration = calibration
        let rotated = screen.rotation.matrix.after(calibration)
        let scale = CalibrationMatrix(unchecked: Double(screen.width), 0, 0, 0, Double(screen.height), 0)
        self.toPixels = scale.after(rotated)
    }

    /// The location of a position given normalized over the device's axes (0…1 from the
    /// axes' minimum, as ``Contact/normalizedX`` and ``PenEvent/normalizedX`` are).
    @inline(__always)
    public func location(normalizedX: Double, normalizedY: Double) -> ScreenPoint {
        let point = toPixels.apply(x: normalizedX, y: normalizedY)
        return ScreenPoint(x: point.x, y: point.y)
    }

    /// The normalized position (after calibration and rotation: 0…1 across the screen as
    /// the app sees it) of a device's normalized position.
    public func screenNormalized(normalizedX: Double, normalizedY: Double) -> (x: Double, y: Double) {
        screen.rotation.matrix.after(calibration).apply(x: normalizedX, y: normalizedY)
    }
}
