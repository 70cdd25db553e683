import Foundation
import RingLoop
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// What the example prints, kept for the checks below instead of written among the test
/// results (this `print` shadows the standard library's in this file).
private let printed = PrintedLines()
private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    printed.append(items, separator: separator)
}

/// The motion example of docs/API.md, verbatim inside a function (its device folder a FUSE one, its
/// endless run bounded), over the DualSense recordings: the README cannot rot.
@Suite("docs/API.md's motion example", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MotionReadmeTests {
    @Test("The motion example prints samples, a shake and the orientations, as docs/API.md says")
    func motionExample() throws {
        let (shakes, orientations, samples) = try onFreshThread {
            () throws -> ([ShakeRecognizer.Phase], [DeviceOrientation], Int) in
            let path = "/tmp/ringloop-readme-motion-\(getpid())"
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            let system = HIDEventSystem(configuration: HIDEventSystem.Configuration(deviceDirectory: path))
            system.addHandler(kinds: [.motion]) { event in
                if case .motion(let sample) = event.payload { print(sample.acceleration, "g", sample.rotationRate, "°/s") }
                return .pass
            }
            let shake = ShakeRecognizer()
            shake.addAction { event in print("shake", event.phase) }  // began, ended or cancelled
            let orientation = OrientationRecognizer()
            orientation.addAction { event in print("now", event.orientation, "was", event.previous) }
            system.addMotionRecognizer(shake)
            system.addMotionRecognizer(orientation)
            try system.start()
            // What the test adds: a record of every report, the recordings, a bounded run.
            var shakes: [ShakeRecognizer.Phase] = []
            var orientations: [DeviceOrientation] = []
            var samples = 0
            shake.addAction { shakes.append($0.phase) }
            orientation.addAction { orientations.append($0.orientation) }
            system.addHandler(kinds: [.motion]) { _ in
                samples += 1
                return .pass
            }
            let loop = RingRunLoop.current
            for name in ["dualsense-shake", "dualsense-rotation"] {
                let recording = try loadMotionRecording(name)
                let node = try folder.addDevice(recording.description!, bufferSize: 65536, appliesFuzz: false)
                #expect(runUntil(loop) { system.devices.count == 1 })
                let before = samples
                let finished = Atomic<Bool>(false)
                let player = LoopThread(name: "replay")
                let toPlay = UncheckedBox((recording, node))
                player.perform {
                    _ = try? Replay.play(toPlay.value.0, to: toPlay.value.1, speed: .recorded)
                    finished.store(true, ordering: .releasing)
                    loop.wakeUp()
                }
                #expect(runUntil(loop) { finished.load(ordering: .acquiring) })
                player.stopAndJoin()
                let frames = recording.events.filter(\.isSynReport).count
                #expect(runUntil(loop) { samples - before >= frames }, "\(samples - before) of \(frames) samples")
                node.remove()
                #expect(runUntil(loop) { system.devices.isEmpty })
            }
            system.stop()
            return (shakes, orientations, samples)
        }
        #expect(shakes == [.began, .ended])
        #expect(
            orientations == [
                .portrait, .portrait, .landscapeLeft, .portraitUpsideDown, .landscapeRight, .portrait, .faceUp, .faceDown,
            ])
        #expect(samples == 700 + 2600)
        #expect(printed.lines.filter { $0.contains(" g ") && $0.hasSuffix("°/s") }.count == samples)
        #expect(printed.lines.filter { $0.hasPrefix("shake ") } == ["shake began", "shake ended"])
        #expect(printed.lines.filter { $0.hasPrefix("now ") }.count == orientations.count)
    }

    @Test("docs/API.md's motion example is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "## Motion: shake and orientation", in: "docs/API.md"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // Its own lines, except the device folder (FUSE here) and the endless run.
        let checked = lines.filter {
            !$0.isEmpty && !$0.hasPrefix("let system = HIDEventSystem") && !$0.hasPrefix("RingRunLoop.current.run()")
        }
        #expect(checked.count >= 11)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "docs/API.md line not in the tested example: \(line)")
        }
    }
}
