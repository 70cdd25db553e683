import Foundation
import RingLoopTestSupport
import Testing

@testable import RingLoop

/// What the example prints, kept for the checks below instead of written among the test
/// results (this `print` shadows the standard library's in this file).
private let printed = PrintedLines()
private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    printed.append(items, separator: separator)
}

/// README's ten-line example, verbatim inside a function, so the README cannot rot.
@Suite("README")
struct ReadmeExampleTests {
    @Test("The ten-line example runs as README says")
    func tenLineExample() {
        let result = ThreadLock<(RingRunLoop.RunResult, Int)?>(nil)
        PosixThread.start {
            let loop = RingRunLoop.current
            let ticks = LoopBound(0, loop: loop)
            let timer = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { timer in
                ticks.value += 1; if ticks.value == 3 { timer.invalidate() }
            }
            let source = LoopSource { print("source performed") }
            let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in print(activity) }
            loop.add(timer, to: .common); loop.add(source, to: .default); loop.add(observer, to: .default)
            source.signal()  // any thread (then loop.wakeUp())
            let outcome = loop.run(mode: .default, for: .milliseconds(500))  // timedOut: the source keeps it alive
            result.withLock { $0 = (outcome, ticks.value) }
        }.join()
        let (outcome, ticks) = result.withLock { $0! }
        #expect(outcome == .timedOut)
        #expect(ticks == 3)
        #expect(printed.lines.first == "beforeWaiting" || printed.lines.first == "source performed")
        #expect(printed.lines.filter { $0 == "source performed" }.count == 1)
        #expect(printed.lines.contains("afterWaiting"))
    }
}

extension ReadmeExampleTests {
    @Test("README's ten-line example is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "## A loop in ten lines"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // The example's own lines, except its import and its final print of the result.
        let checked = lines.filter { !$0.isEmpty && !$0.hasPrefix("import ") && !$0.hasPrefix("print(loop.run") }
        #expect(checked.count >= 9)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
    }
}
