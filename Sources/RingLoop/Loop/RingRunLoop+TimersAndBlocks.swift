import CDispatchHooks
import CLibURing
import DequeModule
import Glibc

// Timers in per-mode heaps, and blocks performed by mode.
extension RingRunLoop {
    // MARK: Timers

    /// Puts fresh heap entries for `timer` in every mode it is in; older entries go stale.
    func reschedule(_ timer: LoopTimer) {
        timer.stamp &+= 1
        let mask = timer.membership.modeMask
        guard mask != 0, timer.isValid else { return }
        timerSequence &+= 1
        let entry = TimerEntry(fire: timer.fireNanoseconds, sequence: timerSequence, stamp: timer.stamp, timer: timer)
        for state in modes.list where mask & state.bit != 0 {
            state.timers.insert(entry)
            // A kept timer re-armed without firing leaves its older entries stale, and
            // those behind a live entry (one parked at distantFuture) never reach the
            // top to be dropped: compact here too, not only after a timer fires.
            state.compactTimersIfNeeded()
        }
    }

    /// Called when a timer's fire date is set (any thread).
    func timerWasRescheduled(_ timer: LoopTimer) {
        guard isOnLoopThread else {
            onLoopThread { $0.timerWasRescheduled(timer) }
            return
        }
        reschedule(timer)
    }

    /// When the running mode's timers need the loop awake: the earliest exact fire date,
    /// the earliest end of a tolerance window, or a spin window before a precise timer.
    func nextTimerDeadline(_ state: ModeState) -> UInt64? {
        guard state.timerCount > 0 else { return nil }
        return state.timers.wakeDeadline(isLive: state.isLive, spinWindow: preciseSpinWindowNanoseconds)
    }

    // MARK: Blocks

    /// Performs `block` on the loop's thread during a run in one of `modes`, in the order
    /// blocks were enqueued (`CFRunLoopPerformBlock`). With no modes the block is never
    /// performed and is released at once. Safe from any thread; does not wake the loop:
    /// call ``wakeUp()`` when it may be asleep.
    public func perform(inModes modes: [Mode] = [.default], _ block: @escaping @Sendable () -> Void) {
        guard !modes.isEmpty else { return }
        guard isOnLoopThread else {
            onLoopThread { $0.perform(inModes: modes, block) }
            return
        }
        // The modes come into existence, as with CFRunLoopPerformBlock.
        for mode in modes { _ = modeState(mode, create: true) }
        blocks.append(BlockItem(modes: modes, block: block))
    }

    /// Performs `block` on the loop's thread once `delay` has passed, while the loop runs
    /// in one of `modes` (`perform(_:with:afterDelay:)`). Returns the timer: invalidate
    /// it to cancel. With no modes nothing is performed and the timer returned is already
    /// invalid. Safe from any thread.
    @discardableResult
    public func perform(
        after delay: Duration, inModes modes: [Mode] = [.default], tolerance: Duration = .zero,
        _ block: @escaping @Sendable () -> Void
    ) -> LoopTimer {
        guard !modes.isEmpty else { return LoopTimer.invalidated() }
        let timer = LoopTimer(after: delay, tolerance: tolerance) { _ in block() }
        for mode in modes { add(timer, to: mode) }
        return timer
    }

    func blockMatches(_ item: BlockItem, _ state: ModeState) -> Bool {
        for candidate in item.modes {
            if candidate == state.mode { return true }
            if candidate == .common, state.isCommon { return true }
        }
        return false
    }

    @discardableResult
    func doBlocks(_ state: ModeState) -> Bool {
        applyRequests()
        guard !blocks.isEmpty else { return hasJobs && runJobs(state) }
        var taken: Deque<BlockItem> = []
        swap(&taken, &blocks)
        var kept: Deque<BlockItem> = []
        var did = false
        while let item = taken.popFirst() {
            if blockMatches(item, state) {
                Callout.tracked(calloutProbe, .block, nil) { Callout.toBlock(item.block) }
                did = true
            } else {
                kept.append(item)
            }
        }
        if !kept.isEmpty {
            kept.append(contentsOf: blocks)
            blocks = kept
        }
        return runJobs(state) || did
    }
}
