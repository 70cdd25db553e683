import Foundation
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// What the example prints, kept for the checks below instead of written among the test
/// results (this `print` shadows the standard library's in this file).
private let printed = PrintedLines()
private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    printed.append(items, separator: separator)
}

/// README's gesture example, verbatim inside a function (its devices recorded gestures
/// sent as stream devices with their own stamps, its endless run bounded), over recorded
/// gestures: the README cannot rot.
@Suite("README's gesture example")
struct GestureReadmeTests {
    @Test("The gesture example recognizes a double tap and a pinch with a rotation, as README says")
    func gestureExample() throws {
        let seen = try onFreshThread { () throws -> [GestureEvent] in
            var configuration = HIDEventSystem.Configuration(deviceDirectory: "/tmp", nodeNames: [])
            configuration.tracksInteractions = true  // the loop runs in Mode.tracking during drags
            let system = HIDEventSystem(configuration: configuration)
            let tap = TapGestureRecognizer(taps: 1)
            let doubleTap = TapGestureRecognizer(taps: 2)
            tap.require(toFail: doubleTap)  // the single tap waits for the double tap to fail
            doubleTap.addAction { event in print("double tap at", event.values.location, event.values.unit) }
            let pinch = PinchGestureRecognizer()
            let rotation = RotationGestureRecognizer()
            pinch.recognizeSimultaneously { _, other in other === rotation }
            pinch.addAction { event in print("pinch", event.state, event.values.scale) }
            for recognizer in [tap, doubleTap, pinch, rotation] as [GestureRecognizer] { system.addGestureRecognizer(recognizer) }
            try system.start()
            // What the test adds: a record of every report, the recordings, a bounded run.
            var reports: [GestureEvent] = []
            for recognizer in system.gestureRecognizers { recognizer.addAction { reports.append($0) } }
            for name in ["touchscreen-double-tap", "touchscreen-pinch-rotate"] {
                try playGestureStream(try loadGestureRecording(name), to: system, loop: RingRunLoop.current)
            }
            system.stop()
            return reports
        }
        #expect(GestureRun.recognized(seen) == ["doubleTap 1", "pinch 2", "rotation 2"])
        #expect(seen.first?.values.unit == .millimetres)
        #expect(printed.lines.filter { $0.hasPrefix("double tap at") && $0.hasSuffix("millimetres") }.count == 1)
        #expect(printed.lines.contains { $0.hasPrefix("pinch began") })
        #expect(printed.lines.contains { $0.hasPrefix("pinch ended") })
    }

    @Test("README's gesture example is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "## Gestures, the tracking mode and stalls"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // Its own lines, except the device folder (FUSE here) and the endless run.
        let checked = lines.filter {
            !$0.isEmpty && !$0.hasPrefix("var configuration") && !$0.hasPrefix("RingRunLoop.current.run()")
        }
        #expect(checked.count >= 12)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
    }
}
