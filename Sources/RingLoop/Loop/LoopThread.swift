import Dispatch
import Synchronization

/// A long-lived thread that runs its own loop, kept alive by a doorbell, for work
/// posted from other threads — the classic networking-thread pattern.
///
/// ```swift
/// let worker = LoopThread(name: "io")
/// worker.perform { print("on the worker's loop") }
/// worker.loop.add(someSource, to: .default)   // from any thread
/// worker.stopAndJoin()
/// ```
public final class LoopThread: Sendable {
    /// The thread's loop. Add sources, timers and observers to it from any thread.
    public let loop: RingRunLoop
    /// The doorbell that keeps the loop alive; messages rung on it go to `onMessage`.
    public let doorbell: LoopDoorbell
    private let thread: PosixThread
    private let state: State

    private final class State: Sendable {
        let exitRequested = Atomic<Bool>(false)
        let joined = Atomic<Bool>(false)
    }

    /// Starts the thread and returns once its loop is running.
    /// - Parameters:
    ///   - name: The thread's name (as `top -H` shows it; 15 bytes kept).
    ///   - onMessage: Called on the thread for each message rung on ``doorbell``.
    public convenience init(name: String = "ringloop", onMessage: (@Sendable (LoopDoorbell.Message) -> Void)? = nil) {
        // Without CPUs to apply there is nothing that can fail.
        try! self.init(name: name, placedOn: nil, onMessage: onMessage)
    }

    /// Starts the thread restricted to `cpus` and returns once its loop is running.
    /// - Parameters:
    ///   - name: The thread's name (as `top -H` shows it; 15 bytes kept).
    ///   - cpus: CPUs the thread may run on: a non-empty set of online CPUs
    ///     (``CPUAffinity/onlineCPUs()``) the process may use. Anything else throws, and
    ///     no thread is left running.
    ///   - onMessage: Called on the thread for each message rung on ``doorbell``.
    public convenience init(
        name: String = "ringloop", cpus: [Int], onMessage: (@Sendable (LoopDoorbell.Message) -> Void)? = nil
    ) throws(CPUAffinityError) {
        try CPUAffinity.validate(cpus: cpus)
        try self.init(name: name, placedOn: cpus, onMessage: onMessage)
    }

    private init(
        name: String, placedOn cpus: [Int]?, onMessage: (@Sendable (LoopDoorbell.Message) -> Void)?
    )
        throws(CPUAffinityError)
    {
        let ready = DispatchSemaphore(value: 0)
        let handoff = ThreadLock<(RingRunLoop, LoopDoorbell)?>(nil)
        let placementError = ThreadLock<CPUAffinityError?>(nil)
        let state = State()
        let thread = PosixThread.start(name: name) {
            if let cpus {
                do throws(CPUAffinityError) {
                    try CPUAffinity.restrictCurrentThread(to: cpus)
                } catch {
                    // The kernel kept the thread off a CPU (a cpuset): end before any loop.
                    placementError.withLock { $0 = error }
                    ready.signal()
                    return
                }
            }
            let loop = RingRunLoop.current
            let port = loop.makeDoorbell()
            loop.add(LoopPortSource(doorbell: port) { message in onMessage?(message) }, to: .default)
            handoff.withLock { $0 = (loop, port) }
            ready.signal()
            while !state.exitRequested.load(ordering: .acquiring) {
                loop.run(mode: .default, until: .distantFuture)
            }
        }
        ready.wait()
        if let error = placementError.withLock({ $0 }) {
            thread.join()
            throw error
        }
        self.thread = thread
        (loop, doorbell) = handoff.withLock { $0! }
        self.state = state
    }

    /// Performs `block` on the thread's loop (in the default mode) and wakes it.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        loop.perform(inModes: [.default], block)
        loop.wakeUp()
    }

    /// Ends the loop's runs and waits for the thread to finish. Blocks performed before
    /// this call run first. Later calls return at once. Called on the thread itself (from a
    /// block or callout of its loop), it cannot wait: the loop stops after the callout
    /// returns and the thread ends on its own.
    ///
    /// End the async work that lives on the loop first (cancel its tasks and await them):
    /// a task still suspended on the loop — sleeping on its clock, awaiting one of its
    /// sequences, or an actor's job not yet run — never resumes once the thread has ended,
    /// and keeps what it holds, the loop included.
    public func stopAndJoin() {
        guard !state.joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let loop = self.loop
        let state = self.state
        loop.perform(inModes: [.default]) {
            // Runs inside the loop's current run, so the stop cannot be lost between runs.
            state.exitRequested.store(true, ordering: .releasing)
            loop.stop()
        }
        loop.wakeUp()
        doorbell.close()
        thread.join()
    }
}
