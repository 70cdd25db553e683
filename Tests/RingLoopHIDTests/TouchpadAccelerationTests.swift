import RingLoop
import RingLoopDevices
import RingLoopEvdev
import Testing

@testable import RingLoopHID

/// Touchpad pointer acceleration against libinput 1.22's own output (devices/libinput:
/// a real Synaptics finger on a pad reporting its resolution, read by `libinput
/// debug-events` on the booted kernel at four settings).
@Suite("Touchpad acceleration against libinput")
struct TouchpadAccelerationTests {
    struct Row {
        var frameTime: Double
        var unaccelerated: (dx: Double, dy: Double)
        var libinput: (dx: Double, dy: Double)
    }

    static func rows(_ name: String) throws -> [Row] {
        let text = try String(contentsOfFile: devicesFolder + "/libinput/touchpad-acceleration-\(name).tsv", encoding: .utf8)
        return text.split(separator: "\n").dropFirst().map { line in
            let values = line.split(separator: "\t").map { Double($0)! }
            return Row(frameTime: values[1], unaccelerated: (values[2], values[3]), libinput: (values[4], values[5]))
        }
    }

    /// The pad the rows were read from, as the touchpad stage sees it.
    static func pad() throws -> HIDDeviceInfo {
        let folder = devicesFolder + "/real/evemu-devices/touchpads/"
        let recording = try Recording.load(
            description: folder + "SynPS2 Synaptics TouchPad.lenovo-p50.desc", events: folder + "SynPS2 Synaptics TouchPad.leftmove.events")
        return deviceInfo(of: recording)
    }

    @Test(
        "libinput's unaccelerated deltas, normalized as the touchpad stage does, accelerate as libinput's did: every motion within 0.5 px or 15 %",
        arguments: [
            ("adaptive-resolution", AccelerationProfile.adaptive, 0.0), ("adaptive-resolution-fast", .adaptive, 0.75),
            ("adaptive-resolution-slow", .adaptive, -0.5), ("flat-resolution", .flat, 0.5),
        ])
    func sameAsLibinput(_ name: String, _ profile: AccelerationProfile, _ speed: Double) throws {
        let rows = try Self.rows(name)
        #expect(rows.count > 150)
        let normalization = TouchpadInterpreter(device: try Self.pad(), settings: TouchpadSettings()).normalizedPerUnitX
        // The pad reports 45 units a millimetre: 1000 dpi is 39.37 units a millimetre.
        #expect(abs(normalization - 1000 / 25.4 / 45) < 1e-9)
        let settings = try PointerSettings(acceleration: PointerAcceleration(profile: profile, speed: speed))
        var processor = PointerProcessor(defaults: settings)
        let device = HIDDeviceID(rawValue: 7)
        processor.setDevice(device, settings: settings, isTouchpad: true)
        var beyond: [String] = []
        var ours = 0.0
        var theirs = 0.0
        for (index, row) in rows.enumerated() {
            let motion = PointerMotionEvent(
                dx: 0, dy: 0, unacceleratedDX: row.unaccelerated.dx * normalization, unacceleratedDY: row.unaccelerated.dy * normalization)
            let event = HIDEvent(
                device: device, timestamp: MonotonicInstant(nanoseconds: UInt64(row.frameTime * 1e9)), payload: .pointerMotion(motion))
            guard case .pointerMotion(let moved) = processor.moved(event, motion).payload else {
                Issue.record("motion \(index) is no motion")
                continue
            }
            let error =
                ((moved.acceleratedDX - row.libinput.dx) * (moved.acceleratedDX - row.libinput.dx)
                + (moved.acceleratedDY - row.libinput.dy) * (moved.acceleratedDY - row.libinput.dy)).squareRoot()
            let length = (row.libinput.dx * row.libinput.dx + row.libinput.dy * row.libinput.dy).squareRoot()
            ours += (moved.acceleratedDX * moved.acceleratedDX + moved.acceleratedDY * moved.acceleratedDY).squareRoot()
            theirs += length
            if error > max(0.5, 0.15 * length) {
                beyond.append("\(index): libinput \(row.libinput), the chain \(moved.acceleratedDX), \(moved.acceleratedDY)")
            }
        }
        #expect(beyond.isEmpty, "\(beyond.prefix(3))")
        #expect(abs(ours - theirs) < 0.02 * theirs, "path \(ours) against libinput's \(theirs)")
    }

    @Test(
        "the flat profile on a touchpad: 0.2967 × (1 + speed) per normalized unit, as libinput measured at −1, 0 and 1; custom and adaptive differ"
    )
    func flatFactor() throws {
        for (speed, factor) in [(-1.0, 0.0), (0, 0.2967), (1, 0.5934)] {
            let acceleration = try PointerAcceleration(profile: .flat, speed: speed)
            #expect(abs(acceleration.touchpadFlatFactor - factor) < 1e-9)
        }
        // The adaptive profile: slower than flat at speed 0 (libinput: 0.902 of it for
        // normal and fast motion), slower still for very slow motion.
        let adaptive = PointerAcceleration.libinputDefault
        #expect(abs(adaptive.touchpadFactor(atVelocity: 1) / 0.2967 - 0.902) < 0.01)
        #expect(abs(adaptive.touchpadFactor(atVelocity: 3.5) / 0.2967 - 0.902) < 0.01)
        #expect(adaptive.touchpadFactor(atVelocity: 0.05) < 0.6 * adaptive.touchpadFactor(atVelocity: 1))
    }

    @Test(
        "the adaptive touchpad profile's factor for normal motion follows libinput's at each speed setting measured (−1 to 1 by quarters) within 4 %"
    )
    func adaptivePlateau() throws {
        // libinput 1.22's factor over 0.2967 for one-finger motion at 0.5 to 4 normalized
        // units per ms (kernel-check pointer/touchpad exports, median of each setting).
        let measured: [(Double, Double)] = [
            (-1, 0.0424), (-0.75, 0.0729), (-0.5, 0.2079), (-0.25, 0.4733), (0, 0.9015), (0.25, 1.5009), (0.5, 2.292), (0.75, 3.2313),
            (1, 4.3315),
        ]
        for (speed, plateau) in measured {
            let acceleration = try PointerAcceleration(profile: .adaptive, speed: speed)
            let ours = acceleration.touchpadFactor(atVelocity: 1) / PointerAcceleration.touchpadSlowdown
            #expect(abs(ours - plateau) <= 0.04 * plateau + 0.003, "speed \(speed): \(ours) against libinput's \(plateau)")
        }
    }
}
