import Foundation
import RingLoopTestSupport
import Testing

@Suite("ringloop monitor's pointer options", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct PointerCommandTests {
    @Test(
        "a real mouse with --accel-profile flat --accel-speed 0.5 --screen: every motion's accelerated deltas are 1.5 × the raw, the cursor follows them"
    )
    func flatWithCursor() throws {
        let result = try runCommand(
            [
                "monitor", "devices/real/evemu-devices/mice/Ultrathin Touch Mouse.events", "--accel-profile", "flat", "--accel-speed",
                "0.5",
                "--screen", "1920x1080", "--json", "--speed", "4", "--filter", "pointerMotion",
            ], timeout: 120)
        #expect(result.status == 0, "\(result.error)")
        let motions = jsonLines(result.output, kind: "pointerMotion")
        #expect(motions.count == 349, "\(motions.count) motions (libinput reads 349 from the same recording on the booted kernel)")
        var x = 959.0
        var y = 539.0
        for motion in motions {
            let dx = try #require(motion["dx"] as? Int)
            let dy = try #require(motion["dy"] as? Int)
            #expect(motion["acceleratedDX"] as? Double == 1.5 * Double(dx) && motion["acceleratedDY"] as? Double == 1.5 * Double(dy))
            x = min(max(x + 1.5 * Double(dx), 0), 1919)
            y = min(max(y + 1.5 * Double(dy), 0), 1079)
            let cursor = try #require(motion["cursor"] as? [String: Any], "\(motion)")
            #expect(cursor["x"] as? Double == x && cursor["y"] as? Double == y && cursor["screen"] as? Int == 0, "\(cursor)")
        }
    }

    @Test(
        "bad pointer values are refused with what would be valid",
        arguments: [
            (["--accel-speed", "1.5"], "1.5 is not a speed; valid speeds are −1…1"),
            (["--accel-profile", "fast"], "'fast' is not a profile; valid: flat, adaptive, custom"),
            (["--accel-points", "1 0"], "1 point(s) do not make a curve; a custom curve has 2…64 points after its step"),
            (["--accel-points", "1 0 -2"], "-2.0 is not a point; a custom curve's points are speeds of 0 or more"),
            (["--scroll-factor", "0"], "0.0 is not a scroll factor; valid factors are numbers above 0"),
        ])
    func refusals(arguments: [String], message: String) throws {
        let result = try runCommand(["monitor", "devices/real/evemu-devices/mice/Ultrathin Touch Mouse.events"] + arguments)
        #expect(result.status != 0)
        #expect(result.error.contains(message), "\(result.error)")
    }
}
