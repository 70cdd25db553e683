import CDispatchHooks
import CLibURing
import DequeModule
import Glibc

extension RingRunLoop {
    // MARK: Running

    /// Runs the loop in `mode` until `deadline`, a stop, or (with
    /// `returnAfterSourceHandled`) the first pass that handled a source
    /// (`CFRunLoopRunInMode`). Runs nest: a callout may run the loop again, in the same or
    /// another mode. Loop thread only.
    ///
    /// A mode with no sources, timers or blocks returns ``RunResult/finished`` at once;
    /// observers alone do not keep a run alive. A deadline already passed makes one pass
    /// without sleeping.
    @discardableResult
    public func run(
        mode: Mode = .default, until deadline: MonotonicInstant, returnAfterSourceHandled: Bool = false
    ) -> RunResult {
        preconditionOnLoopThread("run(mode:until:returnAfterSourceHandled:)")
        if mode == .common { return .finished }
        applyRequests()
        guard let state = modeState(mode), !isEmpty(state), waitCore() != nil else { return .finished }
        let run = RunState()
        let previousRun = swapCurrentRun(run)
        let previousMode = modes.current
        modes.current = state
        defer {
            modes.current = previousMode
            _ = swapCurrentRun(previousRun)
        }
        doObservers(.entry, state)
        let result = runPasses(state, run, deadline: deadline, stopAfterHandle: returnAfterSourceHandled)
        doObservers(.exit, state)
        return result
    }

    /// Runs the loop in `mode` for `duration` (see ``run(mode:until:returnAfterSourceHandled:)``).
    @discardableResult
    public func run(mode: Mode = .default, for duration: Duration, returnAfterSourceHandled: Bool = false) -> RunResult {
        run(mode: mode, until: .now + duration, returnAfterSourceHandled: returnAfterSourceHandled)
    }

    /// Runs the loop in the default mode until it is stopped, has nothing left to wait
    /// for (`CFRunLoopRun`), or cannot wait (``RunResult/failed``). Loop thread only.
    public func run() {
        while true {
            let result = run(mode: .default, until: .distantFuture)
            if result == .stopped || result == .finished || result == .failed { return }
        }
    }

    private func runPasses(
        _ state: ModeState, _ run: RunState, deadline: MonotonicInstant, stopAfterHandle: Bool
    )
        -> RunResult
    {
        if run.stopped.load(ordering: .acquiring) { return .stopped }
        let pollOnly = deadline <= .now
        while true {
            passes &+= 1
            doObservers(.beforeTimers, state)
            doObservers(.beforeSources, state)
            doBlocks(state)
            var handled = doSources0(state, stopAfterHandle: stopAfterHandle)
            if handled { doBlocks(state) }

            let poll = handled || pollOnly || hasDeliverablePortEvents(state) || hasRunnableJobs(state)
            if !poll { doObservers(.beforeWaiting, state) }
            // No user callout from here until the wait returns.
            waitForEvents(state, poll: poll, deadline: deadline)
            if !poll { doObservers(.afterWaiting, state) }

            doTimers(state)
            if deliverPortEvents(state, stopAfterHandle: stopAfterHandle) { handled = true }
            doBlocks(state)

            if consecutiveWaitFailures >= Self.waitFailureLimit { return .failed }
            if handled && stopAfterHandle { return .handledSource }
            if deadline != .distantFuture, deadline < .now { return .timedOut }
            if run.stopped.load(ordering: .acquiring) { return .stopped }
            if isEmpty(state) { return .finished }
        }
    }

    /// Sleeps until a completion, a wake-up, the earliest timer of the mode or the run's
    /// deadline; polls without sleeping when `poll`.
    private func waitForEvents(_ state: ModeState, poll: Bool, deadline: MonotonicInstant) {
        guard let core = waitCore() else { return }
        if servesMainQueueHere, state.isCommon { armMainQueue(core) }
        do {
            if poll {
                try core.poll()
            } else {
                var wakeAt = deadline
                if let timer = nextTimerDeadline(state), timer < wakeAt.nanoseconds {
                    wakeAt = MonotonicInstant(nanoseconds: timer)
                }
                try sleep(core, until: wakeAt)
            }
            consecutiveWaitFailures = 0
        } catch {
            // A failure is reported, and a run that cannot wait ends (``RunResult/failed``)
            // after a few tries instead of spinning on an error.
            consecutiveWaitFailures += 1
            waitError = error
            if consecutiveWaitFailures == 1 || consecutiveWaitFailures == Self.waitFailureLimit {
                Self.logger.error("wait failed (\(consecutiveWaitFailures) in a row): \(error)")
            }
        }
        while let event = core.nextEvent() { route(event) }
    }

    /// The wait itself, with what it teaches: how late a sleep to its deadline ended
    /// (precise timers' early wake) and, under the adaptive policy, what polling found.
    /// Reads the clock only for those.
    private func sleep(_ core: WaitCore, until wakeAt: MonotonicInstant) throws(RingError) {
        guard spin.adaptive != nil else {
            if try core.wait(until: wakeAt, spin: spin.beforeSleepingNanoseconds), wakeAt != .distantFuture {
                recordWakeLateness(after: wakeAt)
            }
            return
        }
        let window = spin.adaptive!.spin(at: MonotonicInstant.now.nanoseconds)
        let timedOut = try core.wait(until: wakeAt, spin: window)
        if timedOut, wakeAt != .distantFuture { recordWakeLateness(after: wakeAt) }
        spin.adaptive!.record(spun: core.lastSpin, found: !timedOut, at: MonotonicInstant.now.nanoseconds)
    }

    /// A sleep ended at its deadline: how late the wake-up came, for precise timers.
    private func recordWakeLateness(after deadline: MonotonicInstant) {
        let now = MonotonicInstant.now.nanoseconds
        spin.wakeLateness.record(now > deadline.nanoseconds ? now - deadline.nanoseconds : 0)
    }

    // MARK: Source0

    private func doSources0(_ state: ModeState, stopAfterHandle: Bool) -> Bool {
        let sources = state.sources0
        let ready = { (source: LoopSource) in source.isSignalled && source.isValid }
        // Most passes have one signalled source or none: a lone one needs no ordering.
        guard let first = sources.firstIndex(where: ready) else { return false }
        guard sources[(first + 1)...].contains(where: ready) else { return performSource0(sources[first]) }
        var signalled = scratch.source0
        scratch.source0 = []
        defer {
            signalled.removeAll(keepingCapacity: true)
            scratch.source0 = signalled
        }
        signalled.append(contentsOf: sources[first...].lazy.filter(ready))
        signalled.sort { $0.isPerformed(before: $1) }
        var handled = false
        for source in signalled {
            guard performSource0(source) else { continue }
            handled = true
            if stopAfterHandle { break }
        }
        return handled
    }

    /// Performs `source` if it is still signalled and valid; returns whether it did.
    private func performSource0(_ source: LoopSource) -> Bool {
        guard source.consumeSignal(), source.isValid else { return false }
        Callout.tracked(calloutProbe, .source0, source) { Callout.toSource0Perform(source) }
        return true
    }

    // MARK: Observers

    private func doObservers(_ activity: Activity, _ state: ModeState) {
        guard state.observerMask.contains(activity) else { return }
        var due = scratch.observers
        scratch.observers = []
        defer {
            due.removeAll(keepingCapacity: true)
            scratch.observers = due
        }
        for observer in state.observers
        where observer.activities.contains(activity) && observer.isValid && !observer.firing {
            due.append(observer)
        }
        for observer in due where observer.isValid {
            observer.firing = true
            Callout.tracked(calloutProbe, .observer, observer) { Callout.toObserverCallback(observer, activity) }
            observer.firing = false
            if !observer.repeats { observer.invalidate() }
        }
    }

    // MARK: Timers

    private func doTimers(_ state: ModeState) {
        guard state.timerCount > 0 else { return }
        var now = MonotonicInstant.now.nanoseconds
        // A precise timer due within the spin window: spin to its date, then fire it.
        if let fire = state.timers.preciseFire(before: now &+ preciseSpinWindowNanoseconds, isLive: state.isLive),
            fire > now
        {
            let started = now
            now = spinUntil(fire)
            spin.preciseSpin.nanoseconds &+= now &- started
            spin.preciseSpin.fires &+= 1
        }
        var due = scratch.timers
        scratch.timers = []
        defer {
            due.removeAll(keepingCapacity: true)
            scratch.timers = due
        }
        state.timers.popDue(now: now, isLive: state.isLive, into: &due)
        guard !due.isEmpty else { return }
        var skipped: [TimerEntry] = []
        due.removeAll { entry in
            if entry.timer.firing {
                skipped.append(entry)
                return true
            }
            return false
        }
        for entry in skipped { state.timers.reinsert(entry) }
        for entry in due {
            let timer = entry.timer
            guard entry.stamp == timer.stamp, timer.isValid, !timer.firing,
                timer.membership.modeMask & state.bit != 0
            else { continue }
            let scheduled = timer.fireNanoseconds
            guard scheduled <= MonotonicInstant.now.nanoseconds else {
                state.timers.reinsert(entry)
                continue
            }
            timer.firing = true
            Callout.tracked(calloutProbe, .timer, timer) { Callout.toTimerCallback(timer) }
            timer.firing = false
            guard timer.isValid else { continue }
            if !timer.repeats {
                timer.invalidate()
                continue
            }
            if timer.fireNanoseconds > scheduled {
                // The callout set a later fire date: honoured (already rescheduled).
                continue
            }
            // Next = last scheduled + k × interval, the first such date after now:
            // never drifts, and fires missed while busy are skipped, not bunched.
            let interval = timer.intervalNanoseconds
            let current = MonotonicInstant.now.nanoseconds
            var next = scheduled &+ interval
            if next <= current {
                let missed = (current - scheduled) / interval
                next = scheduled &+ (missed &+ 1) &* interval
            }
            timer.fireNanoseconds = next
            reschedule(timer)
        }
        state.compactTimersIfNeeded()
    }

    /// Busy-waits until `deadline` (precise timers); returns the time reached. Stable
    /// name for profiles: time here is spent on purpose.
    @inline(never)
    private func spinUntil(_ deadline: UInt64) -> UInt64 {
        var now = MonotonicInstant.now.nanoseconds
        while now < deadline { now = MonotonicInstant.now.nanoseconds }
        return now
    }

    // MARK: Source1 and the main queue

    func route(_ event: PortEvent) {
        switch event {
        case .readiness(let id, let events):
            if id == mainQueuePort {
                if !mainQueuePending {
                    mainQueuePending = true
                    pendingPortEvents.append(.mainQueue)
                }
                return
            }
            guard let source = readinessSources[id] else { return }
            if source.pendingReadiness == 0 { pendingPortEvents.append(.readiness(source)) }
            source.pendingReadiness |= events
        case .failure(let id, let error):
            guard let source = readinessSources[id] else { return }
            source.armingFailure = error
            if source.pendingReadiness == 0 { pendingPortEvents.append(.readiness(source)) }
            source.pendingReadiness |= Int16(POLLNVAL)
        case .completion(let id, let result, let flags):
            routeIO(id, result: result, flags: flags)
        case .message(let port, let message):
            if let source = doorbellSources[port] {
                pendingPortEvents.append(.message(source, message))
            } else {
                orphanDoorbellMessages[port, default: []].append(message)
            }
        }
    }

    private func deliverable(_ event: PendingPortEvent, _ state: ModeState) -> Bool {
        switch event {
        case .readiness(let source), .message(let source, _), .completion(let source, _):
            return source.membership.modeMask & state.bit != 0
        case .mainQueue:
            return servesMainQueueHere && state.isCommon
        }
    }

    func hasDeliverablePortEvents(_ state: ModeState) -> Bool {
        pendingPortEvents.contains { deliverable($0, state) }
    }

    private func deliverPortEvents(_ state: ModeState, stopAfterHandle: Bool) -> Bool {
        guard !pendingPortEvents.isEmpty else { return false }
        var events = pendingPortEvents
        pendingPortEvents = keptPortEvents
        keptPortEvents = []
        var kept: Deque<PendingPortEvent> = []
        var handled = false
        while let event = events.popFirst() {
            // An event of an invalidated source is let go; one for a source not in this
            // mode waits for a pass of a mode that has it.
            guard event.sourceIsValid else {
                discard(event)
                continue
            }
            guard deliverable(event, state) else {
                kept.append(event)
                continue
            }
            switch event {
            case .readiness(let source):
                let mask = source.pendingReadiness
                source.pendingReadiness = 0
                guard mask != 0, let perform = source.onReadiness else { continue }
                Callout.tracked(calloutProbe, .port, source) { Callout.toSource1Perform { perform(mask) } }
                handled = true
            case .message(let source, let message):
                guard let perform = source.onMessage else { continue }
                Callout.tracked(calloutProbe, .port, source) { Callout.toSource1Perform { perform(message) } }
                handled = true
            case .completion(let source, let pending):
                calloutHandledSource = false
                deliverIO(pending, deliver: true)
                if source.countsAsHandled || calloutHandledSource { handled = true }
            case .mainQueue:
                mainQueuePending = false
                serviceMainQueue()
                handled = true
            }
        }
        // Events kept for other modes stay ahead of those that arrived meanwhile.
        if !kept.isEmpty {
            kept.append(contentsOf: pendingPortEvents)
            pendingPortEvents = kept
        }
        events.removeAll(keepingCapacity: true)
        keptPortEvents = events
        return handled
    }

    /// Lets go of an event whose source was invalidated: its readiness is forgotten, its
    /// I/O completion finished without a callout (buffers returned, the operation ended).
    private func discard(_ event: PendingPortEvent) {
        switch event {
        case .readiness(let source): source.pendingReadiness = 0
        case .completion(_, let pending): deliverIO(pending, deliver: false)
        case .message, .mainQueue: break
        }
    }

    private func armMainQueue(_ core: WaitCore) {
        guard mainQueuePort == nil else { return }
        let fd = _dispatch_get_main_queue_handle_4CF()
        guard fd >= 0 else { return }
        do {
            mainQueuePort = try core.addReadinessPort(fd: fd)
            // Work enqueued before the port existed has already poked the eventfd; the
            // poll reports it at once since the eventfd is still readable.
        } catch {
            Self.logger.error("cannot watch the main dispatch queue: \(error)")
        }
    }

    private func serviceMainQueue() {
        let fd = _dispatch_get_main_queue_handle_4CF()
        var value: UInt64 = 0
        // Acknowledge the wake-up, as CFRunLoop does, before draining.
        while read(fd, &value, 8) < 0, errno == EINTR {}
        inMainQueueCallout = true
        Callout.tracked(calloutProbe, .mainQueue, nil) {
            Callout.servicingTheMainDispatchQueue { _dispatch_main_queue_callback_4CF(nil) }
        }
        inMainQueueCallout = false
    }
}
