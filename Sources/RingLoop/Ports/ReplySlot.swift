import Dispatch

/// Where a request's reply is handed over, once: to the waiting sender, or dropped when it
/// gave up. The sender waits either blocked (a thread without a loop to run) or running
/// its own loop in a reply mode, as `CFMessagePortSendRequest` does; the slot wakes
/// whichever it is.
final class ReplySlot: Sendable {
    private enum Outcome {
        case waiting
        case replied([UInt8])
        case failed(MessagePortError)
        case abandoned
    }

    /// What wakes a sender that runs its loop while it waits.
    private struct LoopWaker {
        let source: LoopSource
        let loop: RingRunLoop
    }

    private struct State {
        var outcome = Outcome.waiting
        var waker: LoopWaker?
        var onSettle: (@Sendable () -> Void)?
        /// What wakes a sender blocked without a loop: made by the first such wait only
        /// (a sender that runs its loop, the common case, makes none).
        var blocked: DispatchSemaphore?
    }

    private let state = ThreadLock(State())

    /// Hands over the callback's reply; dropped if the sender gave up.
    func fulfil(_ reply: [UInt8]) { settle(.replied(reply)) }

    /// Fails the request (the port went away, or refused it).
    func fail(_ error: MessagePortError) { settle(.failed(error)) }

    /// Whether the reply (or a failure) has come.
    var isSettled: Bool {
        state.withLock {
            if case .waiting = $0.outcome { return false }
            return true
        }
    }

    private func settle(_ outcome: Outcome) {
        let (delivered, waker, onSettle, blocked) = state.withLock {
            state -> (Bool, LoopWaker?, (@Sendable () -> Void)?, DispatchSemaphore?) in
            guard case .waiting = state.outcome else { return (false, nil, nil, nil) }
            state.outcome = outcome
            defer { state.onSettle = nil }
            return (true, state.waker, state.onSettle, state.blocked)
        }
        guard delivered else { return }
        blocked?.signal()
        if let waker {
            waker.source.signal()
            waker.loop.wakeUp()
        }
        onSettle?()
    }

    /// Calls `body` once the reply (or a failure) comes, on the thread that settles the
    /// slot; at once when it has come already. For a sender that does not wait.
    func whenSettled(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard case .waiting = state.outcome else { return true }
            state.onSettle = body
            return false
        }
        if now { body() }
    }

    /// Waits until `deadline` for the reply: blocked when `replyMode` is `nil`, otherwise
    /// running the calling thread's loop in `replyMode` (its timers, sources and
    /// observers in that mode run meanwhile; other modes' wait).
    func wait(
        until deadline: MonotonicInstant, replyMode: RingRunLoop.Mode?, name: String
    ) throws(MessagePortError)
        -> [UInt8]
    {
        if let replyMode {
            runLoop(in: replyMode, until: deadline)
        } else {
            block(until: deadline)
        }
        return try finish(name: name)
    }

    /// Blocks the thread until the reply (or a failure) comes or `deadline`.
    func block(until deadline: MonotonicInstant) {
        let arrived = state.withLock { state -> DispatchSemaphore? in
            guard case .waiting = state.outcome else { return nil }
            if state.blocked == nil { state.blocked = DispatchSemaphore(value: 0) }
            return state.blocked
        }
        guard let arrived else { return }
        let nanoseconds = max(0, Int64(clamping: deadline.nanoseconds) - Int64(clamping: MonotonicInstant.now.nanoseconds))
        _ = arrived.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds)))
    }

    /// The reply, or why there is none: the wait is over, a reply coming later is dropped.
    func finish(name: String) throws(MessagePortError) -> [UInt8] {
        let outcome = state.withLock { state -> Outcome in
            if case .waiting = state.outcome { state.outcome = .abandoned }
            state.waker = nil
            state.onSettle = nil
            return state.outcome
        }
        switch outcome {
        case .replied(let reply): return reply
        case .failed(let error): throw error
        case .waiting, .abandoned: throw .replyTimeout(name)
        }
    }

    /// Waits until `deadline` for the reply running the calling thread's loop in `mode`,
    /// where `source` (kept there between requests by the caller, so a request adds and
    /// removes nothing) is signalled when the reply comes.
    func wait(
        until deadline: MonotonicInstant, running mode: RingRunLoop.Mode, signalling source: LoopSource, name: String
    ) throws(MessagePortError) -> [UInt8] {
        let loop = RingRunLoop.current
        state.withLock { $0.waker = LoopWaker(source: source, loop: loop) }
        while !isSettled, MonotonicInstant.now < deadline {
            if loop.run(mode: mode, until: deadline, returnAfterSourceHandled: true) == .failed { break }
        }
        return try finish(name: name)
    }

    private func runLoop(in mode: RingRunLoop.Mode, until deadline: MonotonicInstant) {
        let loop = RingRunLoop.current
        // A source in the reply mode, signalled when the reply comes: it keeps the mode
        // alive and ends the run that waits for it.
        let source = LoopSource(order: Int.min, label: "message port reply") {}
        defer { source.invalidate() }
        state.withLock { $0.waker = LoopWaker(source: source, loop: loop) }
        loop.add(source, to: mode)
        while !isSettled, MonotonicInstant.now < deadline {
            if loop.run(mode: mode, until: deadline, returnAfterSourceHandled: true) == .failed { return }
        }
    }
}
