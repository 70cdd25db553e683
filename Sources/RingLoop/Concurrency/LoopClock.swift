import Synchronization

extension MonotonicInstant: InstantProtocol {}

/// A clock whose sleeps are timers of a run loop: `Task.sleep(for:clock:)` and
/// `clock.sleep(until:)` wait in the loop's own wait, beside its sources and ports.
///
/// Instants are ``MonotonicInstant``s (`CLOCK_MONOTONIC`), durations are Swift's
/// `Duration`, so a duration measured with `ContinuousClock` or `SuspendingClock` means
/// the same here. A sleep is a one-shot ``LoopTimer`` in the loop's common modes:
/// - its tolerance coalesces wake-ups as ``LoopTimer/tolerance`` does (`nil`: none);
/// - with `precise: true` the loop wakes ``RingRunLoop/preciseSpinWindow`` early and spins
///   to the deadline;
/// - cancelling the sleeping task removes the timer from the loop at once and the sleep
///   throws `CancellationError`.
///
/// The sleeping task resumes on its own executor: on the loop itself when the task runs
/// there (an actor on the loop, `Task(executorPreference: loop)`), with no thread hop.
///
/// ```swift
/// let clock = LoopClock(loop: worker.loop)
/// try await clock.sleep(for: .milliseconds(5))
/// try await Task.sleep(for: .milliseconds(5), tolerance: .milliseconds(1), clock: clock)
/// ```
public struct LoopClock: Clock, Sendable {
    public typealias Instant = MonotonicInstant
    public typealias Duration = Swift.Duration

    /// The loop whose timers serve the sleeps; it must be running for sleeps to end.
    public let loop: RingRunLoop
    /// Whether sleeps use precise-mode timers.
    public let isPrecise: Bool

    /// A clock on `loop`; `precise` makes every sleep a precise-mode timer.
    public init(loop: RingRunLoop, precise: Bool = false) {
        self.loop = loop
        self.isPrecise = precise
    }

    public var now: MonotonicInstant { .now }

    /// One nanosecond: instants are nanoseconds of `CLOCK_MONOTONIC`.
    public var minimumResolution: Swift.Duration { .nanoseconds(1) }

    /// Suspends the calling task for `duration` (see ``sleep(until:tolerance:)``).
    public nonisolated(nonsending) func sleep(for duration: Swift.Duration, tolerance: Swift.Duration? = nil) async throws {
        try await sleep(until: .now + duration, tolerance: tolerance)
    }

    /// Suspends the calling task until `deadline` (on the loop's timer) or until it is
    /// cancelled, which throws `CancellationError`.
    ///
    /// The sleep runs on the caller's executor (`nonisolated(nonsending)`): an actor on a
    /// loop that sleeps on that loop's clock never passes through Swift's global pool.
    public nonisolated(nonsending) func sleep(until deadline: MonotonicInstant, tolerance: Swift.Duration? = nil) async throws {
        try await sleep(until: deadline, tolerance: tolerance, isolation: #isolation)
    }

    /// The sleep, on `isolation`'s executor throughout: the operation closure captures the
    /// isolation, so it does not hop to the generic executor, as a nonisolated async closure
    /// would.
    private func sleep(
        until deadline: MonotonicInstant, tolerance: Swift.Duration?, isolation: isolated (any Actor)?
    ) async throws {
        let sleep = Sleep()
        let loop = self.loop
        let precise = isPrecise
        try await withTaskCancellationHandler(
            operation: {
                _ = isolation
                try await withUnsafeThrowingContinuation(isolation: isolation) { (continuation: UnsafeContinuation<Void, any Error>) in
                    let timer = LoopTimer(fireDate: deadline, tolerance: tolerance ?? .zero, precise: precise) { _ in
                        sleep.finish(cancelled: false)
                    }
                    guard sleep.begin(continuation, timer) else { return }
                    loop.add(timer, to: .common)
                    if !loop.isOnLoopThread { loop.wakeUp() }
                }
            },
            onCancel: {
                sleep.finish(cancelled: true)
            }, isolation: isolation)
    }

    /// One sleep's hand-over between the sleeping task, the loop's timer and a
    /// cancellation, whichever comes first resuming the task exactly once.
    final class Sleep: @unchecked Sendable {
        // @unchecked: `continuation` and `timer` are written by `begin` before it publishes
        // `state` (releasing), and taken only by the one caller that moves `state` from
        // armed to finished (acquiring).
        private var continuation: UnsafeContinuation<Void, any Error>?
        private var timer: LoopTimer?
        private let state = Atomic<UInt8>(State.idle)

        private enum State {
            static let idle: UInt8 = 0
            static let armed: UInt8 = 1
            static let finished: UInt8 = 2
        }

        /// Records the waiting task; returns `false` (having resumed it with
        /// `CancellationError`) when a cancellation came first.
        func begin(_ continuation: UnsafeContinuation<Void, any Error>, _ timer: LoopTimer) -> Bool {
            self.continuation = continuation
            self.timer = timer
            let (armed, _) = state.compareExchange(
                expected: State.idle, desired: State.armed, ordering: .acquiringAndReleasing)
            if armed { return true }
            (self.continuation, self.timer) = (nil, nil)
            continuation.resume(throwing: CancellationError())
            return false
        }

        /// Ends the sleep: the timer fired (`cancelled` false), or the task was cancelled,
        /// which also takes the timer off its loop. Later calls do nothing.
        func finish(cancelled: Bool) {
            guard state.exchange(State.finished, ordering: .acquiringAndReleasing) == State.armed else { return }
            let continuation = self.continuation
            let timer = self.timer
            (self.continuation, self.timer) = (nil, nil)
            if cancelled {
                timer?.invalidate()
                continuation?.resume(throwing: CancellationError())
            } else {
                continuation?.resume()
            }
        }
    }
}

extension RingRunLoop {
    /// A clock whose sleeps are this loop's timers (see ``LoopClock``).
    public var clock: LoopClock { LoopClock(loop: self) }
}
