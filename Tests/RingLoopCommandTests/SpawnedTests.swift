import Glibc
import RingLoopTestSupport
import Testing

/// The test support's child process: a test that stops early must not leave its children
/// running.
@Suite("Spawned children")
struct SpawnedTests {
    @Test("a child is ended when its Spawned goes, though its pipes are still open and read")
    func droppedChildEnds() throws {
        var pid: pid_t = 0
        do {
            let child = try Spawned("/bin/sh", ["-c", "echo started; exec sleep 600"])
            pid = child.pid
            #expect(child.waitFor("started"), "\(child.error)")
            #expect(child.status == nil)
        }
        // Gone and reaped: no process has the id (a zombie would still answer kill 0).
        let answer = kill(pid, 0)
        let error = errno
        #expect(answer == -1 && error == ESRCH, "child \(pid) still there")
    }

    @Test("finish gives up on pipes a grandchild keeps open, and keeps what came")
    func grandchildKeepsPipes() throws {
        // The grandchild ends on its own (its sleep is short) if the test stops early.
        let child = try Spawned("/bin/sh", ["-c", "echo started; sleep 30 & echo \"$!\""])
        #expect(child.finish(timeout: .seconds(20)) == 0)
        #expect(child.output.hasPrefix("started\n"), "\(child.output)")
        let grandchild = try #require(child.output.split(separator: "\n").last.flatMap { pid_t($0) }, "\(child.output)")
        kill(grandchild, SIGKILL)
    }
}
