import CThreads

#if canImport(Glibc)
import Glibc
#endif

/// A joinable POSIX thread running a closure: the smallest wrapper the package needs
/// (Foundation's `Thread` is not used, so RingLoop does not depend on Foundation).
package final class PosixThread: @unchecked Sendable {
    // @unchecked: `handle` is written once, by `start`, before any other thread reads it;
    // `body` is read and cleared only by the thread it runs on.
    private var handle = pthread_t()
    /// Cleared once it has run, so a thread object kept after its run (by an owner that
    /// the body itself captured) holds none of the body's captures.
    private var body: (@Sendable () -> Void)?
    private let name: String?

    private init(name: String?, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }

    /// Starts a thread running `body`. Fails only if the system cannot create threads.
    package static func start(name: String? = nil, _ body: @escaping @Sendable () -> Void) -> PosixThread {
        let thread = PosixThread(name: name, body: body)
        let context = Unmanaged.passRetained(thread).toOpaque()
        // Born with the stop signals blocked (a thread inherits its creator's mask): they
        // are for the app's `signals(_:)`, wherever it was called, never this thread's
        // default action (which ended the process on Ctrl-C when a LoopThread came first).
        var stopSignals = sigset_t()
        var creatorMask = sigset_t()
        ringloop_stop_signals(&stopSignals)
        pthread_sigmask(SIG_BLOCK, &stopSignals, &creatorMask)
        defer { pthread_sigmask(SIG_SETMASK, &creatorMask, nil) }
        let result = pthread_create(
            &thread.handle, nil,
            { context in
                let thread = Unmanaged<PosixThread>.fromOpaque(context!).takeRetainedValue()
                if let name = thread.name { ringloop_set_thread_name(name) }
                let body = thread.body
                thread.body = nil
                body?()
                return nil
            }, context)
        precondition(result == 0, "pthread_create failed: errno \(result)")
        return thread
    }

    /// Waits for the thread to finish. Called on the thread itself (an owner stopped from
    /// a callback that runs there), it cannot wait for itself: it detaches the thread
    /// instead, so the system frees it when its body returns, rather than leaving it
    /// joinable and never joined.
    package func join() {
        if pthread_equal(pthread_self(), handle) != 0 {
            pthread_detach(handle)
        } else {
            pthread_join(handle, nil)
        }
    }
}
