import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The stamps of the touches the gesture stage takes back: a recording sent as a stream
/// device with its own stamps, placed ahead of the loop's clock (``gestureStreamLead``),
/// so that a stamp taken from the clock cannot pass for one of the input's.
@Suite("Gesture stage: the time of cancelled touches")
struct GestureCancellationStampTests {
    @Test(
        "the frame that cancels a drag's touch when a pan begins carries the time of the latest frame the recognizers saw, not the clock's",
        arguments: HIDEventSystem.Shape.allCases)
    func cancellationCarriesTheInputsTime(shape: HIDEventSystem.Shape) throws {
        var recording = try loadGestureRecording("touchscreen-slow-drag")
        // Three quarters of the drag: the finger is still down when the pan takes its touch
        // (the whole drag, read in one pass, would have ended before the recognizers saw it).
        let cut = recording.events[..<(recording.events.count * 3 / 4)].lastIndex { $0.isSynReport }! + 1
        recording.events.removeSubrange(cut...)
        let frames = try onFreshThread { () throws -> [HIDEvent] in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var frames: [HIDEvent] = []
            system.addHandler(kinds: [.digitizer]) { event in
                frames.append(event)
                return .pass
            }
            for recognizer in GestureSet.uikit.make() { system.addGestureRecognizer(recognizer) }
            try system.start()
            defer { system.stop() }
            try playGestureStream(recording, to: system, loop: loop)
            return frames
        }
        let cancelling = frames.indices.filter { index in
            guard case .digitizer(let frame) = frames[index].payload else { return false }
            return frame.contacts.contains { $0.phase == .cancelled }
        }
        try #require(cancelling.count == 1, "\(cancelling.count) frames cancel touches")
        let index = cancelling[0]
        let stamp = frames[index].timestamp
        let before = frames[..<index].map(\.timestamp)
        let after = frames[(index + 1)...].map(\.timestamp)
        // It was the clock's time as it went out: a second before the frames' stamps here.
        #expect(
            before.allSatisfy { $0 <= stamp } && after.allSatisfy { $0 >= stamp },
            "the cancellation is stamped \(stamp.nanoseconds), the frame before it \(before.last.map { "\($0.nanoseconds)" } ?? "none")")
        #expect(before.last == stamp || after.first == stamp, "the stamp of the frame before or after it")
    }
}
