import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

/// Touchpad pointer acceleration against libinput 1.22 on the booted kernel: real
/// touchpads' recordings of one finger moving (devices/real), played at the recorded pace
/// through uinput, read by `libinput debug-events --set-profile=P --set-speed=S` and by a
/// chain with the touchpad and pointer stages of the same settings.
///
/// - `pointer/touchpad/adaptive/…`: libinput's touchpad profile, adaptive (its default).
/// - `pointer/touchpad/flat/…`: the flat profile on a touchpad.
///
/// What must agree is the acceleration: each of libinput's unaccelerated deltas,
/// normalized as the touchpad stage normalizes the pad's, goes through the chain's pointer
/// processor at the kernel time of its frame (the two clocks aligned on the pairing of
/// frames that matches most), and the result is compared with libinput's accelerated
/// delta within ``tolerance``. The chain's own motion is compared too and reported, not
/// required: libinput moves on other frames of some pads (measured on the Synaptics
/// recording: the first 23 motions equal, then libinput's hysteresis for pads it finds
/// wobbling, 180 motions to the chain's 255, 15 % less path), and libinput's device
/// database gives some pads a resolution they do not report (Elantech pads 31 units a
/// millimetre; the chain takes a pad without resolution as 69 × 50 mm), which the
/// touchpad stage does not model.
enum TouchpadMotionChecks {
    /// Stated before the first run (of the comparison of the chain's own motion; the
    /// acceleration of libinput's deltas, compared since, takes the same): at least 90 % of
    /// libinput's motions within 0.5 px or 15 % of libinput's delta (whichever is larger),
    /// and the whole path's length within 5 % of libinput's. Measured on Linux 6.12: every
    /// motion within, the largest difference 0.38 px (at speed 0.75) on the pad with a
    /// resolution, 2.6 px on the ALPS pad (7 of 339 beyond).
    static let tolerance = (share: 0.9, pixels: 0.5, fraction: 0.15, length: 0.05)

    /// A pairing's largest gap between the two readers' times of one frame (libinput
    /// prints milliseconds).
    static let sameFrame = 0.0015

    struct Case {
        var name: String
        var events: String
        var description: String
        var profile: AccelerationProfile
        var speed: Double
    }

    static var cases: [Case] {
        let folder = "evemu-devices/touchpads/"
        let synaptics = (folder + "SynPS2 Synaptics TouchPad.leftmove.events", folder + "SynPS2 Synaptics TouchPad.desc")
        let alps = (folder + "AlpsPS2-ALPS-DualPoint-TouchPad.events", folder + "AlpsPS2-ALPS-DualPoint-TouchPad.desc")
        // The Synaptics finger on the description of a Synaptics pad that reports its
        // resolution (45 and 68 units a millimetre; the recorded positions lie within its
        // ranges): the deltas normalized by it.
        let resolved = (synaptics.0, folder + "SynPS2 Synaptics TouchPad.lenovo-p50.desc")
        return [
            Case(name: "adaptive/resolution", events: resolved.0, description: resolved.1, profile: .adaptive, speed: 0),
            Case(name: "adaptive/resolution-fast", events: resolved.0, description: resolved.1, profile: .adaptive, speed: 0.75),
            Case(name: "adaptive/resolution-slow", events: resolved.0, description: resolved.1, profile: .adaptive, speed: -0.5),
            Case(name: "flat/resolution", events: resolved.0, description: resolved.1, profile: .flat, speed: 0.5),
            Case(name: "adaptive/synaptics", events: synaptics.0, description: synaptics.1, profile: .adaptive, speed: 0),
            Case(name: "adaptive/alps", events: alps.0, description: alps.1, profile: .adaptive, speed: -0.4),
            Case(name: "flat/synaptics", events: synaptics.0, description: synaptics.1, profile: .flat, speed: -0.25),
        ]
    }

    static func run(_ context: CheckContext) {
        for check in cases { compare(check, context) }
    }

    /// One reader's motion: its time (seconds), accelerated deltas, and (libinput's only)
    /// unaccelerated ones.
    struct Motion {
        var time: Double
        var dx: Double
        var dy: Double
        var unacceleratedDX = 0.0
        var unacceleratedDY = 0.0
        var length: Double { (dx * dx + dy * dy).squareRoot() }
    }

    /// Pairs each of `theirs` with the one of `ours` of the same frame: the offset between
    /// the clocks is the one, among those of the first few motions, that pairs most.
    static func pairs(_ theirs: [Motion], _ ours: [Motion]) -> [(Int, Int)] {
        var best: [(Int, Int)] = []
        for i in 0..<min(6, theirs.count) {
            for j in 0..<min(6, ours.count) {
                let offset = ours[j].time - theirs[i].time
                var found: [(Int, Int)] = []
                var k = 0
                for (index, their) in theirs.enumerated() {
                    let target = their.time + offset
                    while k < ours.count, ours[k].time < target - sameFrame { k += 1 }
                    if k < ours.count, abs(ours[k].time - target) <= sameFrame {
                        found.append((index, k))
                        k += 1
                    }
                }
                if found.count > best.count { best = found }
            }
        }
        return best
    }

    static func compare(_ check: Case, _ context: CheckContext) {
        let name = "pointer/touchpad/" + check.name
        guard context.report.wants(name) else { return }
        guard
            let recording = context.loadRealRecording(
                name, folder: "\(context.devices)/real/", file: check.events, description: check.description)
        else { return }
        var configuration = HIDEventSystem.Configuration()
        configuration.touchpad = TouchpadSettings()
        configuration.pointer = try? PointerSettings(
            acceleration: PointerAcceleration(profile: check.profile, speed: check.speed), debounce: false)
        let options = ["--set-profile=\(check.profile.rawValue)", "--set-speed=\(Format.fixed(check.speed, 2))"]
        let replayed: Libinput.Replayed
        switch Libinput.replay(recording, options: options, chainConfiguration: configuration, context: context) {
        case .success(let result): replayed = result
        case .failure(let failure): return context.report.fail(name, failure.description)
        }
        let theirs = replayed.libinput.events.compactMap { event -> Motion? in
            guard let motion = event.motion, let time = event.time else { return nil }
            return Motion(
                time: time, dx: motion.dx, dy: motion.dy, unacceleratedDX: motion.unacceleratedDX,
                unacceleratedDY: motion.unacceleratedDY)
        }
        let ours = replayed.chain.compactMap { event -> Motion? in
            guard case .pointerMotion(let motion) = event.payload else { return nil }
            return Motion(time: Double(event.timestamp.nanoseconds) / 1e9, dx: motion.acceleratedDX, dy: motion.acceleratedDY)
        }
        let paired = pairs(theirs, ours)
        if let output = context.output {
            // Both readers' motions side by side (tools/kernel-stage --export DIR): every
            // libinput motion with its pair, if any.
            var table = "libinput_s\tchain_s\tunaccel_dx\tunaccel_dy\tlibinput_dx\tlibinput_dy\tchain_dx\tchain_dy\n"
            var pairOf: [Int: Int] = [:]
            for (their, our) in paired { pairOf[their] = our }
            for (index, their) in theirs.enumerated() {
                let our = pairOf[index].map { ours[$0] }
                let values = [
                    Format.fixed(their.time, 3), our.map { Format.fixed($0.time, 6) } ?? "", Format.fixed(their.unacceleratedDX, 2),
                    Format.fixed(their.unacceleratedDY, 2), Format.fixed(their.dx, 2), Format.fixed(their.dy, 2),
                    our.map { Format.fixed($0.dx, 4) } ?? "", our.map { Format.fixed($0.dy, 4) } ?? "",
                ]
                table += values.joined(separator: "\t") + "\n"
            }
            table += "# chain motions: \(ours.count)\n"
            for our in ours { table += "# \(Format.fixed(our.time, 6))\t\(Format.fixed(our.dx, 4))\t\(Format.fixed(our.dy, 4))\n" }
            let file = "\(output)/" + name.split(separator: "/").joined(separator: "-") + ".tsv"
            try? table.write(toFile: file, atomically: false, encoding: .utf8)
        }
        let setting = "\(check.profile.rawValue) \(Format.fixed(check.speed, 2))"
        guard !theirs.isEmpty, !ours.isEmpty, let info = replayed.info else {
            return context.report.fail(
                name, "\(setting): libinput gave \(theirs.count) motions, the chain \(ours.count) (\(replayed.libinput.summary))")
        }
        // The acceleration alone: libinput's own unaccelerated deltas (the pad's units,
        // both axes in the horizontal axis's) normalized as the touchpad stage normalizes
        // the pad's, at the chain's time of the same frame, through the chain's pointer
        // processor.
        var accelerated: [Motion] = []
        if let settings = configuration.pointer {
            let normalization = TouchpadInterpreter(device: info, settings: TouchpadSettings()).normalizedPerUnitX
            var processor = PointerProcessor(defaults: settings)
            let device = HIDDeviceID(rawValue: 1)
            processor.setDevice(device, settings: settings, isTouchpad: true)
            var chainTime: [Int: Double] = [:]
            for (their, our) in paired { chainTime[their] = ours[our].time }
            let offsets = paired.map { ours[$0.1].time - theirs[$0.0].time }.sorted()
            let offset = offsets.isEmpty ? 0 : offsets[offsets.count / 2]
            for (index, their) in theirs.enumerated() {
                let time = chainTime[index] ?? their.time + offset
                let motion = PointerMotionEvent(
                    dx: 0, dy: 0, unacceleratedDX: their.unacceleratedDX * normalization,
                    unacceleratedDY: their.unacceleratedDY * normalization)
                let event = HIDEvent(
                    device: device, timestamp: MonotonicInstant(nanoseconds: UInt64(max(0, time) * 1e9)), payload: .pointerMotion(motion))
                let moved = processor.moved(event, motion)
                if case .pointerMotion(let result) = moved.payload {
                    accelerated.append(Motion(time: time, dx: result.acceleratedDX, dy: result.acceleratedDY))
                }
            }
        }
        func within(_ pairs: [(Int, Int)], _ mine: [Motion]) -> (count: Int, largest: Double, first: String?) {
            var count = 0
            var largest = 0.0
            var first: String?
            for (index, our) in pairs {
                let their = theirs[index]
                let mine = mine[our]
                let error = ((their.dx - mine.dx) * (their.dx - mine.dx) + (their.dy - mine.dy) * (their.dy - mine.dy)).squareRoot()
                largest = max(largest, error)
                if error <= max(tolerance.pixels, tolerance.fraction * their.length) {
                    count += 1
                } else if first == nil {
                    first =
                        "motion \(index) (+\(Format.fixed(their.time, 3)) s): libinput \(Format.fixed(their.dx, 2))/\(Format.fixed(their.dy, 2))"
                        + " of \(Format.fixed(their.unacceleratedDX, 2))/\(Format.fixed(their.unacceleratedDY, 2)),"
                        + " the chain \(Format.fixed(mine.dx, 3))/\(Format.fixed(mine.dy, 3))"
                }
            }
            return (count, largest, first)
        }
        let endToEnd = within(paired, ours)
        let theirLength = theirs.reduce(0) { $0 + $1.length }
        let ourLength = ours.reduce(0) { $0 + $1.length }
        var measured =
            "\(setting): the chain's motion: \(endToEnd.count) of libinput's \(theirs.count) motions within tolerance (\(paired.count) paired"
            + " with the chain's \(ours.count)), largest difference \(Format.fixed(endToEnd.largest, 3)) px, path \(Format.fixed(ourLength, 1)) px"
            + " against libinput's \(Format.fixed(theirLength, 1)) px (the chain's own motion, not required: see the type's note)"
        var passed = false
        var first = endToEnd.first
        if accelerated.count == theirs.count {
            let same = within(theirs.indices.map { ($0, $0) }, accelerated)
            let acceleratedLength = accelerated.reduce(0) { $0 + $1.length }
            measured =
                "\(setting): libinput's deltas accelerated by the chain: \(same.count) of \(theirs.count) within tolerance, largest"
                + " difference \(Format.fixed(same.largest, 3)) px, path \(Format.fixed(acceleratedLength, 1)) px against libinput's"
                + " \(Format.fixed(theirLength, 1)) px; "
                + measured.dropFirst(setting.count + 2)
            passed =
                Double(same.count) / Double(theirs.count) >= tolerance.share
                && abs(acceleratedLength - theirLength) <= tolerance.length * theirLength
            first = same.first
        }
        context.report.check(name, passed, passed ? measured : measured + "; first beyond: " + (first ?? "none"))
    }
}
