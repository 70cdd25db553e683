import Foundation
import RingLoopTestSupport
import Testing

/// The main loop must run on the main thread, which the test runner owns, so the check
/// runs in a child process: `ringloop doctor --json` runs `RingRunLoop.main` on its main
/// thread until a `DispatchQueue.main.async` block and a `@MainActor` task have run there.
@Suite("Main dispatch queue")
struct MainQueueTests {
    /// The `ringloop` executable built beside the test bundle.
    static var ringloopExecutable: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("ringloop")
    }

    @Test("RingRunLoop.main services DispatchQueue.main and @MainActor on the main thread")
    func mainQueueServiced() throws {
        let executable = Self.ringloopExecutable
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path),
            "build the command first (swift build): \(executable.path)")
        let process = try Spawned(executable.path, ["doctor", "--json"])
        let status = process.finish()
        let report = try #require(try JSONSerialization.jsonObject(with: Data(process.output.utf8)) as? [String: Any])
        #expect(report["mainQueueServiced"] as? Bool == true)
        #expect(report["mainActorServiced"] as? Bool == true)
        // The order ARCHITECTURE.md and the async article give for one pass of the main loop.
        #expect(report["mainLoopOrder"] as? [String] == ["job", "source", "timer", "dispatch", "mainActor"])
        #expect(report["waitCoreError"] == nil)
        #expect(status == 0)
    }
}
