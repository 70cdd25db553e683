import Testing

@testable import RingLoop

/// README's ten-line example, verbatim inside a function, so the README cannot rot.
@Suite("README")
struct ReadmeExampleTests {
    @Test("The ten-line example runs as README says")
    func tenLineExample() {
        let result = ThreadLock<(RingRunLoop.RunResult, Int)?>(nil)
        PosixThread.start {
            let loop = RingRunLoop.current
            var ticks = 0
            let timer = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { timer in
                ticks += 1; if ticks == 3 { timer.invalidate() }
            }
            let source = LoopSource { print("source performed") }
            let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in print(activity) }
            loop.add(timer, to: .common); loop.add(source, to: .default); loop.add(observer, to: .default)
            source.signal()  // any thread (then loop.wakeUp())
            let outcome = loop.run(mode: .default, for: .milliseconds(50))  // timedOut: the source keeps it alive
            result.withLock { $0 = (outcome, ticks) }
        }.join()
        let (outcome, ticks) = result.withLock { $0! }
        #expect(outcome == .timedOut)
        #expect(ticks == 3)
    }
}
