import Foundation
import RingLoopTestSupport
import Testing

@Suite("ringloop monitor --tap and the touchpad switches", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct TouchpadCommandTests {
    static let touchpads = "devices/real/evemu-devices/touchpads/"

    /// The button and scroll events of a monitor run's JSON lines.
    static func pointerEvents(_ output: String) throws -> [[String: Any]] {
        try GestureCommandTests.objects(output).filter { ["button", "scroll"].contains($0["kind"] as? String) }
    }

    @Test("--tap --json: a real two- and three-finger tap are BTN_RIGHT and BTN_MIDDLE button events")
    func taps() throws {
        for (file, code) in [
            ("CyPS2 Cypress Trackpad.two_finger_tap.events", "BTN_RIGHT"), ("CyPS2 Cypress Trackpad.three_finger_tap.events", "BTN_MIDDLE"),
        ] {
            let result = try runCommand(["monitor", "--tap", "--json", Self.touchpads + file])
            #expect(result.status == 0, "\(result.error)")
            let buttons = try Self.pointerEvents(result.output)
            #expect(buttons.map { "\($0["code"] ?? "") \($0["state"] ?? "")" } == ["\(code) down", "\(code) up"], "\(file)")
            // Without --tap, no click.
            let plain = try runCommand(["monitor", "--touchpad", "--json", Self.touchpads + file])
            #expect(try Self.pointerEvents(plain.output).isEmpty)
        }
    }

    @Test("--scroll-method edge: the hp8470p's bottom-edge recording scrolls horizontally")
    func edgeScroll() throws {
        let result = try runCommand([
            "monitor", "--scroll-method", "edge", "--json", "--speed", "10",
            Self.touchpads + "SynPS2 Synaptics TouchPad.hp8470p.edge-scroll-horizontal.events",
            "--description", Self.touchpads + "SynPS2 Synaptics TouchPad.hp8470p.desc",
        ])
        #expect(result.status == 0, "\(result.error)")
        let scrolls = try Self.pointerEvents(result.output).filter { $0["kind"] as? String == "scroll" }
        #expect(!scrolls.isEmpty, "\(result.output.prefix(2000))")
    }

    @Test("bad touchpad values are refused with what would be valid; with --raw, refused")
    func invalid() throws {
        for (arguments, message) in [
            (["--tap-map", "rml"], "--tap-map: 'rml' is not one of lmr, lrm"),
            (["--click-method", "middle"], "--click-method: 'middle' is not one of areas, auto, clickfinger"),
            (["--scroll-method", "wheel"], "--scroll-method: 'wheel' is not one of edge, none, two-finger"),
            (["--palm-pressure", "0"], "--palm-pressure must be 1 or more device units, got 0"),
            (["--tap", "--raw"], "--touchpad and --tap make HID events; --raw prints evdev events"),
        ] {
            let result = try runCommand(["monitor"] + arguments + ["devices/keyboard.evemu"])
            #expect(result.status != 0)
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }
}
