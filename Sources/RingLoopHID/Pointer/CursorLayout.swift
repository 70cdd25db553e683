/// The pointer's cursor on a layout of screens: one position that every relative device
/// moves, kept within the screens (a motion past an edge that another screen borders
/// goes onto it; elsewhere the cursor stops at the edge), warped by the app.
///
/// Positions are the layout's pixels (a screen's ``ScreenDescription/origin`` plus its
/// own); the cursor is reported in its screen's pixels, `0 ≤ x ≤ width − 1` and the same
/// for `y`. It starts in the middle of the first screen.
struct CursorLayout: Sendable {
    private struct Bounds {
        var minimumX: Double
        var minimumY: Double
        var maximumX: Double
        var maximumY: Double

        func contains(_ x: Double, _ y: Double) -> Bool { x >= minimumX && x <= maximumX && y >= minimumY && y <= maximumY }

        func clamped(_ x: Double, _ y: Double) -> (Double, Double) {
            (min(max(x, minimumX), maximumX), min(max(y, minimumY), maximumY))
        }
    }

    private var bounds: [Bounds] = []
    private var x = 0.0
    private var y = 0.0
    /// The screen the cursor is on (an index into the screens).
    private(set) var screen = 0

    /// A layout of `screens` (none: no cursor).
    init(screens: [ScreenDescription] = []) { setScreens(screens) }

    /// Whether there is a cursor (there are screens).
    var hasCursor: Bool { !bounds.isEmpty }

    /// Takes new screens: the cursor stays where it was when that is still on a screen,
    /// else it goes to the nearest point of one (the middle of the first when it had none).
    mutating func setScreens(_ screens: [ScreenDescription]) {
        let had = hasCursor
        bounds = screens.map {
            Bounds(
                minimumX: $0.origin.x, minimumY: $0.origin.y, maximumX: $0.origin.x + Double($0.width - 1),
                maximumY: $0.origin.y + Double($0.height - 1))
        }
        guard let first = bounds.first else { return }
        if had {
            place(x, y)
        } else {
            screen = 0
            x = ((first.minimumX + first.maximumX) / 2).rounded(.down)
            y = ((first.minimumY + first.maximumY) / 2).rounded(.down)
        }
    }

    /// The cursor, in its screen's pixels; `nil` without screens.
    var cursor: PointerCursor? {
        guard screen < bounds.count else { return nil }
        let bound = bounds[screen]
        return PointerCursor(location: ScreenPoint(x: x - bound.minimumX, y: y - bound.minimumY), screen: screen)
    }

    /// Moves the cursor by `dx`, `dy` pixels and returns where it is.
    mutating func move(dx: Double, dy: Double) -> PointerCursor? {
        guard !bounds.isEmpty else { return nil }
        // A non-number would stay in the cursor for good: it moves the cursor nowhere.
        place(x + (dx.isNaN ? 0 : dx), y + (dy.isNaN ? 0 : dy))
        return cursor
    }

    /// Puts the cursor at `location` of screen number `screen` (clamped to that screen).
    /// - Returns: Whether there is such a screen.
    mutating func warp(to location: ScreenPoint, screen index: Int) -> Bool {
        guard index >= 0, index < bounds.count, location.x.isFinite, location.y.isFinite else { return false }
        let bound = bounds[index]
        (x, y) = bound.clamped(bound.minimumX + location.x, bound.minimumY + location.y)
        screen = index
        return true
    }

    /// Puts the cursor at layout position (`newX`, `newY`): on the screen that holds it
    /// (the current one first), else at the nearest point of any screen (the current one
    /// when as near).
    private mutating func place(_ newX: Double, _ newY: Double) {
        if screen < bounds.count, bounds[screen].contains(newX, newY) {
            (x, y) = (newX, newY)
            return
        }
        for index in bounds.indices where bounds[index].contains(newX, newY) {
            (x, y, screen) = (newX, newY, index)
            return
        }
        var best = min(screen, bounds.count - 1)
        var (bestX, bestY) = bounds[best].clamped(newX, newY)
        var bestDistance = (bestX - newX) * (bestX - newX) + (bestY - newY) * (bestY - newY)
        for index in bounds.indices where index != best {
            let (clampedX, clampedY) = bounds[index].clamped(newX, newY)
            let distance = (clampedX - newX) * (clampedX - newX) + (clampedY - newY) * (clampedY - newY)
            if distance < bestDistance {
                (best, bestX, bestY, bestDistance) = (index, clampedX, clampedY, distance)
            }
        }
        (x, y, screen) = (bestX, bestY, best)
    }
}
