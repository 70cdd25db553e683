/// The loop as an executor of Swift concurrency: a task executor itself
/// (`Task(executorPreference: loop)`, `withTaskExecutorPreference(loop)`), and the serial
/// executor of actors that declare `loop.asUnownedSerialExecutor()` as theirs.
///
/// Jobs run on the loop's thread in the loop's blocks phase — after the blocks queued for
/// the running mode, at each of the three points a pass runs blocks (before version-0
/// sources, after them if one performed, and after timers and port sources) — while the
/// loop runs in one of its common modes, nested runs included. Within one blocks phase the
/// jobs waiting run highest priority first, in enqueue order within a priority; jobs they
/// enqueue run at the next blocks phase. A job enqueued from another thread wakes the
/// loop; a waiting job keeps a run in a common mode from ending as ``RunResult/finished``
/// and from sleeping.
///
/// ```swift
/// actor Counter {
///     let loop: RingRunLoop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     var count = 0
///     init(loop: RingRunLoop) { self.loop = loop }
///     func increment() { count += 1 }
/// }
/// let value = await Task(executorPreference: loop) { loop.isOnLoopThread }.value   // true
/// ```
extension RingRunLoop: TaskExecutor {
    /// Queues a job of a task that prefers this loop (any thread).
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueueJob(UnownedJob(job), isolated: false)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// The serial executor of actors isolated to this loop (see ``LoopSerialExecutor``).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    func enqueueJob(_ job: UnownedJob, isolated: Bool) {
        if isOnLoopThread {
            // From the loop's own thread (a job, a callout): no lock, no wake-up.
            localJobs.append(JobQueue.Entry(job: job, isolated: isolated))
        } else {
            jobs.push(job, isolated: isolated)
            signal.wakeUp()
        }
    }

    /// Whether jobs run while the loop runs in `state`'s mode (the common modes).
    func runsJobs(in state: ModeState) -> Bool {
        commonModeSet.contains(state.mode)
    }

    /// Whether a job waits to run in `state`'s mode.
    func hasRunnableJobs(_ state: ModeState) -> Bool {
        (!localJobs.isEmpty || jobs.hasJobs) && runsJobs(in: state)
    }

    /// Runs the jobs waiting now; returns whether any ran (loop thread).
    func runJobs(_ state: ModeState) -> Bool {
        guard hasRunnableJobs(state) else { return false }
        var batch = jobBatch
        jobBatch = []
        jobs.take(into: &batch)
        if batch.isEmpty {
            swap(&batch, &localJobs)
        } else {
            batch.append(contentsOf: localJobs)
            localJobs.removeAll(keepingCapacity: true)
        }
        JobQueue.orderByPriority(&batch)
        let serial = serialExecutor.asUnownedSerialExecutor()
        let task = asUnownedTaskExecutor()
        for job in batch {
            if job.isolated {
                Callout.toActorJob(job.job, serial)
            } else {
                Callout.toTaskJob(job.job, task)
            }
        }
        let ran = !batch.isEmpty
        batch.removeAll(keepingCapacity: true)
        jobBatch = batch
        return ran
    }
}

/// The serial executor of the actors isolated to one loop: their jobs run on the loop's
/// thread as the loop's (see ``RingRunLoop``'s conformance to `TaskExecutor` for where in
/// a pass). An actor declares it through ``RingRunLoop/asUnownedSerialExecutor()``.
///
/// Separate from the loop, which is the task executor: the runtime must know whether a
/// job runs isolated to the loop (an actor's) or only on its thread (a task that prefers
/// the loop), or every nonisolated step of a task would be enqueued twice.
public final class LoopSerialExecutor: SerialExecutor, Sendable {
    /// The loop whose thread runs the jobs.
    public unowned let loop: RingRunLoop

    init(loop: RingRunLoop) { self.loop = loop }

    /// Queues an actor's job (any thread).
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(UnownedJob(job), isolated: true)
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless called on the loop's thread, so `assumeIsolated` on an actor isolated
    /// to the loop holds exactly on that thread.
    public func checkIsolated() {
        loop.preconditionOnLoopThread("code isolated to an actor of this loop")
    }

    /// Whether the caller runs on the loop's thread, where the actors' jobs run.
    public func isIsolatingCurrentContext() -> Bool? {
        loop.isOnLoopThread
    }
}
