/// The state of ``RingRunLoop/adaptiveSpinBeforeSleeping`` (loop thread): how far apart
/// work has been arriving, and how much of this second's budget the polling has used.
struct AdaptiveSpin {
    let window: UInt64
    let budget: Double
    /// A running average of the gaps between wake-ups that found work (nanoseconds);
    /// starts out "never", so a loop spins only once work comes fast.
    private var gap = UInt64.max
    private var lastArrival: UInt64 = 0
    private var secondStarted: UInt64 = 0
    private var spentThisSecond: UInt64 = 0
    /// Nanoseconds spent polling in all, for measurements.
    private(set) var totalSpent: UInt64 = 0

    init(window: UInt64, budget: Double) {
        self.window = window
        self.budget = budget
    }

    /// How long to poll before the next sleep.
    mutating func spin(at now: UInt64) -> UInt64 {
        if now &- secondStarted >= 1_000_000_000 {
            secondStarted = now
            spentThisSecond = 0
        }
        let allowance = UInt64(budget * 1e9)
        guard gap <= window, spentThisSecond < allowance else { return 0 }
        return min(window, allowance - spentThisSecond)
    }

    /// A wait that polled for `spun` nanoseconds of CPU time (as the wait core measured
    /// it) and then ended at `now`, with work (`found`) or not.
    mutating func record(spun: UInt64, found: Bool, at now: UInt64) {
        spentThisSecond &+= spun
        totalSpent &+= spun
        guard found else { return }
        if lastArrival != 0 {
            let latest = now &- lastArrival
            gap = gap == .max ? latest : gap - gap / 4 + latest / 4
        }
        lastArrival = now
    }
}
