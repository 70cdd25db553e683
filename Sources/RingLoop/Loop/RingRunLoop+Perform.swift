import Dispatch

/// Foundation's `performSelector` family on a loop: on its thread, waiting or not, after a
/// delay, and cancelled by target.
extension RingRunLoop {
    /// Performs `block` on the loop's thread while it runs in one of `modes`, and wakes it
    /// (`performSelector:onThread:withObject:waitUntilDone:modes:`).
    ///
    /// With `waitUntilDone`, the caller waits until the block has run; called on the loop's
    /// own thread, it runs the block at once, whatever mode the loop is in, as Foundation
    /// does. With no modes it returns without performing, on any thread, the loop's own
    /// included, as Apple's documentation says: "If you specify nil or an empty array for
    /// this parameter, this method returns without performing the specified selector." A
    /// caller waiting on a loop whose thread has exited (or exits before running the
    /// block) returns without the block having run; waiting on a loop that runs but never
    /// in one of `modes` waits until it does, as in Foundation. Safe from any thread.
    public func perform(inModes modes: [Mode] = [.default], waitUntilDone: Bool, _ block: @escaping @Sendable () -> Void) {
        guard !modes.isEmpty else { return }
        if waitUntilDone && isOnLoopThread {
            Callout.toBlock(block)
            return
        }
        guard waitUntilDone else {
            perform(inModes: modes, block)
            wakeUp()
            return
        }
        let done = DispatchSemaphore(value: 0)
        // The token goes when the block does: after it ran, or unrun when the loop's
        // thread exits and drops its blocks. Either way the wait ends. (Made in the capture
        // list, so the block holds the only reference.)
        perform(inModes: modes) { [token = ReleaseSignal(done)] in
            withExtendedLifetime(token) { block() }
        }
        wakeUp()
        done.wait()
    }

    /// Performs `block` on the loop's thread once `delay` has passed, while the loop runs
    /// in one of `modes`, on behalf of `target` (`performSelector:withObject:afterDelay:`):
    /// ``cancelPerforms(target:)`` cancels every such perform of a target that has not run.
    /// The loop keeps `target` until the perform runs or is cancelled, as Foundation
    /// retains the target. With no modes nothing is performed ("If this parameter is
    /// empty, the selector is not performed"): the timer returned is already invalid.
    /// Safe from any thread.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.default], tolerance: Duration = .zero,
        target: some AnyObject & Sendable, _ block: @escaping @Sendable () -> Void
    ) -> LoopTimer {
        guard !modes.isEmpty else { return LoopTimer.invalidated() }
        let key = ObjectIdentifier(target)
        // Unowned, not weak: the timer fires only while this loop runs it, and a weak
        // reference to a loop that lives until exit makes a side table LeakSanitizer
        // reports as leaked.
        let timer = LoopTimer(after: delay, tolerance: tolerance) { [unowned self] timer in
            self.targetedPerforms.withLock { table in
                table[key]?.removeAll { $0.timer === timer }
                if table[key]?.isEmpty == true { table[key] = nil }
            }
            block()
        }
        targetedPerforms.withLock { $0[key, default: []].append(TargetedPerform(target: target, timer: timer)) }
        for mode in modes { add(timer, to: mode) }
        return timer
    }

    /// Cancels the performs made with ``perform(after:inModes:tolerance:target:_:)`` for
    /// `target` that have not run yet (`cancelPreviousPerformRequestsWithTarget:`), and
    /// lets the loop release the target. Returns how many were cancelled. Safe from any
    /// thread; a perform already running is not stopped.
    @discardableResult
    public func cancelPerforms(target: AnyObject) -> Int {
        let records = targetedPerforms.withLock { $0.removeValue(forKey: ObjectIdentifier(target)) ?? [] }
        var cancelled = 0
        for record in records {
            guard record.timer.isValid else { continue }
            record.timer.invalidate()
            cancelled += 1
        }
        return cancelled
    }
}

/// Signals a semaphore when it is released: a block that captures it tells a waiter when
/// the block is gone, run or dropped.
final class ReleaseSignal: Sendable {
    private let semaphore: DispatchSemaphore
    init(_ semaphore: DispatchSemaphore) { self.semaphore = semaphore }
    deinit { semaphore.signal() }
}

/// A delayed perform on behalf of a target: the target (kept alive, so its identity is not
/// reused while the record exists) and the timer that performs it.
struct TargetedPerform: Sendable {
    let target: AnyObject & Sendable
    let timer: LoopTimer
}

extension LoopThread {
    /// Performs `block` on the thread's loop in `modes` and wakes it; with
    /// `waitUntilDone`, returns once the block has run (see
    /// ``RingRunLoop/perform(inModes:waitUntilDone:_:)``).
    public func perform(inModes modes: [RingRunLoop.Mode] = [.default], waitUntilDone: Bool, _ block: @escaping @Sendable () -> Void) {
        loop.perform(inModes: modes, waitUntilDone: waitUntilDone, block)
    }
}
