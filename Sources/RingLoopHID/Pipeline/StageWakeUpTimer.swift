import RingLoop

/// A timer that only wakes the loop, for a stage that does its work at BeforeWaiting but
/// must be evaluated by a deadline (a recognizer's time limit): the loop wakes, passes
/// through BeforeWaiting again, and the stage looks at the time there. In the common
/// modes; re-armed only when the deadline changes. Client loop thread only.
final class StageWakeUpTimer {
    private let timer: LoopTimer
    private var armed: MonotonicInstant?

    init(loop: RingRunLoop) {
        // A year's interval: it never repeats before it is armed again.
        timer = LoopTimer(fireDate: .distantFuture, interval: .seconds(86_400 * 365)) { _ in }
        loop.add(timer, to: .common)
    }

    /// Wakes the loop at `deadline` (`nil`: not at all).
    func arm(at deadline: MonotonicInstant?) {
        guard deadline != armed else { return }
        armed = deadline
        timer.nextFireDate = deadline ?? .distantFuture
    }

    func invalidate() {
        timer.invalidate()
        armed = nil
    }
}
