import ArgumentParser
import Glibc
import RingLoop

/// An app in the natural order that used to die on Ctrl-C: it starts a `LoopThread` (and,
/// with `--foreign-thread`, a thread of its own that blocks nothing) *before* it asks for
/// SIGINT and SIGTERM with `signals(_:)`, then waits for one. On a signal it runs its
/// shutdown: stops the worker, prints what it did (buffered: lost if the process were
/// killed), and exits 0.
struct LateSignals: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "late-signals",
        abstract: "Start a LoopThread before signals(_:), then shut down cleanly on SIGINT or SIGTERM (for tests).",
        shouldDisplay: false)

    @Flag(help: "Also start a plain pthread, blocking no signal, before signals(_:).")
    var foreignThread = false

    func run() throws {
        let worker = LoopThread(name: "worker")
        if foreignThread {
            var thread = pthread_t()
            let created = pthread_create(
                &thread, nil,
                { _ in
                    while true { pause() }
                }, nil)
            guard created == 0 else { throw ExitCode(71) }
            pthread_detach(thread)
        }
        let loop = RingRunLoop.current
        let signals = try loop.signals([SIGINT, SIGTERM])
        // Ready: stdout is a pipe, so this line is flushed by hand; the rest is not.
        print("ready")
        fflush(nil)
        let received = LoopBound<Int32>(0, loop: loop)
        Task(executorPreference: loop) {
            for await signal in signals {
                received.value = signal
                loop.stop()
                break
            }
        }
        while received.value == 0 { loop.run() }
        worker.stopAndJoin()
        print("shut down cleanly on signal \(received.value)")
    }
}
