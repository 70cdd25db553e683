import RingLoop

/// A relative device's velocity, measured as libinput's documentation describes it
/// ("Velocity calculation"): each delta starts a tracker, and every tracker holds the
/// motion from its event to now. The velocity is taken over the trackers back as far as
/// the motion keeps its direction, its speed (a tracker whose velocity differs from the
/// newest's by more than ``maximumVelocityChange`` ends it) and its pace (a tracker older
/// than ``timeout`` ends it: a motion after a pause counts from the pause).
///
/// A fixed ring of ``capacity`` trackers: nothing is allocated per delta. Each tracker
/// keeps where the motion had got to at its event (the deltas summed), so a tracker's
/// motion to now is the newest position less its own, and a delta updates one tracker.
struct PointerVelocity: Sendable {
    /// Trackers kept (a power of two: the ring wraps with a mask).
    static let capacity = 16
    /// Trackers older than this (ns) do not count.
    static let timeout: Int64 = 1_000_000_000
    /// A change of speed beyond this (units per ms) ends the trackers counted. Measured
    /// against libinput 1.22 on the booted kernel (the Ultrathin and Saitek mice at their
    /// recorded pace, every motion side by side): any change ends them there. With 0 the
    /// chain's adaptive deltas and libinput's differ by at most 0.007 px (its printed
    /// precision); with 0.01 by up to 0.07 px, with 1 by up to 9.7 px.
    static let maximumVelocityChange = 0.0
    /// The time (ms) a motion after a pause, or the first one, is taken to have lasted:
    /// its start is unknown. libinput 1.22 measured on the booted kernel: the first
    /// motion of a mouse, 8/−13 counts, got the factor 0.376, the adaptive profile's mean
    /// from standstill to 15.26 units over 1 s.
    static let firstMotionInterval = 1000.0

    private struct Tracker {
        var x = 0.0
        var y = 0.0
        var time: Int64 = 0
        var directions: UInt8 = 0
    }

    private var trackers = InlineArray<16, Tracker>(repeating: Tracker())
    private var newest = 0
    private var count = 0
    /// The deltas summed since the last reset.
    private var x = 0.0
    private var y = 0.0

    /// Forgets every tracker.
    mutating func reset() {
        count = 0
        (x, y) = (0, 0)
    }

    /// Adds a delta (in the units velocities are measured in) at `time` (nanoseconds) and
    /// returns the velocity in units per millisecond.
    ///
    /// Any finite or infinite delta is taken without trapping: each is clamped to
    /// ``largestDelta`` (a non-number counts as none), and the sum is moved back to 0 (every
    /// tracker with it) once it passes ``rebaseDistance``, so one huge delta cannot spoil
    /// the precision of every later one, nor two make the sum infinite.
    mutating func add(dx: Double, dy: Double, at time: Int64) -> Double {
        let dx = Self.clamped(dx)
        let dy = Self.clamped(dy)
        if abs(x) > Self.rebaseDistance || abs(y) > Self.rebaseDistance { rebase() }
        x += dx
        y += dy
        newest = (newest + 1) & (Self.capacity - 1)
        let directions = Self.directions(dx: dx, dy: dy)
        trackers[newest] = Tracker(x: x, y: y, time: time, directions: directions)
        count = min(count + 1, Self.capacity)
        // The first motion: taken to have lasted ``firstMotionInterval``.
        guard count > 1 else { return (dx * dx + dy * dy).squareRoot() / Self.firstMotionInterval }
        return velocity(at: time, directions: directions)
    }

    /// The largest delta taken (units): a million, far beyond any device's motion in one
    /// event (``ServerWire/largestAmount`` bounds what an event server sends the same way).
    static let largestDelta = 1_000_000.0
    /// How far the summed deltas go before they are moved back to 0: far enough to happen
    /// rarely, near enough that a delta of 1/1000 unit keeps its precision.
    static let rebaseDistance = 1e9

    /// `delta` within ±``largestDelta`` (0 for NaN).
    static func clamped(_ delta: Double) -> Double {
        guard !delta.isNaN else { return 0 }
        return min(largestDelta, max(-largestDelta, delta))
    }

    /// Moves the summed deltas, and every tracker's position, back by the current sum:
    /// the motion between any two is unchanged.
    private mutating func rebase() {
        for index in 0..<Self.capacity {
            trackers[index].x -= x
            trackers[index].y -= y
        }
        (x, y) = (0, 0)
    }

    private func velocity(at time: Int64, directions: UInt8) -> Double {
        var result = 0.0
        var first: Double?
        let timeout = Self.timeout
        for offset in 1..<count {
            let tracker = self.tracker(offset)
            let elapsed = time - tracker.time
            let distance = ((x - tracker.x) * (x - tracker.x) + (y - tracker.y) * (y - tracker.y)).squareRoot()
            if elapsed > timeout || elapsed <= 0 {
                if offset == 1 { result = distance / Self.firstMotionInterval }
                break
            }
            let velocity = distance / (Double(elapsed) / 1e6)
            if tracker.directions & directions == 0 {
                if offset == 1 { result = velocity }
                break
            }
            if let first {
                if abs(velocity - first) > Self.maximumVelocityChange { break }
            } else {
                first = velocity
            }
            result = velocity
        }
        return result
    }

    private func tracker(_ offset: Int) -> Tracker { trackers[(newest - offset) & (Self.capacity - 1)] }

    /// The compass directions of a delta as bits (east 0, then counter-clockwise in eighths):
    /// the eighth it points into and the nearer neighbour, so that motions within about a
    /// quarter turn of each other share a bit. No bits for no motion. Found by comparing
    /// the sides with tan(22.5°) and tan(67.5°), without trigonometry.
    static func directions(dx: Double, dy: Double) -> UInt8 {
        guard dx != 0 || dy != 0 else { return 0 }
        let up = -dy
        let across = abs(dx)
        let along = abs(up)
        // The sixteenth of the quarter turn, 0…3, from the x axis.
        let inQuarter: Int
        if along < across * 0.414_213_562 {
            inQuarter = 0
        } else if along < across {
            inQuarter = 1
        } else if along < across * 2.414_213_562 {
            inQuarter = 2
        } else {
            inQuarter = 3
        }
        let sixteenth: Int
        switch (dx >= 0, up >= 0) {
        case (true, true): sixteenth = inQuarter
        case (false, true): sixteenth = 7 - inQuarter
        case (false, false): sixteenth = 8 + inQuarter
        case (true, false): sixteenth = 15 - inQuarter
        }
        let sector = sixteenth / 2
        let neighbour = sixteenth % 2 == 0 ? (sector + 7) % 8 : (sector + 1) % 8
        return UInt8(1 << sector) | UInt8(1 << neighbour)
    }
}
