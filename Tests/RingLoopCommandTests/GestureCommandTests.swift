import Foundation
import RingLoopTestSupport
import Testing

@Suite("ringloop monitor --gestures and stalls", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct GestureCommandTests {
    /// The JSON objects of a monitor run's standard output.
    static func objects(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
        }
    }

    @Test(
        "--gestures --json prints each state a gesture enters, with the documented names",
        arguments: [
            ("touchscreen-swipe-left", "swipe", 1), ("touchscreen-pinch-out", "pinch", 2),
            ("touchpad-swipe-3-fingers-left", "touchpadSwipe", 3), ("touchpad-double-tap", "doubleTap", 1),
        ])
    func gesturesJSON(recording: String, gesture: String, fingers: Int) throws {
        // Stalls are counted against a threshold no recognizer comes near (a second; ten
        // under a sanitizer, whose child can be descheduled that long on a loaded machine):
        // a pass that long is a hang, not the machine's load.
        let stallThreshold = runningUnderSanitizer ? 10_000 : 1000
        let result = try runCommand([
            "monitor", "--gestures", "--json", "--stall-threshold", "\(stallThreshold)", "devices/gestures/\(recording).evemu",
        ])
        #expect(result.status == 0, "\(result.error)")
        let gestures = try Self.objects(result.output).filter { $0["kind"] as? String == "gesture" }
        #expect(!gestures.isEmpty)
        for object in gestures {
            for key in ["device", "time", "gesture", "state", "fingers", "location", "translation", "velocity", "scale", "rotation"] {
                #expect(object[key] != nil, "\(key) missing in \(object)")
            }
            let location = try #require(object["location"] as? [String: Any])
            #expect(location["x"] is Double && location["y"] is Double)
            #expect(object["unit"] as? String == "mm")
        }
        #expect(Set(gestures.compactMap { $0["gesture"] as? String }) == [gesture])
        let last = try #require(gestures.last)
        #expect(last["state"] as? String == "ended")
        #expect(last["fingers"] as? Int == fingers)
        if gesture == "swipe" { #expect(last["direction"] as? String == "left") }
        if gesture == "pinch" { #expect((last["scale"] as? Double ?? 0) > 2) }
        if gesture == "doubleTap" { #expect(last["taps"] as? Int == 2) }
        #expect(result.error.contains("gestures: 1 recognized (\(gesture) 1)"), "\(result.error)")
        #expect(result.error.contains("stalls: 0 (passes of the loop longer than"), "\(result.error)")
    }

    @Test("--gestures in text: one line per state change, and the summary counts them")
    func gesturesText() throws {
        let result = try runCommand(["monitor", "--gestures", "devices/gestures/touchscreen-long-press.evemu"])
        #expect(result.status == 0, "\(result.error)")
        let lines = result.output.split(separator: "\n").filter { $0.contains(": gesture ") }
        #expect(lines.first?.contains("gesture longPress began, 1 finger(s) at") == true, "\(lines)")
        #expect(lines.last?.contains("gesture longPress ended") == true, "\(lines)")
        #expect(result.output.contains("gestures: 1 recognized (longPress 1)"))
    }

    @Test("--stall-threshold outside 1–60000 ms is refused with the range; --gestures with --raw is refused")
    func invalidOptions() throws {
        for value in ["0", "-5", "nan", "90000"] {
            let result = try runCommand(["monitor", "--stall-threshold=\(value)", "devices/keyboard.evemu"])
            #expect(result.status != 0)
            #expect(result.error.contains("between 1 and 60000 milliseconds"), "\(value): \(result.error)")
        }
        let raw = try runCommand(["monitor", "--raw", "--gestures", "devices/keyboard.evemu"])
        #expect(raw.status != 0)
        #expect(raw.error.contains("--gestures recognizes HID events"), "\(raw.error)")
    }
}
