import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

/// The pointer stage against libinput 1.22 on the booted kernel: the real mouse and
/// pointing-stick recordings of devices/real replayed through uinput, read by `libinput
/// debug-events --set-profile=P --set-speed=S` and by a chain whose pointer stage has the
/// same settings, motion by motion.
///
/// - `pointer/flat/…`: libinput's flat profile and the chain's are equal (to the two
///   decimals libinput prints), at several speeds, on every recording, and with udev's
///   `MOUSE_DPI` set (the flat profile does not normalize a device's resolution).
///   Played as fast as the readers keep up: the flat profile does not depend on time.
/// - `pointer/adaptive/…`: played at the recorded pace (the adaptive profile measures the
///   motion's velocity), at several speeds and with udev's `MOUSE_DPI` of a 1600-dpi
///   mouse; equal within the tolerance stated before the first run
///   (``adaptiveTolerance``). Measured on Linux 6.12: within 0.008 px, libinput's printed
///   precision.
/// - `pointer/custom`: skipped with the reason: Debian 12's libinput is 1.22, and the
///   custom profile came in 1.23 (the unit tests check it against its documentation).
enum PointerChecks {
    /// The adaptive profile's tolerance, stated before the first run: at least 90 % of the
    /// motions within 0.5 px or 15 % of libinput's delta (whichever is larger), and the
    /// path's whole length within 5 %.
    static let adaptiveTolerance = (share: 0.9, pixels: 0.5, fraction: 0.15, length: 0.05)

    static func run(_ context: CheckContext) {
        let ultrathin = ("mice/Ultrathin Touch Mouse.events", String?.none)
        let ps2 = ("mice/PS2 Generic Mouse.events", Optional("mice/PS2 Generic Mouse.desc"))
        let saitek = ("mice/Saitek Cyborg R.A.T.5 Mouse.events", Optional("mice/Saitek Cyborg R.A.T.5 Mouse.desc"))
        let trackpoint = ("trackpoints/TPPS2 IBM TrackPoint.events", Optional("trackpoints/TPPS2 IBM TrackPoint.desc"))
        for (name, recording, speed, udev) in [
            ("pointer/flat/ultrathin", ultrathin, 0.5, [String: String]()), ("pointer/flat/ps2", ps2, -0.5, [:]),
            ("pointer/flat/saitek", saitek, 1.0, [:]), ("pointer/flat/trackpoint", trackpoint, 0.5, [:]),
            ("pointer/flat/mouse-dpi", ultrathin, 0.25, ["MOUSE_DPI": "400@125"]),
        ] {
            compare(name, recording, profile: .flat, speed: speed, udev: udev, context: context)
        }
        for (name, recording, speed, udev) in [
            ("pointer/adaptive/ultrathin", ultrathin, 0.0, [String: String]()), ("pointer/adaptive/saitek", saitek, 0.5, [:]),
            // A high-resolution mouse: its deltas normalized to 1000 dpi (libinput's own
            // curve for devices under 1000 dpi is not modelled).
            ("pointer/adaptive/mouse-dpi", ultrathin, -0.3, ["MOUSE_DPI": "1600@1000"]),
        ] {
            compare(name, recording, profile: .adaptive, speed: speed, udev: udev, context: context)
        }
        debounce(context)
        if context.report.wants("pointer/custom") {
            context.report.skip(
                "pointer/custom",
                "libinput here is 1.22 (Debian 12), which has no custom profile (1.23 added it): the custom profile is checked"
                    + " against libinput's documentation by the unit tests (PointerTests)")
        }
    }

    private static func compare(
        _ name: String, _ recording: (file: String, description: String?), profile: AccelerationProfile, speed: Double,
        udev: [String: String], context: CheckContext
    ) {
        guard context.report.wants(name) else { return }
        guard
            let loaded = context.loadRealRecording(
                name, folder: "\(context.devices)/real/evemu-devices/", file: recording.file, description: recording.description)
        else { return }
        var configuration = HIDEventSystem.Configuration()
        // Only the motion is compared; replayed as fast as the readers keep up, clicks would
        // be debounced (by both) as a bouncing switch.
        configuration.pointer = try? PointerSettings(acceleration: PointerAcceleration(profile: profile, speed: speed), debounce: false)
        let options = ["--set-profile=\(profile.rawValue)", "--set-speed=\(Format.fixed(speed, 2))"]
        let replayed: Libinput.Replayed
        switch Libinput.replay(
            loaded, udev: udev, options: options, speed: profile == .flat ? .asFastAsReadersKeepUp : .recorded,
            chainConfiguration: configuration, context: context)
        {
        case .success(let result): replayed = result
        case .failure(let failure): return context.report.fail(name, failure.description)
        }
        let theirEvents = replayed.libinput.events.filter { $0.motion != nil }
        let theirs = theirEvents.compactMap { $0.motion.map { ($0.dx, $0.dy) } }
        let ourEvents = replayed.chain.compactMap { event -> (MonotonicInstant, PointerMotionEvent)? in
            if case .pointerMotion(let motion) = event.payload { return (event.timestamp, motion) }
            return nil
        }
        let ours = ourEvents.map { ($0.1.acceleratedDX, $0.1.acceleratedDY) }
        if let output = context.output {
            // Both readers' motions side by side, for a look at the differences
            // (tools/kernel-stage --export DIR).
            var table = "libinput_s\tchain_ns\traw_dx\traw_dy\tlibinput_dx\tlibinput_dy\tchain_dx\tchain_dy\n"
            for (their, our) in zip(theirEvents, ourEvents) {
                let values = [
                    their.time.map { Format.fixed($0, 6) } ?? "", String(our.0.nanoseconds), String(our.1.dx), String(our.1.dy),
                    Format.fixed(their.motion!.dx, 2), Format.fixed(their.motion!.dy, 2), Format.fixed(our.1.acceleratedDX, 4),
                    Format.fixed(our.1.acceleratedDY, 4),
                ]
                table += values.joined(separator: "\t") + "\n"
            }
            let file = "\(output)/" + name.split(separator: "/").joined(separator: "-") + ".tsv"
            try? table.write(toFile: file, atomically: false, encoding: .utf8)
        }
        let setting =
            "\(profile.rawValue) \(Format.fixed(speed, 2))" + (udev.isEmpty ? "" : " \(udev.map { "\($0.key)=\($0.value)" }.joined())")
        guard !theirs.isEmpty, theirs.count == ours.count else {
            return context.report.fail(
                name, "\(setting): libinput gave \(theirs.count) motions, the chain \(ours.count) (\(replayed.libinput.summary))")
        }
        var within = 0
        var largest = 0.0
        var first: String?
        var theirLength = 0.0
        var ourLength = 0.0
        for (index, (their, our)) in zip(theirs, ours).enumerated() {
            let error = ((their.0 - our.0) * (their.0 - our.0) + (their.1 - our.1) * (their.1 - our.1)).squareRoot()
            let size = (their.0 * their.0 + their.1 * their.1).squareRoot()
            theirLength += size
            ourLength += (our.0 * our.0 + our.1 * our.1).squareRoot()
            largest = max(largest, error)
            let allowed = profile == .flat ? 0.0051 : max(adaptiveTolerance.pixels, adaptiveTolerance.fraction * size)
            if error <= allowed {
                within += 1
            } else if first == nil {
                first =
                    "motion \(index): libinput \(Format.fixed(their.0, 2))/\(Format.fixed(their.1, 2)),"
                    + " the chain \(Format.fixed(our.0, 3))/\(Format.fixed(our.1, 3))"
            }
        }
        let share = Double(within) / Double(theirs.count)
        let lengthError = abs(ourLength - theirLength) / max(theirLength, 1e-9)
        let measured =
            "\(setting): \(within) of \(theirs.count) motions within tolerance, largest difference \(Format.fixed(largest, 3)) px,"
            + " path \(Format.fixed(ourLength, 1)) px against libinput's \(Format.fixed(theirLength, 1)) px"
        let passed =
            profile == .flat ? within == theirs.count : share >= adaptiveTolerance.share && lengthError <= adaptiveTolerance.length
        context.report.check(name, passed, passed ? measured : measured + "; first beyond: " + (first ?? "none"))
    }

    /// Button debouncing against libinput's: the Ultrathin mouse's description with
    /// clicks written to bounce (a press–release–press within 6 ms, a release–press–release
    /// after a held press, a release 10 ms after its press, then a held right button that
    /// lets go for 5 ms twice), played at their pace. The same presses and releases, in
    /// order, each within 3 ms of libinput's.
    static func debounce(_ context: CheckContext) {
        let name = "pointer/debounce"
        guard context.report.wants(name) else { return }
        let file = "\(context.devices)/real/evemu-devices/mice/Ultrathin Touch Mouse.events"
        guard let description = (try? Recording.loadAll(contentsOf: file))?.first(where: { $0.description != nil })?.description else {
            return context.report.fail(name, "\(file) describes no device")
        }
        let (left, right) = (Evdev.BTN_LEFT, Evdev.BTN_RIGHT)
        // (milliseconds, button, down)
        let clicks: [(Int64, UInt16, Bool)] = [
            (100, left, true), (103, left, false), (106, left, true), (300, left, false),
            (1100, left, true), (1200, left, false), (1203, left, true), (1206, left, false),
            (2100, left, true), (2110, left, false),
            (3100, right, true), (3200, right, false), (3205, right, true), (3400, right, false), (3405, right, true),
            (3600, right, false), (3800, right, true), (4000, right, false), (4500, left, true), (4600, left, false),
        ]
        var events: [InputEvent] = []
        for (milliseconds, code, down) in clicks {
            let seconds = milliseconds / 1000
            let microseconds = Int32((milliseconds % 1000) * 1000)
            events.append(InputEvent(seconds: seconds, microseconds: microseconds, type: Evdev.EV_KEY, code: code, value: down ? 1 : 0))
            events.append(InputEvent(seconds: seconds, microseconds: microseconds, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0))
        }
        var configuration = HIDEventSystem.Configuration()
        configuration.pointer = PointerSettings()
        let replayed: Libinput.Replayed
        switch Libinput.replay(Recording(description: description, events: events), chainConfiguration: configuration, context: context) {
        case .success(let result): replayed = result
        case .failure(let failure): return context.report.fail(name, failure.description)
        }
        var theirs: [(String, Double)] = []
        for event in replayed.libinput.events where event.type == "POINTER_BUTTON" {
            guard let press = event.press, let time = event.time else { continue }
            theirs.append(("\(Evdev.shownName(ofCode: press.code, type: Evdev.EV_KEY)) \(press.pressed ? "down" : "up")", time * 1000))
        }
        var ours: [(String, Double)] = []
        for event in replayed.chain {
            guard case .button(let button) = event.payload else { continue }
            let milliseconds = Double(event.timestamp.nanoseconds) / 1e6
            ours.append(("\(Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)) \(button.isDown ? "down" : "up")", milliseconds))
        }
        // Times from each reader's first button.
        func shown(_ list: [(String, Double)]) -> [String] {
            guard let first = list.first?.1 else { return [] }
            return list.map { "\($0.0) +\(Format.fixed($0.1 - first, 0)) ms" }
        }
        var problems: [String] = []
        if let difference = firstDifference(ours.map(\.0), theirs.map(\.0)) { problems.append("buttons \(difference)") }
        if problems.isEmpty, let theirFirst = theirs.first?.1, let ourFirst = ours.first?.1 {
            for ((label, their), (_, our)) in zip(theirs, ours) where abs((our - ourFirst) - (their - theirFirst)) > 3 {
                problems.append(
                    "\(label): libinput +\(Format.fixed(their - theirFirst, 1)) ms, the chain +\(Format.fixed(our - ourFirst, 1)) ms")
                break
            }
        }
        context.report.check(
            name, problems.isEmpty,
            (problems.isEmpty ? "" : problems.joined(separator: "; ") + "; ") + "libinput: " + shown(theirs).joined(separator: ", ")
                + (problems.isEmpty ? "" : "; the chain: " + shown(ours).joined(separator: ", ")))
    }
}
