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
                        sleep.finish(throwing: nil)
                    }
                    guard sleep.begin(continuation, timer) else { return }
                    loop.add(timer, to: .common)
                    if !loop.isOnLoopThread { loop.wakeUp() }
                }
            },
            onCancel: {
                sleep.finish(throwing: CancellationError())
            }, isolation: isolation)
    }

    /// One sleep's hand-over between the sleeping task, the loop's timer and a
    /// cancellation, whichever comes first resuming the task exactly once.
    final class Sleep: Sendable {
        private struct State {
            var continuation: UnsafeContinuation<Void, any Error>?
            var timer: LoopTimer?
            var finished = false
            var error: (any Error)?
        }
        private let state = ThreadLock(State())

        /// Records the waiting task; returns `false` (having resumed it) when a
        /// cancellation came first.
        func begin(_ continuation: UnsafeContinuation<Void, any Error>, _ timer: LoopTimer) -> Bool {
            let earlier: (any Error)?? = state.withLock { state in
                if state.finished { return .some(state.error) }
                state.continuation = continuation
                state.timer = timer
                return .none
            }
            guard case .some(let error) = earlier else { return true }
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            return false
        }

        /// Ends the sleep: `nil` when the timer fired, an error when it was cancelled
        /// (which also removes the timer from its loop).
        func finish(throwing error: (any Error)?) {
            let (continuation, timer) = state.withLock { state -> (UnsafeContinuation<Void, any Error>?, LoopTimer?) in
                guard !state.finished else { return (nil, nil) }
                state.finished = true
                state.error = error
                defer { (state.continuation, state.timer) = (nil, nil) }
                return (state.continuation, state.timer)
            }
            if error != nil { timer?.invalidate() }
            guard let continuation else { return }
            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
        }
    }
}

extension RingRunLoop {
    /// A clock whose sleeps are this loop's timers (see ``LoopClock``).
    public var clock: LoopClock { LoopClock(loop: self) }
}
