import Logging

// Requests from other threads, and the loop's wait core (created on first need).
extension RingRunLoop {
    // MARK: Cross-thread requests

    /// Runs `body` on the loop's thread: now if called there, otherwise at the loop's
    /// next pass (and wakes it). Dropped, unrun, once the loop's thread has exited.
    func onLoopThread(_ body: @escaping @Sendable (RingRunLoop) -> Void) {
        let queued = requests.withLock { requests -> Bool in
            guard !threadExited.load(ordering: .acquiring) else { return false }
            requests.append(body)
            return true
        }
        guard queued else { return }
        hasRequests.store(true, ordering: .releasing)
        signal.wakeUp()
    }

    func applyRequests() {
        guard hasRequests.load(ordering: .acquiring) else { return }
        let pending = requests.withLock { requests -> [@Sendable (RingRunLoop) -> Void] in
            hasRequests.store(false, ordering: .relaxed)
            defer { requests.removeAll(keepingCapacity: true) }
            return requests
        }
        for request in pending { request(self) }
    }

    // MARK: The wait core

    /// Creates the loop's ring on first need (on the loop's thread, which a
    /// `SINGLE_ISSUER` ring requires). Returns `nil` when the kernel refuses io_uring.
    func waitCore() -> WaitCore? {
        if let core { return core }
        if coreError != nil { return nil }
        do {
            let created = try WaitCore(signal: signal, inbox: inbox)
            core = created
            return created
        } catch {
            coreError = error
            Self.logger.error("io_uring unavailable, the loop cannot wait: \(error)")
            return nil
        }
    }

    /// Creates the loop's io_uring now, on the loop's thread, and reports why it cannot
    /// be created (for example `EPERM` when `kernel.io_uring_disabled` forbids it). A
    /// loop that cannot create its ring returns ``RunResult/finished`` from every run.
    public func prepare() throws(RingError) {
        preconditionOnLoopThread("prepare()")
        if waitCore() == nil, let coreError { throw coreError }
    }

    /// Whether the kernel has posted completions (or flagged completion work) that this
    /// loop has not yet routed to their sources and run: a descriptor that `poll(2)` finds
    /// empty may have had its bytes taken by a ring read whose completion is among them
    /// (a submission with `GETEVENTS`, made in a callout, runs a `DEFER_TASKRUN` ring's
    /// pending reads). The next wait returns at once for them. Loop thread.
    package var hasUnhandledCompletions: Bool {
        preconditionOnLoopThread("hasUnhandledCompletions")
        guard let core else { return false }
        if core.ring.hasPendingCompletions || !core.events.isEmpty { return true }
        // Only events the running mode's next pass delivers: one kept for another mode
        // (or of an invalidated source) waits for no wake-up of this run.
        guard let state = modes.current else { return false }
        return hasDeliverablePortEvents(state)
    }

    /// A description of the loop's wait core (ring flags, wake-up mechanism), or why
    /// it has none; loop thread.
    public var waitCoreDescription: String {
        preconditionOnLoopThread("waitCoreDescription")
        if let core { return core.debugDescription }
        if let coreError { return "no wait core: \(coreError)" }
        return "wait core not created yet"
    }
}
