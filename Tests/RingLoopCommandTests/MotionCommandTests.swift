import Foundation
import RingLoopTestSupport
import Testing

@Suite("ringloop monitor: motion, shakes and orientation", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MotionCommandTests {
    @Test("--filter motion --json prints samples with acceleration in g, rotation rate in °/s and the sensor's time")
    func motionJSON() throws {
        let result = try runCommand(["monitor", "--json", "--filter", "motion", "devices/motion/dualsense-bump.evemu"])
        #expect(result.status == 0, "\(result.error)")
        let objects = try GestureCommandTests.objects(result.output)
        let samples = objects.filter { $0["kind"] as? String == "motion" }
        #expect(samples.count == 390, "1.56 s at 250 Hz: \(samples.count)")
        #expect(objects.count == samples.count + 2, "only motion, besides the arrival and the removal")
        let first = try #require(samples.first)
        let acceleration = try #require(first["acceleration"] as? [String: Double])
        #expect(abs(acceleration["z"]! - 1) < 0.05, "lying face up: \(acceleration)")
        let rotation = try #require(first["rotationRate"] as? [String: Double])
        #expect(Set(rotation.keys) == ["x", "y", "z"])
        #expect(first["sensorTime"] as? Int == (1 << 32) - 1_500_000)
        #expect(first["calibrated"] as? Bool == true)
        let last = try #require(samples.last)
        #expect(abs((last["sampleRate"] as? Double ?? 0) - 250) < 1)
        #expect(result.error.contains("motion 390"), "\(result.error)")
    }

    @Test("--gestures --json prints a shake as the gesture 'shake' and orientation changes as kind 'orientation'")
    func shakeAndOrientation() throws {
        let result = try runCommand(["monitor", "--gestures", "--json", "devices/motion/dualsense-shake.evemu"])
        #expect(result.status == 0, "\(result.error)")
        let objects = try GestureCommandTests.objects(result.output)
        let shakes = objects.filter { $0["kind"] as? String == "gesture" }
        #expect(shakes.compactMap { $0["gesture"] as? String } == ["shake", "shake"])
        #expect(shakes.compactMap { $0["state"] as? String } == ["began", "ended"])
        for key in ["device", "time", "strokes", "peak", "duration"] { #expect(shakes.last?[key] != nil, "\(key)") }
        let orientations = objects.filter { $0["kind"] as? String == "orientation" }
        #expect(orientations.compactMap { $0["orientation"] as? String } == ["portrait"])
        #expect(orientations.first?["previous"] as? String == "unknown")
        #expect(result.error.contains("gestures: 1 recognized (shake 1)"), "\(result.error)")
    }

    @Test("--device-class motion and --filter motion are accepted; a wrong kind names the valid ones, motion among them")
    func filters() throws {
        let wrong = try runCommand(["monitor", "--filter", "shake", "devices/motion/dualsense-bump.evemu"])
        #expect(wrong.status != 0)
        #expect(wrong.error.contains("motion"), "\(wrong.error)")
        let quiet = try runCommand([
            "monitor", "--json", "--device-class", "motion", "--filter", "motion", "devices/keyboard.evemu",
        ])
        #expect(quiet.status == 0, "\(quiet.error)")
        #expect(try GestureCommandTests.objects(quiet.output).allSatisfy { $0["kind"] as? String != "motion" })
    }
}
