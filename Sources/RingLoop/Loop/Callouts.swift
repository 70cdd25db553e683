/// Every user callback goes through one of these small functions, never inlined, so a
/// profile or a backtrace splits cleanly into the loop, waiting, and the handler — as
/// CFRunLoop's `__CFRUNLOOP_IS_CALLING_OUT_TO_…__` functions do.
enum Callout {
    /// Runs `body`, a callout of `kind` to `item`, published to the loop's stall probe
    /// when a watchdog watches it (one branch otherwise).
    @inline(__always)
    static func tracked<Result>(
        _ probe: CalloutProbe?, _ kind: LoopStallReport.Callout, _ item: LoopItem?, _ body: () -> Result
    ) -> Result {
        guard let probe else { return body() }
        let saved = probe.enter(kind, item)
        defer { probe.leave(saved) }
        return body()
    }

    @inline(never)
    static func toSource0Perform(_ source: LoopSource) {
        source.perform()
    }

    @inline(never)
    static func toSource1Perform(_ body: () -> Void) {
        body()
    }

    @inline(never)
    static func toTimerCallback(_ timer: LoopTimer) {
        timer.callback(timer)
    }

    @inline(never)
    static func toObserverCallback(_ observer: LoopObserver, _ activity: RingRunLoop.Activity) {
        observer.callback(observer, activity)
    }

    @inline(never)
    static func toBlock(_ block: () -> Void) {
        block()
    }

    @inline(never)
    static func toActorJob(_ job: UnownedJob, _ serial: UnownedSerialExecutor) {
        job.runSynchronously(on: serial)
    }

    @inline(never)
    static func toTaskJob(_ job: UnownedJob, _ task: UnownedTaskExecutor) {
        job.runSynchronously(on: task)
    }

    @inline(never)
    static func toScheduleOrCancel(_ body: () -> Void) {
        body()
    }

    @inline(never)
    static func servicingTheMainDispatchQueue(_ body: () -> Void) {
        body()
    }
}
