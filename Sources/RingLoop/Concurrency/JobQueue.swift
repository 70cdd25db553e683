import Synchronization

/// The jobs Swift concurrency enqueued on a loop (actor work, tasks that prefer the loop,
/// continuations resumed onto it), from any thread, waiting for the loop's blocks phase.
///
/// A pthread mutex guards the list (``ThreadLock``), so ThreadSanitizer sees the hand-over
/// from the enqueuing thread to the loop's; a flag lets the loop skip the lock when
/// nothing is queued.
final class JobQueue: Sendable {
    /// A job and whether it runs isolated to the loop's serial executor (an actor's).
    struct Entry {
        var job: UnownedJob
        var isolated: Bool
    }

    private let pending = ThreadLock<[Entry]>([])
    private let queued = Atomic<Bool>(false)

    /// Adds a job (any thread).
    func push(_ job: UnownedJob, isolated: Bool) {
        pending.withLock { jobs in
            jobs.append(Entry(job: job, isolated: isolated))
            queued.store(true, ordering: .releasing)
        }
    }

    /// Whether a job waits (any thread; a hint until the lock is taken).
    var hasJobs: Bool { queued.load(ordering: .acquiring) }

    /// Moves every waiting job into `batch`, which must be empty (loop thread).
    func take(into batch: inout [Entry]) {
        guard hasJobs else { return }
        pending.withLock { jobs in
            swap(&jobs, &batch)
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
