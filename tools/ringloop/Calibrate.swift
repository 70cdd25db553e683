import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization

/// `ringloop calibrate`: four touches at announced targets → libinput's calibration matrix.
struct Calibrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fit a touchscreen's calibration matrix from touches at four targets.",
        discussion: """
            The targets are, in order, the top-left, top-right, bottom-right and
            bottom-left corners of the screen as the app sees it, inset by --margin (a
            fraction of the screen). The first touch-down of each of the first four
            touches answers them. The matrix is the least-squares fit from the device's
            normalized positions to the targets' (libinput's calibration matrix: it
            applies before the screen's rotation). Touches that are not distinct, or one
            that the other three put too far from its target (--max-residual), are
            refused, naming the touch.

            Printed: the matrix, the udev rule line (LIBINPUT_CALIBRATION_MATRIX) and the
            per-device settings entry; with --json one object
            {"matrix": [a, b, c, d, e, f], "residual_px": N}.

            Examples:
              ringloop calibrate /dev/input/event5 --screen 1080x1920@90
              ringloop calibrate --from touches.evemu --screen 800x480 --json
            """
    )

    @Argument(help: "The touchscreen's evdev node (live: touch the targets as they are announced).", completion: .file())
    var device: String?

    @Option(help: "A recording of the four touches (evemu or libinput record) instead of a live device.", completion: .file())
    var from: String?

    @Option(help: "The device description (evemu or libinput record) for a recording of events only.", completion: .file())
    var description: String?

    @Option(
        help: ArgumentHelp(
            "The screen the targets are shown on, as the app sees it: WIDTHxHEIGHT[@ROTATION].", valueName: "WxH[@rot]"))
    var screen: String

    @Option(help: "The targets' inset from the corners, a fraction of the screen (0 to 0.45).")
    var margin = 0.1

    @Option(name: .customLong("max-residual"), help: "The farthest a touch may land from its target, in pixels.")
    var maximumResidual = 15.0

    @Option(help: "Live: give up after this many seconds without four touches.")
    var timeout = 120.0

    @Flag(help: "One JSON object: {\"matrix\": [a, b, c, d, e, f], \"residual_px\": N}.")
    var json = false

    func validate() throws {
        guard (device == nil) != (from == nil) else {
            throw ValidationError("give the touchscreen's node, or a recording with --from (one of them)")
        }
        do { _ = try ScreenDescription(parsing: screen) } catch { throw ValidationError("--screen: \(error)") }
        guard margin.isFinite, margin >= 0, margin <= 0.45 else {
            throw ValidationError("--margin: \(margin) is not a fraction between 0 and 0.45 (0.1 is the default)")
        }
        guard maximumResidual.isFinite, maximumResidual > 0 else {
            throw ValidationError("--max-residual: \(maximumResidual) is not a distance above 0 pixels")
        }
        try OptionRange.duration(timeout)
    }

    func run() throws {
        try Failure.reporting("calibrate") {
            let screen: ScreenDescription
            do { screen = try ScreenDescription(parsing: self.screen) } catch { throw Failure.usage("\(error)") }
            let targets = CalibrationFit.targets(on: screen, margin: margin)
            let (touches, deviceDescription): ([(x: Double, y: Double)], InputDeviceDescription)
            if let from {
                (touches, deviceDescription) = try Self.touches(inRecording: from, description: description)
            } else {
                (touches, deviceDescription) = try liveTouches(screen: screen, targets: targets)
            }
            let fit: CalibrationFit
            do {
                fit = try CalibrationFit.fit(touches: touches, screen: screen, margin: margin, maximumResidual: maximumResidual)
            } catch {
                throw Failure.malformed("\(error)")
            }
            if json {
                let object: [String: Any] = [
                    "matrix": fit.matrix.values, "residual_px": fit.residual, "residuals_px": fit.residuals,
                    "screen": screen.sizeText, "margin": margin,
                    "targets": targets.map { ["x": $0.x, "y": $0.y] as [String: Any] },
                    "touches": touches.map { ["x": $0.x, "y": $0.y] as [String: Any] },
                ]
                writeLine(JSON(any: object).text())
                return
            }
            let matrix = fit.matrix.values.map(Self.short).joined(separator: " ")
            let name = deviceDescription.name.replacingQuotes
            for (index, target) in targets.enumerated() {
                writeLine(
                    "touch \(index + 1) (\(CalibrationFit.targetNames[index])) at (\(Format.fixed(target.x, 1)), "
                        + "\(Format.fixed(target.y, 1))) px: \(Format.fixed(fit.residuals[index], 2)) px off through the matrix")
            }
            writeLine("")
            writeLine("matrix: \(matrix)   (largest residual \(Format.fixed(fit.residual, 2)) px)")
            writeLine("")
            writeLine("udev rule (/etc/udev/rules.d/99-ringloop-calibration.rules):")
            writeLine("  ENV{LIBINPUT_CALIBRATION_MATRIX}=\"\(matrix)\"")
            writeLine(
                "  in full: ACTION==\"add|change\", KERNEL==\"event[0-9]*\", ATTRS{name}==\"\(name)\", ENV{LIBINPUT_CALIBRATION_MATRIX}=\"\(matrix)\""
            )
            writeLine("")
            writeLine("settings file entry (--device-config):")
            writeLine(
                "  [match name=\"\(name)\" vendor=0x\(Format.hex(deviceDescription.vendor, digits: 4)) "
                    + "product=0x\(Format.hex(deviceDescription.product, digits: 4))]")
            writeLine("  calibration = \(matrix)")
        }
    }

    /// A matrix value with at most six decimals, trailing zeros dropped (`1.02`, `-0.015`).
    static func short(_ value: Double) -> String {
        var text = Format.fixed(value, 6)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }

    /// The device-normalized positions of the first touch-down of each of the first four
    /// touches in a recording, and the device's description. Of a recording of several
    /// devices, the first that maps to a screen (a touchscreen, a tablet) is used.
    static func touches(
        inRecording path: String, description: String?
    ) throws(Failure) -> (
        [(x: Double, y: Double)], InputDeviceDescription
    ) {
        let file = try RecordingInput.load(path, description: description, command: "calibrate")
        guard
            let recording = file.recordings.first(where: {
                $0.description.map { ScreenMapper.mapsToScreen(HIDDeviceInfo(description: $0)) } ?? false
            }),
            let deviceDescription = recording.description
        else {
            throw Failure.wrongKind(path: path, found: "has no touchscreen or tablet", expected: "a recording of a touchscreen")
        }
        var collector = TouchDownCollector()
        var decoder = FrameDecoder(info: HIDDeviceInfo(description: deviceDescription))
        var events: [HIDEvent] = []
        for event in recording.events where collector.touches.count < 4 {
            decoder.feed(event, into: &events)
            for decoded in events { collector.take(decoded) }
            events.removeAll(keepingCapacity: true)
        }
        guard collector.touches.count == 4 else {
            throw Failure.malformed(
                "\(path) has \(collector.touches.count) touches; a calibration takes 4 (top-left, top-right, bottom-right, bottom-left)")
        }
        return (collector.touches, deviceDescription)
    }

    /// Reads the live device, announcing each target on its own line, until four touches.
    func liveTouches(
        screen: ScreenDescription, targets: [ScreenPoint]
    ) throws(Failure) -> (
        [(x: Double, y: Double)], InputDeviceDescription
    ) {
        guard let device else { throw .usage("no device") }
        _ = try InputPath.require(device, [.node], expected: "an evdev device node")
        let loop = RingRunLoop.main
        let ended = LoopEnding(loop: loop)
        let end: @Sendable () -> Void = { ended.end() }
        let signals = try LoopSignalSource.ending(on: loop) { _ in end() }
        defer { signals.invalidate() }
        let system = HIDEventSystem(
            configuration: .init(
                deviceDirectory: Monitor.folder(of: device), shape: .clientLoop, grabDevices: false,
                nodeNames: [Monitor.name(of: device)]),
            loop: loop)
        let state = LiveCalibration()
        let json = self.json
        func announce(_ index: Int) {
            // With --json, standard output holds the one object; the targets go to standard error.
            (json ? printError : writeLine)(
                "touch target \(index + 1) of 4 (\(CalibrationFit.targetNames[index])) at (\(Format.fixed(targets[index].x, 0)), "
                    + "\(Format.fixed(targets[index].y, 0))) px of \(screen.sizeText)")
        }
        system.addHandler { event in
            if state.info == nil, event.kind == .deviceAdded { state.info = system.device(event.device) }
            let before = state.collector.touches.count
            state.collector.take(event)
            let after = state.collector.touches.count
            if after > before {
                if after == 4 { end() } else { announce(after) }
            }
            return .pass
        }
        do { try system.start() } catch { throw .unavailable("\(error)") }
        defer { system.stop() }
        announce(0)
        loop.add(LoopTimer(after: .milliseconds(Int(timeout * 1000))) { _ in end() }, to: .common)
        while !ended.hasEnded {
            if loop.run(mode: .default, until: .distantFuture) == .finished { break }
        }
        guard state.collector.touches.count == 4, let info = state.info else {
            throw .timedOut("\(state.collector.touches.count) of 4 targets touched in \(timeout) s")
        }
        return (state.collector.touches, info.description)
    }
}

/// What the live calibration's handler collects (the main loop's thread only).
private final class LiveCalibration: @unchecked Sendable {
    var collector = TouchDownCollector()
    var info: HIDDeviceInfo?
}

/// The first touch-down of each touch, in order: a contact that began (a new tracking
/// id), or a pen's tip coming down.
struct TouchDownCollector {
    private(set) var touches: [(x: Double, y: Double)] = []
    private var penDown = false

    mutating func take(_ event: HIDEvent) {
        guard touches.count < 4 else { return }
        switch event.payload {
        case .digitizer(let frame):
            for index in 0..<frame.count where frame[index].phase == .began && touches.count < 4 {
                touches.append((frame[index].normalizedX, frame[index].normalizedY))
            }
        case .pen(let pen):
            if pen.touching && !penDown { touches.append((pen.normalizedX, pen.normalizedY)) }
            penDown = pen.touching
        default:
            break
        }
    }
}

extension String {
    /// The text with double quotes and backslashes escaped, for a udev rule or a settings
    /// header's quoted value.
    fileprivate var replacingQuotes: String {
        var out = ""
        for character in self {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out
    }
}
