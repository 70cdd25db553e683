import Synchronization

/// The jobs Swift concurrency enqueued on a loop (actor work, tasks that prefer the loop,
/// continuations resumed onto it), from any thread, waiting for the loop's blocks phase.
///
/// A pthread mutex guards the list (``ThreadLock``), so ThreadSanitizer sees the hand-over
/// from the enqueuing thread to the loop's; a flag lets the loop skip the lock when
/// nothing is queued.
final class JobQueue: Sendable {
    /// A job and the executor it was enqueued on, which it runs as.
    struct Entry {
        var job: UnownedJob
        var target: Target
    }

    /// Which of the loop's executors a job belongs to.
    enum Target {
        /// The loop itself, as a task executor (common modes).
        case loop
        /// A serial executor of actors (the loop's own, or one for chosen modes).
        case actor(LoopSerialExecutor)
        /// A task executor for chosen modes.
        case task(LoopTaskExecutor)

        /// The modes the job may run in; `nil` for the common modes.
        var modes: [RingRunLoop.Mode]? {
            switch self {
            case .loop: nil
            case .actor(let executor): executor.modes
            case .task(let executor): executor.modes
            }
        }
    }

    private let pending = ThreadLock<[Entry]>([])
    private let queued = Atomic<Bool>(false)

    /// Adds a job (any thread).
    func push(_ entry: Entry) {
        pending.withLock { jobs in
            jobs.append(entry)
            queued.store(true, ordering: .releasing)
        }
    }

    /// Whether a job waits (any thread; a hint until the lock is taken).
    var hasJobs: Bool { queued.load(ordering: .acquiring) }

    /// Moves every waiting job to the end of `batch` (loop thread).
    func take(appendingTo batch: inout [Entry]) {
        guard hasJobs else { return }
        pending.withLock { jobs in
            if batch.isEmpty {
                swap(&jobs, &batch)
            } else {
                batch.append(contentsOf: jobs)
                jobs.removeAll(keepingCapacity: true)
            }
            queued.store(false, ordering: .relaxed)
        }
    }

    /// Orders `batch` highest priority first, keeping the order within one priority.
    static func orderByPriority(_ batch: inout [Entry]) {
        guard batch.count > 1 else { return }
        let first = batch[0].job.priority
        if batch.contains(where: { $0.job.priority != first }) {
            // Stable: indices break ties, so equal priorities keep their order.
            let ordered = batch.enumerated().sorted { left, right in
                left.element.job.priority != right.element.job.priority
                    ? left.element.job.priority > right.element.job.priority : left.offset < right.offset
            }
            batch = ordered.map(\.element)
        }
    }
}
