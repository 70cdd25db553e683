/// How many log lines of one kind may go out: `burst` a window (a second by default);
/// the lines past that are counted, and the next line that goes out says how many were
/// held back. For lines another process can cause at will (a peer that breaks a port's
/// protocol on every connection), so that it cannot flood the log.
package struct LogBudget {
    package let burst: Int
    package let window: Duration
    private var windowStart = MonotonicInstant(nanoseconds: 0)
    private var spent = 0
    private var held = 0

    package init(burst: Int, window: Duration = .seconds(1)) {
        self.burst = burst
        self.window = window
    }

    /// Whether a line may go out at `now`, and how many lines were held back since the
    /// last that went out (`nil`: hold this one back too).
    package mutating func admit(at now: MonotonicInstant = .now) -> Int? {
        if now - windowStart >= window {
            windowStart = now
            spent = 0
        }
        guard spent < burst else {
            held += 1
            return nil
        }
        spent += 1
        defer { held = 0 }
        return held
    }

    /// `line` as it goes out after `held` lines were held back.
    package static func line(_ line: String, afterHolding held: Int) -> String {
        held > 0 ? "\(line) (\(held) such lines held back before this one)" : line
    }
}
