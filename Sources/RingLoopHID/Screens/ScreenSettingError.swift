/// A screen, rotation or calibration value that cannot be used, with what would be valid.
///
/// Every refusal names the value given and what is accepted, so a command-line option or a
/// settings-file line can be corrected without reading the source.
public enum ScreenSettingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A calibration matrix that does not have exactly six numbers.
    case matrixCount(Int)
    /// A calibration matrix value that is not a finite number (its text, or `nan`/`inf`).
    case matrixValue(String)
    /// A calibration matrix whose 2×2 part has a zero determinant: it folds the surface
    /// onto a line or a point, and no touch could be told from another.
    case singularMatrix(CalibrationMatrix)
    /// A rotation other than 0, 90, 180 or 270 degrees.
    case rotation(String)
    /// A screen size of zero or negative pixels, or one that is not a number.
    case screenSize(String)
    /// A physical size or a position that is not a pair of finite numbers.
    case pair(what: String, text: String)

    public var description: String {
        switch self {
        case .matrixCount(let count):
            return "a calibration matrix has 6 numbers \"a b c d e f\" (libinput's first two rows), not \(count)"
        case .matrixValue(let text):
            return "'\(text)' is not a finite number; a calibration matrix is 6 finite numbers such as \"1 0 0 0 1 0\""
        case .singularMatrix(let matrix):
            return
                "the calibration matrix \"\(matrix.text)\" is singular (a·e − b·d = 0: it maps the whole surface onto a line); "
                + "valid matrices have a non-zero determinant, such as the identity \"1 0 0 0 1 0\""
        case .rotation(let text):
            return "'\(text)' is not a rotation; valid rotations are 0, 90, 180 and 270 (degrees clockwise)"
        case .screenSize(let text):
            return
                "'\(text)' is not a screen size; a screen is WIDTHxHEIGHT in pixels as the app sees it, each 1 or more "
                + "(such as 1080x1920), optionally @ROTATION (0, 90, 180 or 270): 1080x1920@90"
        case .pair(let what, let text):
            return "'\(text)' is not a \(what); write two finite numbers such as 68x121 or 0,0"
        }
    }
}
