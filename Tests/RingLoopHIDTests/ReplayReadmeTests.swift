import RingLoop
import RingLoopDevices
import RingLoopHID
import RingLoopTestSupport
import Testing

/// README's "Replaying a recording in a test", verbatim: the test below is README's (run
/// from the package's folder, as `swift test` is), and the check after it holds README to it.
@Suite("README's replay in a test", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ReplayReadmeTests {
    @Test func theKeyboardRecordingTypesThirtyKeys() throws {
        let recording = try Recording.loadAll(contentsOf: "devices/keyboard.evemu")
        let session = try ReplaySession(files: [recording], configuration: .init(speed: .scaled(4)))
        defer { session.close() }
        let loop = RingRunLoop.current
        let system = HIDEventSystem(configuration: .init(replaying: session, finished: { loop.stop() }))
        var keys = 0
        system.addHandler(kinds: [.key]) { _ in
            keys += 1; return .pass
        }
        try system.start()  // attaches the session's devices, then starts the replay
        #expect(loop.run(mode: .default, for: .seconds(10)) == .stopped)  // bounded: a test never hangs
        system.stop()
        #expect(keys == 30)  // 11 down, 11 up, 8 repeats, as recorded
    }

    @Test("README's replay in a test is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "### Replaying a recording in a test"))
        let ran = ReadmeExample.sourceLines(#filePath)
        let checked = lines.filter { !$0.isEmpty }
        #expect(checked.count >= 14)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
    }
}
