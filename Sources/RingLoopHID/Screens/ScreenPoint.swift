/// A location in a screen's pixels, as the app draws (after the screen's rotation), with
/// sub-pixel precision: (0, 0) is the top-left corner of the top-left pixel and
/// (width, height) the bottom-right corner of the bottom-right one.
public struct ScreenPoint: Sendable, Hashable, CustomStringConvertible {
    /// Pixels from the screen's left edge.
    public var x: Double
    /// Pixels from the screen's top edge.
    public var y: Double

    /// The location `x` pixels from the left edge and `y` from the top.
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public var description: String { "(\(x), \(y))" }

    /// ` → (540.0, 960.0) px` for an event's text; nothing without a location.
    static func shown(_ location: ScreenPoint?) -> String {
        location.map { " → (\(TextFormat.fixed($0.x, 1)), \(TextFormat.fixed($0.y, 1))) px" } ?? ""
    }
}
