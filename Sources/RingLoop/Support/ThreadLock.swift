#if canImport(Glibc)
import Glibc
#endif

/// A value guarded by a `pthread_mutex_t`, for state that threads really share (the
/// package's modules use it wherever threads meet over more than one word).
///
/// Why not `Synchronization.Mutex`: on Linux its contended path parks in the prebuilt
/// standard library through raw futex calls, which ThreadSanitizer cannot see, so every
/// contended hand-off is reported as a data race and the loop's TSan run would be noise.
/// ThreadSanitizer intercepts `pthread_mutex_lock`, and an uncontended lock costs the
/// same (about 20 ns). `Atomic` from Synchronization is used everywhere else.
package final class ThreadLock<State>: @unchecked Sendable {
    // @unchecked: `state` is only touched between lock and unlock, and it came in as
    // `sending` (disconnected from its creator), as `Mutex` requires.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    /// Creates a lock guarding `initial`.
    package init(_ initial: sending State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        state = initial
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` under the lock without touching the guarded value: for an owner whose
    /// own stored properties the lock guards. (Do not use `ThreadLock<Void>` and
    /// `withLock` for that: a zero-size value shares its address with the mutex pointer,
    /// and ThreadSanitizer reports the pointer's read before locking as a race with the
    /// value's access.)
    @inline(__always)
    package func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Takes every lock of `locks`, one after the other in the order of their addresses
    /// (the one order in which every caller takes several of these locks, so two callers
    /// cannot wait on each other), runs `body` with their states, in the order of `locks`,
    /// then stores the states back and lets the locks go. A plain loop: no stack frame a
    /// lock, however many. Each lock is listed once.
    package static func withLocks<Result>(
        _ locks: [ThreadLock<State>], _ body: (inout [State]) throws -> Result
    ) rethrows -> Result {
        let order = locks.indices.sorted { ObjectIdentifier(locks[$0]) < ObjectIdentifier(locks[$1]) }
        for (index, next) in zip(order, order.dropFirst()) {
            precondition(locks[index] !== locks[next], "a lock listed twice")
        }
        for index in order { pthread_mutex_lock(locks[index].mutex) }
        defer { for index in order.reversed() { pthread_mutex_unlock(locks[index].mutex) } }
        var states = locks.map(\.state)
        defer { for (lock, state) in zip(locks, states) { lock.state = state } }
        return try body(&states)
    }

    /// Takes the lock, waits on `condition` while `blocked` holds and `deadline` has not
    /// passed (the lock released while waiting), then runs `body` under the lock with
    /// whether the wait ended at the deadline.
    package func withLock<Result>(
        waitingOn condition: ThreadCondition, until deadline: MonotonicInstant, while blocked: (inout State) -> Bool,
        _ body: (inout State, _ timedOut: Bool) throws -> Result
    ) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        var timedOut = false
        while blocked(&state) {
            guard MonotonicInstant.now < deadline else {
                timedOut = true
                break
            }
            var until = deadline.asTimespec
            _ = pthread_cond_timedwait(condition.condition, mutex, &until)
        }
        return try body(&state, timedOut)
    }
}

/// A condition variable for a ``ThreadLock``'s waiters, on `CLOCK_MONOTONIC` (so a change
/// of the wall clock moves no deadline).
package final class ThreadCondition: @unchecked Sendable {
    // @unchecked: a pthread condition, allocated once, used only through pthread calls.
    let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Wakes every waiter (they check their condition again).
    package func broadcast() { pthread_cond_broadcast(condition) }
}
