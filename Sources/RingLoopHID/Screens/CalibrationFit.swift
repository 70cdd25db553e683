/// Fits a calibration matrix from touches at known targets, as xinput_calibrator and
/// weston-touch-calibrator do: the user touches four points announced one after another;
/// the least-squares affine matrix that takes the device's normalized positions of those
/// touches to the targets' normalized positions is the device's calibration matrix
/// (libinput's, applied before the screen's rotation).
///
/// The targets are, in order, the top-left, top-right, bottom-right and bottom-left
/// corners of the screen as the app sees it, inset by a margin (a fraction of the
/// screen's width and height). Since the matrix applies before the rotation, each target
/// is taken back through the inverse of the rotation's matrix before the fit.
public struct CalibrationFit: Sendable, Hashable {
    /// The names of the four targets, in the order they are asked for.
    public static let targetNames = ["top-left", "top-right", "bottom-right", "bottom-left"]

    /// The fitted matrix.
    public var matrix: CalibrationMatrix
    /// Each touch's distance in pixels from its target once mapped through the fitted
    /// matrix and the screen's rotation.
    public var residuals: [Double]
    /// The largest of ``residuals``.
    public var residual: Double { residuals.max() ?? 0 }

    /// The targets on `screen`, in pixels as the app sees them.
    public static func targets(on screen: ScreenDescription, margin: Double) -> [ScreenPoint] {
        normalizedTargets(margin: margin).map { ScreenPoint(x: $0.x * Double(screen.width), y: $0.y * Double(screen.height)) }
    }

    /// The targets as fractions of the screen (0…1), in the order asked.
    static func normalizedTargets(margin: Double) -> [(x: Double, y: Double)] {
        [(margin, margin), (1 - margin, margin), (1 - margin, 1 - margin), (margin, 1 - margin)]
    }

    /// Why a fit was refused.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// Not four touches.
        case touchCount(Int)
        /// A margin outside 0…0.45.
        case margin(Double)
        /// Two touches too close together to be told apart (numbered from 1).
        case notDistinct(first: Int, second: Int)
        /// The touches lie on a line: no matrix maps them onto the targets' rectangle.
        case collinear
        /// A touch lands too far from its target (numbered from 1): the least-squares fit
        /// leaves a residual over the limit, and this touch is the one the other three
        /// disagree with; `pixels` is how far from its target their matrix puts it.
        case residualTooLarge(touch: Int, pixels: Double, limit: Double)

        public var description: String {
            switch self {
            case .touchCount(let count):
                return "a calibration takes 4 touches (top-left, top-right, bottom-right, bottom-left), not \(count)"
            case .margin(let margin):
                return "the margin \(margin) is not a fraction of the screen between 0 and 0.45 (0.1 is the default)"
            case .notDistinct(let first, let second):
                return
                    "touches \(first) (\(targetNames[first - 1])) and \(second) (\(targetNames[second - 1])) are at the same place; "
                    + "touch each target where it is shown"
            case .collinear:
                return "the four touches lie on a line; touch each target where it is shown"
            case .residualTooLarge(let touch, let pixels, let limit):
                let rounded = (pixels * 10).rounded() / 10
                return
                    "touch \(touch) (\(targetNames[touch - 1])) lands \(rounded) px from its target through the matrix the "
                    + "other three touches give (the limit is \(limit) px): it was probably not on its target; calibrate again"
            }
        }
    }

    /// Fits the matrix taking `touches` (the device's normalized positions, in target order)
    /// onto the targets of `screen` inset by `margin`.
    /// - Parameters:
    ///   - touches: the four touch-downs, normalized over the device's axes (0…1).
    ///   - screen: the screen the targets were shown on.
    ///   - margin: the targets' inset, a fraction of the screen (0…0.45).
    ///   - maximumResidual: the largest distance in pixels a touch may land from its target.
    ///   - minimumSeparation: the smallest distance between two touches, a fraction of the
    ///     device's range.
    /// - Throws: a ``Refusal`` naming the touch at fault.
    public static func fit(
        touches: [(x: Double, y: Double)], screen: ScreenDescription, margin: Double = 0.1, maximumResidual: Double = 15,
        minimumSeparation: Double = 0.05
    ) throws(Refusal) -> CalibrationFit {
        guard touches.count == 4 else { throw .touchCount(touches.count) }
        guard margin.isFinite, margin >= 0, margin <= 0.45 else { throw .margin(margin) }
        for first in 0..<4 {
            for second in (first + 1)..<4 {
                let dx = touches[first].x - touches[second].x
                let dy = touches[first].y - touches[second].y
                if (dx * dx + dy * dy).squareRoot() < minimumSeparation { throw .notDistinct(first: first + 1, second: second + 1) }
            }
        }
        // The targets before the rotation: the frame the calibration matrix maps into.
        let unrotate = screen.rotation.matrix.inverse!
        let goals = normalizedTargets(margin: margin).map { unrotate.apply(x: $0.x, y: $0.y) }
        // Normal equations AᵀA·m = Aᵀb, rows of A being (x, y, 1), once for each output.
        var normal = [[Double]](repeating: [0, 0, 0], count: 3)
        var rightX = [0.0, 0, 0]
        var rightY = [0.0, 0, 0]
        for (touch, goal) in zip(touches, goals) {
            let row = [touch.x, touch.y, 1]
            for i in 0..<3 {
                for j in 0..<3 { normal[i][j] += row[i] * row[j] }
                rightX[i] += row[i] * goal.x
                rightY[i] += row[i] * goal.y
            }
        }
        guard let first = solve(normal, rightX), let second = solve(normal, rightY) else { throw .collinear }
        let matrix = CalibrationMatrix(unchecked: first[0], first[1], first[2], second[0], second[1], second[2])
        guard !matrix.isSingular else { throw .collinear }
        let mapping = ScreenMapping(screen: screen, calibration: matrix)
        let targets = targets(on: screen, margin: margin)
        let residuals = zip(touches, targets).map { touch, target in
            let point = mapping.location(normalizedX: touch.x, normalizedY: touch.y)
            let dx = point.x - target.x
            let dy = point.y - target.y
            return (dx * dx + dy * dy).squareRoot()
        }
        if residuals.contains(where: { $0 > maximumResidual }) {
            let (touch, pixels) = outlier(touches: touches, goals: goals, screen: screen, targets: targets)
            throw .residualTooLarge(touch: touch + 1, pixels: pixels, limit: maximumResidual)
        }
        return CalibrationFit(matrix: matrix, residuals: residuals)
    }

    /// The touch that was most likely not on its target, and how far from it the other
    /// three put it.
    ///
    /// Four touches fit an affine matrix (six numbers) with two degrees of freedom left, and
    /// a least-squares fit spreads one bad touch's error equally over all four; so each touch
    /// is left out in turn, the matrix through the other three is solved exactly, and the
    /// touch whose leaving out gives the matrix closest to axis-aligned (a panel's matrix
    /// scales, shifts, flips or swaps its axes, and skews little) is the one named.
    static func outlier(
        touches: [(x: Double, y: Double)], goals: [(x: Double, y: Double)], screen: ScreenDescription, targets: [ScreenPoint]
    ) -> (touch: Int, pixels: Double) {
        var best: (touch: Int, skew: Double, pixels: Double)?
        for left in 0..<4 {
            let kept = (0..<4).filter { $0 != left }
            let rows = kept.map { [touches[$0].x, touches[$0].y, 1.0] }
            guard let first = solve(rows, kept.map { goals[$0].x }), let second = solve(rows, kept.map { goals[$0].y }) else {
                continue
            }
            let matrix = CalibrationMatrix(unchecked: first[0], first[1], first[2], second[0], second[1], second[2])
            let diagonal = abs(matrix.a) + abs(matrix.e)
            let crossed = abs(matrix.b) + abs(matrix.d)
            let skew = min(crossed / max(diagonal, 1e-12), diagonal / max(crossed, 1e-12))
            let point = ScreenMapping(screen: screen, calibration: matrix).location(
                normalizedX: touches[left].x, normalizedY: touches[left].y)
            let pixels =
                ((point.x - targets[left].x) * (point.x - targets[left].x) + (point.y - targets[left].y) * (point.y - targets[left].y))
                .squareRoot()
            if best == nil || skew < best!.skew { best = (left, skew, pixels) }
        }
        return best.map { ($0.touch, $0.pixels) } ?? (0, 0)
    }

    /// Solves the 3×3 system `matrix·x = right` by Gaussian elimination with partial
    /// pivoting; `nil` when the system is singular.
    static func solve(_ matrix: [[Double]], _ right: [Double]) -> [Double]? {
        var rows = (0..<3).map { matrix[$0] + [right[$0]] }
        let scale = matrix.joined().map(abs).max() ?? 0
        guard scale > 0 else { return nil }
        for column in 0..<3 {
            let pivot = (column..<3).max { abs(rows[$0][column]) < abs(rows[$1][column]) }!
            guard abs(rows[pivot][column]) > 1e-12 * scale else { return nil }
            rows.swapAt(column, pivot)
            for row in 0..<3 where row != column {
                let factor = rows[row][column] / rows[column][column]
                for index in column..<4 { rows[row][index] -= factor * rows[column][index] }
            }
        }
        return (0..<3).map { rows[$0][3] / rows[$0][$0] }
    }
}
