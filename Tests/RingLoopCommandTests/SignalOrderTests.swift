import Foundation
import Glibc
import RingLoopTestSupport
import Testing

/// An app that starts a `LoopThread` before `signals(_:)` (a natural order) shuts down
/// cleanly on Ctrl-C and on systemd's SIGTERM: the package's threads block the stop
/// signals from birth, and a thread that is not the package's hands them on.
@Suite("Signals in any order")
struct SignalOrderTests {
    @Test(
        "a LoopThread (and a plain thread blocking nothing) started before signals(_:): SIGINT and SIGTERM run the app's shutdown",
        arguments: [(SIGINT, false), (SIGTERM, false), (SIGINT, true), (SIGTERM, true)])
    func lateSignals(signal: Int32, foreignThread: Bool) throws {
        let app = try Spawned(ringloopFixtures, ["late-signals"] + (foreignThread ? ["--foreign-thread"] : []))
        #expect(app.waitFor("ready"), "\(app.error)")
        app.signal(signal)
        let status = app.finish(timeout: .seconds(20))
        #expect(status == 0, "exit status \(status) (128 + \(signal) is the signal's default action): \(app.error)")
        #expect(app.output == "ready\nshut down cleanly on signal \(signal)\n", "\(app.output)")
    }
}
