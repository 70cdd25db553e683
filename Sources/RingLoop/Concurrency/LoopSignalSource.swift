import CLibURing
import CThreads
import Glibc
import Synchronization
import SystemPackage

/// Signals handled on a loop by a callback: the callback form of
/// ``RingRunLoop/signals(_:)``, for code that is not async — a command that must end
/// cleanly on Ctrl-C or SIGTERM (stop its loop, remove what it created) instead of dying
/// mid-way.
///
/// ```swift
/// let loop = RingRunLoop.current
/// let signals = try LoopSignalSource([SIGINT, SIGTERM], on: loop) { _ in loop.stop() }
/// loop.run(mode: .default, until: .distantFuture)
/// signals.invalidate()
/// ```
///
/// The signals are read from a signalfd, which a signal reaches only while it is blocked
/// in the thread the kernel picks. `init` blocks the signals in the calling thread
/// (threads it starts afterwards inherit the mask); the package's own threads
/// (``LoopThread``, the event system's, the replay's, the port threads) block SIGINT,
/// SIGTERM, SIGHUP and SIGQUIT from birth; and any other thread that started earlier
/// without blocking them (the app's own, a dispatch worker) gets a handler, installed by
/// `init` in place of the default action, that blocks the signal in that thread and sends
/// it to the process again, where the signalfd reads it. So the order does not matter: a
/// `LoopThread` made before the source does not end the process on Ctrl-C.
///
/// Threading: the handler runs on the loop's thread, in the loop's common modes, once per
/// signal read (the kernel merges repeats of one signal that arrive before the loop reads
/// them, as for any pending signal). ``invalidate()`` may be called from any thread.
public final class LoopSignalSource: Sendable {
    /// The signals handled.
    public let signals: Set<Int32>
    private let fd: Int32
    private let source: LoopPortSource
    private let loop: RingRunLoop
    private let invalidated = Atomic<Bool>(false)

    /// Blocks `signals` in the calling thread and calls `handler` on `loop` with each one
    /// that arrives.
    /// - Parameters:
    ///   - signals: Signal numbers (1–64, not SIGKILL or SIGSTOP).
    ///   - loop: The loop whose thread runs `handler`.
    ///   - handler: Called with the signal's number.
    /// - Throws: The `Errno` of `signalfd` or `pthread_sigmask`, or `EINVAL` for a number
    ///   that is not a signal.
    public init(
        _ signals: Set<Int32>, on loop: RingRunLoop, handler: @escaping @Sendable (_ signal: Int32) -> Void
    ) throws(Errno) {
        let fd = try Self.blockedDescriptor(signals)
        self.signals = signals
        self.fd = fd
        self.loop = loop
        source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { _ in
            for signal in Self.drain(fd) { handler(signal) }
        }
        loop.addFromAnyThread(source)
    }

    deinit { invalidate() }

    /// Stops handling the signals and closes the signalfd (on the loop's thread, after the
    /// loop stopped watching it). The signals stay blocked. Safe to call twice.
    public func invalidate() {
        guard !invalidated.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.removeThenClose(source, fd)
    }

    /// Blocks `signals` in the calling thread and returns a non-blocking signalfd for them.
    static func blockedDescriptor(_ signals: Set<Int32>) throws(Errno) -> Int32 {
        var mask = sigset_t()
        sigemptyset(&mask)
        for number in signals {
            guard number > 0, number <= 64, number != SIGKILL, number != SIGSTOP else { throw .invalidArgument }
            sigaddset(&mask, number)
        }
        let blocked = pthread_sigmask(SIG_BLOCK, &mask, nil)
        guard blocked == 0 else { throw Errno(rawValue: blocked) }
        // A thread started before this call that does not block a signal would take its
        // default action (the package's own threads block the stop signals from birth):
        // such a thread forwards it to the process instead and blocks it from then on.
        for number in signals {
            let installed = ringloop_forward_signal(number)
            guard installed == 0 else { throw Errno(rawValue: -installed) }
        }
        let fd = signalfd(-1, &mask, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        return fd
    }

    /// Every signal queued on `fd` now.
    static func drain(_ fd: Int32) -> [Int32] {
        var numbers: [Int32] = []
        var info = signalfd_siginfo()
        while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) == MemoryLayout<signalfd_siginfo>.size {
            numbers.append(Int32(info.ssi_signo))
        }
        return numbers
    }
}
