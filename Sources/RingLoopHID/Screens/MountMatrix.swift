/// How a motion sensor sits in its device: the 3×3 matrix of udev's `ACCEL_MOUNT_MATRIX`
/// (systemd's `60-sensor.hwdb`, read by iio-sensor-proxy), which turns the sensor's own
/// axes into the device's.
///
/// Written as udev writes it, three rows of three numbers, rows separated by `;` and
/// numbers by `,` (`0, 1, 0; -1, 0, 0; 0, 0, 1`); a row gives one corrected axis from
/// the raw ones, so with rows `(x1, y1, z1)`, `(x2, y2, z2)`, `(x3, y3, z3)` the corrected
/// acceleration is `(x1·x + y1·y + z1·z, x2·x + y2·y + z2·z, x3·x + y3·y + z3·z)`, as
/// iio-sensor-proxy applies it. The identity (`1, 0, 0; 0, 1, 0; 0, 0, 1`) changes
/// nothing.
public struct MountMatrix: Sendable, Hashable, CustomStringConvertible {
    // The rows as scalars: `apply` runs on every motion sample (no array reads there).
    private let first: SIMD3<Double>
    private let second: SIMD3<Double>
    private let third: SIMD3<Double>

    /// The nine numbers, row by row.
    public var rows: [[Double]] { [first, second, third].map { [$0.x, $0.y, $0.z] } }

    /// The identity: the sensor's axes are the device's.
    public static let identity = MountMatrix(uncheckedRows: [[1, 0, 0], [0, 1, 0], [0, 0, 1]])

    private init(uncheckedRows rows: [[Double]]) {
        first = SIMD3(rows[0])
        second = SIMD3(rows[1])
        third = SIMD3(rows[2])
    }

    /// Reads `x1, y1, z1; x2, y2, z2; x3, y3, z3`, or says what would be valid (nine
    /// finite numbers in three rows, not all of a row zero).
    public init(parsing text: some StringProtocol) throws(DeviceSettingValueError) {
        let rowTexts = text.split(separator: ";", omittingEmptySubsequences: false)
        let valid =
            "a mount matrix is three rows of three numbers, rows separated by ';', as udev's ACCEL_MOUNT_MATRIX: 1, 0, 0; 0, 1, 0; 0, 0, 1"
        guard rowTexts.count == 3 else { throw DeviceSettingValueError("'\(text)' has \(rowTexts.count) row(s); \(valid)") }
        var rows: [[Double]] = []
        for rowText in rowTexts {
            let words = rowText.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace }
            let numbers = words.compactMap { Double($0) }.filter(\.isFinite)
            guard words.count == 3, numbers.count == 3 else {
                throw DeviceSettingValueError("'\(rowText.trimmingWhitespace)' is not three numbers; \(valid)")
            }
            guard numbers.contains(where: { $0 != 0 }) else {
                throw DeviceSettingValueError(
                    "the row '\(rowText.trimmingWhitespace)' is all zeros (an axis would read 0 always); \(valid)")
            }
            rows.append(numbers)
        }
        self.init(uncheckedRows: rows)
    }

    /// `vector` in the device's axes.
    @inline(__always)
    public func apply(_ vector: MotionVector) -> MotionVector {
        let raw = SIMD3(vector.x, vector.y, vector.z)
        return MotionVector(x: (first * raw).sum(), y: (second * raw).sum(), z: (third * raw).sum())
    }

    /// As udev writes it: `0, 1, 0; -1, 0, 0; 0, 0, 1`.
    public var description: String {
        rows.map { $0.map(CalibrationMatrix.shortest).joined(separator: ", ") }.joined(separator: "; ")
    }
}
