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
        enqueueJob(UnownedJob(job), .loop)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// The serial executor of actors isolated to this loop (see ``LoopSerialExecutor``).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    /// A task executor whose jobs run only while the loop runs in one of `modes` (which
    /// may include ``Mode/common``), as blocks queued for those modes do. For work that
    /// must wait while the loop runs a private mode, or that belongs to one.
    public func taskExecutor(inModes modes: [Mode]) -> LoopTaskExecutor {
        LoopTaskExecutor(loop: self, modes: modes)
    }

    /// A serial executor for actors whose jobs run only while the loop runs in one of
    /// `modes` (see ``taskExecutor(inModes:)``).
    public func serialExecutor(inModes modes: [Mode]) -> LoopSerialExecutor {
        LoopSerialExecutor(loop: self, modes: modes, holdsLoop: true)
    }

    func enqueueJob(_ job: UnownedJob, _ target: JobQueue.Target) {
        let entry = JobQueue.Entry(job: job, target: target)
        if isOnLoopThread {
            // From the loop's own thread (a job, a callout): no lock, no wake-up.
            localJobs.append(entry)
            if target.modes != nil { localModedJobs += 1 }
        } else {
            jobs.push(entry)
            signal.wakeUp()
        }
    }

    /// Whether a job of `target` may run while the loop runs in `state`'s mode.
    func runs(_ target: JobQueue.Target, in state: ModeState) -> Bool {
        guard let modes = target.modes else { return state.isCommon }
        return modes.contains(state.mode) || (modes.contains(.common) && state.isCommon)
    }

    /// Whether a job waits, in any mode (loop thread; two loads, for every pass's checks).
    var hasJobs: Bool { !localJobs.isEmpty || jobs.hasJobs }

    /// Whether a job waits to run in `state`'s mode (loop thread). Jobs from other
    /// threads join the loop's own list first.
    func hasRunnableJobs(_ state: ModeState) -> Bool {
        if jobs.hasJobs {
            let before = localJobs.count
            jobs.take(appendingTo: &localJobs)
            for entry in localJobs[before...] where entry.target.modes != nil { localModedJobs += 1 }
        }
        guard !localJobs.isEmpty else { return false }
        if localModedJobs == 0 { return state.isCommon }
        return localJobs.contains { runs($0.target, in: state) }
    }

    /// Runs the jobs that may run now; returns whether any ran (loop thread).
    func runJobs(_ state: ModeState) -> Bool {
        guard hasRunnableJobs(state) else { return false }
        var batch = scratch.jobBatch
        scratch.jobBatch = []
        if localModedJobs == 0 {
            swap(&batch, &localJobs)
        } else {
            // Jobs for modes not running stay, in order.
            var kept: [JobQueue.Entry] = []
            for entry in localJobs {
                if runs(entry.target, in: state) { batch.append(entry) } else { kept.append(entry) }
            }
            localJobs = kept
            localModedJobs = kept.count { $0.target.modes != nil }
        }
        JobQueue.orderByPriority(&batch)
        let loopTask = asUnownedTaskExecutor()
        for entry in batch {
            Callout.tracked(calloutProbe, .job, nil) {
                switch entry.target {
                case .loop: Callout.toTaskJob(entry.job, loopTask)
                case .task(let executor): Callout.toTaskJob(entry.job, executor.asUnownedTaskExecutor())
                case .actor(let executor): Callout.toActorJob(entry.job, executor.asUnownedSerialExecutor())
                }
            }
        }
        let ran = !batch.isEmpty
        batch.removeAll(keepingCapacity: true)
        scratch.jobBatch = batch
        return ran
    }
}

/// A task executor on a loop for chosen modes (see ``RingRunLoop/taskExecutor(inModes:)``).
public final class LoopTaskExecutor: TaskExecutor, Sendable {
    /// The loop whose thread runs the jobs.
    public let loop: RingRunLoop
    /// The modes the jobs run in.
    public let modes: [RingRunLoop.Mode]

    init(loop: RingRunLoop, modes: [RingRunLoop.Mode]) {
        self.loop = loop
        self.modes = modes
    }

    /// Queues a job of a task that prefers this executor (any thread).
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(UnownedJob(job), .task(self))
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
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
    public var loop: RingRunLoop { held ?? unheld }
    /// The modes the jobs run in; `nil` for the loop's common modes.
    public let modes: [RingRunLoop.Mode]?
    // The loop's own executor refers to it unowned (the loop holds the executor); one made
    // for chosen modes holds its loop.
    private unowned let unheld: RingRunLoop
    private let held: RingRunLoop?

    init(loop: RingRunLoop, modes: [RingRunLoop.Mode]? = nil, holdsLoop: Bool = false) {
        self.unheld = loop
        self.held = holdsLoop ? loop : nil
        self.modes = modes
    }

    /// Queues an actor's job (any thread).
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueueJob(UnownedJob(job), .actor(self))
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
