#if canImport(Glibc)
import Glibc
#endif

/// A DualSense held in the hand, as input reports of the USB controller (report 0x01, 64
/// bytes: sticks, triggers, sequence number, buttons, gyroscope and accelerometer as
/// little-endian 16-bit raw values, the sensor clock in 1/3 µs, two touch points, the
/// battery), 250 a second. The physical model: the "up" vector the accelerometer feels
/// (1 g) turns with the controller as its angular velocity says (du/dt = −ω × u, in the
/// controller's frame), so the two sensors agree; a shake adds an acceleration along x.
/// Raw values are the calibrated ones the driver will compute, undone with the
/// calibration the controller's feature report 0x05 gives (as hid-playstation computes
/// it: bias, then numerator over denominator).
enum DualSenseModel {
    static let rate = 250
    /// 1 g and 1 deg/s in the driver's units (hid-playstation: DS_ACC_RES_PER_G,
    /// DS_GYRO_RES_PER_DEG_S).
    static let unitsPerG = 8192.0
    static let unitsPerDegreePerSecond = 1024.0
    /// hid-playstation's calibration for the bundled feature report 0x05 (numerator,
    /// denominator, bias) per axis: x, y, z.
    static let gyroCalibration: [(numerator: Double, denominator: Double, bias: Double)] = [
        (1_105_920, 17727, 0), (1_105_920, 17728, 0), (1_105_920, 17769, 0),
    ]
    static let accelerometerCalibration: [(numerator: Double, denominator: Double, bias: Double)] = [
        (16384, 16374, 0), (16384, 16362, -114), (16384, 16395, 2),
    ]

    /// The phases: how long, the angular velocity (deg/s, controller frame), and whether
    /// the controller is shaken along x.
    static let phases: [(seconds: Double, omega: (Double, Double, Double), shake: Bool)] = [
        (0.5, (0, 0, 0), false),  // at rest, face up; a finger swipes the touchpad
        (1.5, (0, 0, 0), true),  // shaken along x, 6 Hz, ±2 g
        (0.5, (0, 0, 0), false),  // at rest; cross pressed
        (1.0, (0, 0, 90), false),  // rolled 90° about z: on its side
        (0.5, (0, 0, 0), false),
        (1.0, (0, 90, 0), false),  // turned 90° about y
        (0.5, (0, 0, 0), false),
        (1.0, (90, 0, 0), false),  // pitched 90° about x
        (0.5, (0, 0, 0), false),
    ]

    static func reports() -> [(time: Int64, report: [UInt8])] {
        var out: [(Int64, [UInt8])] = []
        var up = (x: 0.0, y: 1.0, z: 0.0)
        let dt = 1.0 / Double(rate)
        var sample: Int64 = 0
        var sequence: UInt8 = 0
        var sensorClock: UInt32 = 0
        for (index, phase) in phases.enumerated() {
            let steps = Int(phase.seconds * Double(rate))
            for step in 0..<steps {
                let t = Double(step) * dt
                let radians = (phase.omega.0 * .pi / 180, phase.omega.1 * .pi / 180, phase.omega.2 * .pi / 180)
                // du/dt = −ω × u
                let cross = (
                    radians.1 * up.z - radians.2 * up.y, radians.2 * up.x - radians.0 * up.z, radians.0 * up.y - radians.1 * up.x
                )
                up = (up.x - cross.0 * dt, up.y - cross.1 * dt, up.z - cross.2 * dt)
                let length = (up.x * up.x + up.y * up.y + up.z * up.z).squareRoot()
                up = (up.x / length, up.y / length, up.z / length)
                var acceleration = up
                if phase.shake { acceleration.x += 2 * sin(2 * .pi * 6 * t) }
                var report = [UInt8](repeating: 0, count: 64)
                report[0] = 0x01
                report[1...4] = [0x80, 0x80, 0x80, 0x80]  // sticks centred; triggers (5, 6) released
                report[7] = sequence
                sequence &+= 1
                report[8] = 0x08  // hat neutral
                if index == 2 && t < 0.2 { report[8] |= 0x20 }  // cross
                let gyro = [phase.omega.0, phase.omega.1, phase.omega.2].enumerated().map { axis, value in
                    raw(value * unitsPerDegreePerSecond, gyroCalibration[axis])
                }
                let accel = [acceleration.x, acceleration.y, acceleration.z].enumerated().map { axis, value in
                    raw(value * unitsPerG, accelerometerCalibration[axis])
                }
                for (offset, value) in zip([16, 18, 20, 22, 24, 26], gyro + accel) {
                    report[offset] = UInt8(truncatingIfNeeded: value)
                    report[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
                }
                sensorClock &+= UInt32(1_000_000 / rate * 3)
                for byte in 0..<4 { report[28 + byte] = UInt8(truncatingIfNeeded: sensorClock >> (8 * UInt32(byte))) }
                // Touch points: bit 7 set while no finger; x 12 bits, y 12 bits.
                report[33] = 0x80
                report[37] = 0x80
                if index == 0 && t < 0.4 {
                    let x = Int(400 + 1100 * t / 0.4)
                    let y = 500
                    report[33] = 0x01  // finger 1, touching
                    report[34] = UInt8(x & 0xff)
                    report[35] = UInt8((x >> 8) & 0x0f | (y & 0x0f) << 4)
                    report[36] = UInt8(y >> 4)
                }
                report[53] = 0x2a  // charging complete, full
                out.append((sample * 1_000_000 / Int64(rate), report))
                sample += 1
            }
        }
        return out
    }

    /// The raw value whose calibrated value is `calibrated`.
    static func raw(_ calibrated: Double, _ calibration: (numerator: Double, denominator: Double, bias: Double)) -> Int16 {
        let value = calibrated * calibration.denominator / calibration.numerator + calibration.bias
        return Int16(max(-32768, min(32767, value.rounded())))
    }
}

/// A mouse of `resolution-multiplier-mouse.hid` in the hand, as its report 0x11 (buttons,
/// x, y, wheel, AC pan; 8-bit relative values), 125 a second: a square of 40 counts a
/// side, a left click, the wheel 2 detents up and 1 down in quarter detents (the driver
/// set the resolution multiplier to 4), then tilted right twice.
enum MouseModel {
    static func reports() -> [(time: Int64, report: [UInt8])] {
        var out: [(Int64, [UInt8])] = []
        func report(buttons: UInt8 = 0, x: Int8 = 0, y: Int8 = 0, wheel: Int8 = 0, pan: Int8 = 0) {
            out.append(
                (
                    Int64(out.count) * 8000,
                    [0x11, buttons, UInt8(bitPattern: x), UInt8(bitPattern: y), UInt8(bitPattern: wheel), UInt8(bitPattern: pan)]
                )
            )
        }
        for (x, y) in [(Int8(5), Int8(0)), (0, 5), (-5, 0), (0, -5)] {
            for _ in 0..<8 { report(x: x, y: y) }
        }
        report(buttons: 1)
        report(buttons: 1)
        report()
        for _ in 0..<8 { report(wheel: 1) }
        for _ in 0..<4 { report(wheel: -1) }
        for _ in 0..<2 { report(pan: 1) }
        report()
        return out
    }
}

/// Fingers on a Windows 8 multitouch device, as reports built from its descriptor
/// (`HIDReportFormat`): each frame sets, per finger, tip switch, confidence, contact id,
/// x and y, then the contact count and the scan time (100 µs units). A device that has
/// fewer finger collections in a report than fingers down (hybrid mode) sends the frame
/// in several reports, the contact count in the first only (as Windows asks).
enum MultitouchModel {
    typealias Finger = (id: Int64, x: Int64, y: Int64, touching: Bool)

    static func reports(
        _ format: HIDReportFormat, frames: [(time: Int64, fingers: [Finger], button: Bool)]
    ) -> [(time: Int64, report: [UInt8])] {
        typealias Usages = HIDReportFormat.Usages
        guard let id = format.fields.first(where: { $0.kind == .input && $0.usage == Usages.contactIdentifier })?.reportID else {
            return []
        }
        let perReport = format.fields.filter { $0.kind == .input && $0.reportID == id && $0.usage == Usages.contactIdentifier }.count
        var out: [(Int64, [UInt8])] = []
        for frame in frames {
            var remaining = frame.fingers
            var first = true
            repeat {
                var report = format.emptyReport(.input, id: id)
                for (slot, finger) in remaining.prefix(perReport).enumerated() {
                    format.set(Usages.tipSwitch, finger.touching ? 1 : 0, occurrence: slot, id: id, in: &report)
                    format.set(Usages.confidence, 1, occurrence: slot, id: id, in: &report)
                    format.set(Usages.contactIdentifier, finger.id, occurrence: slot, id: id, in: &report)
                    format.set(Usages.x, finger.x, occurrence: slot, id: id, in: &report)
                    format.set(Usages.y, finger.y, occurrence: slot, id: id, in: &report)
                }
                format.set(Usages.contactCount, first ? Int64(frame.fingers.count) : 0, id: id, in: &report)
                format.set(Usages.scanTime, (frame.time / 100) & 0xffff, id: id, in: &report)
                format.set(Usages.button1, frame.button ? 1 : 0, id: id, in: &report)
                out.append((frame.time, report))
                remaining = Array(remaining.dropFirst(perReport))
                first = false
            } while !remaining.isEmpty
        }
        return out
    }

    /// Two fingers spreading apart (a pinch out) in 30 frames, lifted; then a one-finger
    /// tap; 100 frames a second, on a screen of 0…32767.
    static func touchscreen(_ format: HIDReportFormat) -> [(time: Int64, report: [UInt8])] {
        var frames: [(Int64, [Finger], Bool)] = []
        for step in 0..<30 {
            let spread = Int64(step) * 200
            frames.append((Int64(frames.count) * 10_000, [(1, 12000 - spread, 16000, true), (2, 20000 + spread, 16000, true)], false))
        }
        frames.append((Int64(frames.count) * 10_000, [(1, 6200, 16000, false), (2, 25800, 16000, false)], false))
        for _ in 0..<5 { frames.append((Int64(frames.count) * 10_000, [(3, 16000, 8000, true)], false)) }
        frames.append((Int64(frames.count) * 10_000, [(3, 16000, 8000, false)], false))
        return reports(format, frames: frames.map { ($0.0, $0.1, $0.2) })
    }

    /// Two fingers scrolling down together in 30 frames, lifted; then one finger pressing
    /// the pad down (a click) and letting go; 100 frames a second, on a pad of 0…3200 ×
    /// 0…2198.
    static func touchpad(_ format: HIDReportFormat) -> [(time: Int64, report: [UInt8])] {
        var frames: [(Int64, [Finger], Bool)] = []
        for step in 0..<30 {
            let y = 600 + Int64(step) * 30
            frames.append((Int64(frames.count) * 10_000, [(0, 1200, y, true), (1, 1800, y, true)], false))
        }
        frames.append((Int64(frames.count) * 10_000, [(0, 1200, 1470, false), (1, 1800, 1470, false)], false))
        frames.append((Int64(frames.count) * 10_000, [(2, 1600, 1800, true)], false))
        for _ in 0..<5 { frames.append((Int64(frames.count) * 10_000, [(2, 1600, 1800, true)], true)) }
        frames.append((Int64(frames.count) * 10_000, [(2, 1600, 1800, true)], false))
        frames.append((Int64(frames.count) * 10_000, [(2, 1600, 1800, false)], false))
        return reports(format, frames: frames.map { ($0.0, $0.1, $0.2) })
    }
}
