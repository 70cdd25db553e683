import ArgumentParser
import CLibURing  // signalfd (its header comes with the ring shim)
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import SystemPackage

/// Ctrl-C, SIGTERM, SIGHUP and SIGQUIT through the ring: the signals are blocked in every
/// thread and read from a signalfd by a port source on the main loop, so the command ends
/// cleanly (virtual devices unmounted) instead of dying mid-way. No thread of a command
/// sleeps outside a loop for longer than a slice (replays check for a stop between
/// slices), so a signal ends the command at any moment.
final class SignalWatcher {
    /// The signals that end a command cleanly.
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    private let fd: Int32
    private var source: LoopPortSource?

    /// Call before starting any thread, so every thread inherits the blocked mask.
    init() {
        // A closed pipe on standard output (`ringloop monitor | head`) must end the
        // command through its normal path, which unmounts its virtual devices; a
        // process killed by SIGPIPE with files open on its own FUSE folder can hang in
        // the kernel on the way out.
        signal(SIGPIPE, SIG_IGN)
        var mask = sigset_t()
        sigemptyset(&mask)
        for signal in Self.signals { sigaddset(&mask, signal) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        fd = signalfd(-1, &mask, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Calls `onSignal` on `loop` when one of ``signals`` arrives.
    func watch(on loop: RingRunLoop, _ onSignal: @escaping @Sendable (Int32) -> Void) {
        guard fd >= 0 else { return }
        let fd = fd
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { _ in
            var info = signalfd_siginfo()
            while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) > 0 { onSignal(Int32(info.ssi_signo)) }
        }
        self.source = source
        loop.add(source, to: .common)
    }
}

/// Readable lines and JSON objects for HID events.
enum EventFormat {
    static func text(_ event: HIDEvent, device: String) -> String {
        let body: String
        switch event.payload {
        case .key(let key):
            let usage = key.usage.map { " usage \($0)" } ?? ""
            let modifiers = key.modifiers.isEmpty ? "" : " modifiers 0x" + String(key.modifiers.rawValue, radix: 16)
            body = "key \(Evdev.shownName(ofCode: key.code, type: Evdev.EV_KEY)) \(key.state)\(usage)\(modifiers)"
        case .button(let button):
            body = "button \(button.number) (\(Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY))) \(button.isDown ? "down" : "up")"
        case .pointerMotion(let dx, let dy): body = "motion \(dx) \(dy)"
        case .scroll(let scroll):
            body = "scroll vertical \(scroll.vertical) horizontal \(scroll.horizontal)\(scroll.isHighResolution ? " (hi-res)" : "")"
        case .absolutePointer(let pointer): body = "absolute \(pointer.x) \(pointer.y)"
        case .digitizer(let frame):
            let contacts = frame.contacts.map { "#\($0.trackingID)@\($0.slot) \($0.phase) \($0.x),\($0.y)" }.joined(separator: ", ")
            body = "touch \(frame.fingerCount) finger(s)\(frame.isBoundingBox ? " (bounding box)" : ""): \(contacts)"
        case .pen(let pen):
            body =
                "pen \(pen.tool) \(pen.inProximity ? (pen.touching ? "touching" : "hovering") : "out") \(pen.x),\(pen.y) pressure \(String(format: "%.2f", pen.pressure)) tilt \(String(format: "%.0f", pen.tiltX))°,\(String(format: "%.0f", pen.tiltY))° buttons \(pen.barrelButtons)"
        case .gamepadButton(let button):
            body = "gamepad \(Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)) \(button.isDown ? "down" : "up")"
        case .gamepadAxis(let axis):
            body =
                "axis \(Evdev.shownName(ofCode: axis.code, type: Evdev.EV_ABS)) \(axis.value) (\(String(format: "%.2f", axis.normalized)))"
        case .switchChanged(let change):
            body = "switch \(Evdev.shownName(ofCode: change.code, type: Evdev.EV_SW)) \(change.isOn ? "on" : "off")"
        case .dial(let steps): body = "dial \(steps)"
        case .motion(let motion):
            let unit = motion.isCalibrated ? ("g", "°/s") : ("units", "units")
            let clock = motion.sensorTime.map { ", sensor time \($0) µs" } ?? ""
            body =
                "motion acceleration \(motion.acceleration) \(unit.0), rotation rate \(motion.rotationRate) \(unit.1)\(clock)"
                + String(format: ", %.0f Hz", motion.sampleRate)
        case .axis(let axis):
            let name = Evdev.shownName(ofCode: axis.code, type: axis.source == .absolute ? Evdev.EV_ABS : Evdev.EV_REL)
            body = "axis \(name) \(axis.value)" + (axis.normalized.map { " (\(String(format: "%.2f", $0)))" } ?? "")
        case .deviceAdded: body = "added"
        case .deviceRemoved: body = "removed"
        case .eventsDropped(let count): body = "EVENTS DROPPED (\(count))"
        }
        return "\(device): \(body)"
    }

    /// One JSON object with the fixed names README documents.
    static func json(_ event: HIDEvent, device: String, latencyMicroseconds: Double) -> [String: Any] {
        var object: [String: Any] = [
            "kind": event.kind.rawValue, "device": device,
            "time": Double(event.timestamp.nanoseconds) / 1e9, "latency_us": latencyMicroseconds,
        ]
        switch event.payload {
        case .key(let key):
            object["code"] = Evdev.shownName(ofCode: key.code, type: Evdev.EV_KEY)
            object["usagePage"] = key.usage.map { Int($0.page) } ?? NSNull()
            object["usage"] = key.usage.map { Int($0.usage) } ?? NSNull()
            object["state"] = key.state.rawValue
            object["modifiers"] = Int(key.modifiers.rawValue)
        case .button(let button):
            object["code"] = Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)
            object["button"] = button.number
            object["state"] = button.isDown ? "down" : "up"
        case .pointerMotion(let dx, let dy):
            object["dx"] = Int(dx)
            object["dy"] = Int(dy)
        case .scroll(let scroll):
            object["vertical"] = scroll.vertical
            object["horizontal"] = scroll.horizontal
        case .absolutePointer(let pointer):
            object["x"] = Int(pointer.x)
            object["y"] = Int(pointer.y)
        case .digitizer(let frame):
            object["fingers"] = frame.fingerCount
            object["contacts"] = frame.contacts.map { contact -> [String: Any] in
                [
                    "id": Int(contact.trackingID), "slot": Int(contact.slot), "phase": contact.phase.rawValue,
                    "x": Int(contact.x), "y": Int(contact.y),
                ]
            }
        case .pen(let pen):
            object["tool"] = pen.tool.rawValue
            object["proximity"] = pen.inProximity
            object["touching"] = pen.touching
            object["x"] = Int(pen.x)
            object["y"] = Int(pen.y)
            object["pressure"] = pen.pressure
        case .gamepadButton(let button):
            object["code"] = Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)
            object["state"] = button.isDown ? "down" : "up"
        case .gamepadAxis(let axis):
            object["code"] = Evdev.shownName(ofCode: axis.code, type: Evdev.EV_ABS)
            object["value"] = Int(axis.value)
            object["normalized"] = axis.normalized
        case .switchChanged(let change):
            object["code"] = Evdev.shownName(ofCode: change.code, type: Evdev.EV_SW)
            object["state"] = change.isOn ? "on" : "off"
        case .dial(let steps): object["steps"] = Int(steps)
        case .motion(let motion):
            func vector(_ vector: MotionVector) -> [String: Any] { ["x": vector.x, "y": vector.y, "z": vector.z] }
            object["acceleration"] = vector(motion.acceleration)
            object["rotationRate"] = vector(motion.rotationRate)
            object["sensorTime"] = motion.sensorTime.map { Int($0) } ?? NSNull()
            object["sampleRate"] = motion.sampleRate
            object["calibrated"] = motion.isCalibrated
            if motion.sampleCount > 1 { object["samples"] = Int(motion.sampleCount) }
        case .axis(let axis):
            object["source"] = axis.source.rawValue
            object["code"] = Evdev.shownName(ofCode: axis.code, type: axis.source == .absolute ? Evdev.EV_ABS : Evdev.EV_REL)
            object["value"] = Int(axis.value)
            object["normalized"] = axis.normalized ?? NSNull()
        case .eventsDropped(let count): object["count"] = count
        case .deviceAdded, .deviceRemoved: break
        }
        return object
    }

    /// A gesture's state change, with the names README documents.
    static func json(_ event: GestureEvent, device: String) -> [String: Any] {
        func point(_ point: GesturePoint) -> [String: Any] { ["x": point.x, "y": point.y] }
        let values = event.values
        var object: [String: Any] = [
            "kind": "gesture", "device": device, "time": Double(event.timestamp.nanoseconds) / 1e9,
            "gesture": event.gesture, "state": event.state.rawValue, "fingers": values.fingers,
            "location": point(values.location), "translation": point(values.translation),
            "velocity": point(values.velocity), "scale": values.scale, "rotation": values.rotation,
            "unit": values.unit == .millimetres ? "mm" : "units",
        ]
        if let direction = event.direction { object["direction"] = direction.description }
        if values.taps > 0 { object["taps"] = values.taps }
        return object
    }

    /// A shake's phase, as a gesture named `shake` with UIKit's phases as states.
    static func json(_ event: ShakeRecognizer.Event, device: String) -> [String: Any] {
        [
            "kind": "gesture", "device": device, "time": Double(event.timestamp.nanoseconds) / 1e9, "gesture": "shake",
            "state": event.phase.rawValue, "strokes": event.strokes, "peak": event.peak,
            "duration": Double(event.duration.components.seconds) + Double(event.duration.components.attoseconds) / 1e18,
        ]
    }

    static func text(_ event: ShakeRecognizer.Event, device: String) -> String {
        "\(device): gesture shake \(event.phase.rawValue), \(event.strokes) strokes, peak "
            + String(format: "%.2f g", event.peak)
    }

    /// An orientation change (`UIDevice.orientation`'s names).
    static func json(_ event: OrientationRecognizer.Event, device: String) -> [String: Any] {
        [
            "kind": "orientation", "device": device, "time": Double(event.timestamp.nanoseconds) / 1e9,
            "orientation": event.orientation.rawValue, "previous": event.previous.rawValue,
            "gravity": ["x": event.gravity.x, "y": event.gravity.y, "z": event.gravity.z],
        ]
    }

    static func text(_ event: OrientationRecognizer.Event, device: String) -> String {
        "\(device): orientation \(event.orientation.rawValue) (was \(event.previous.rawValue)), gravity \(event.gravity) g"
    }

    /// A gesture's state change as one line of text.
    static func text(_ event: GestureEvent, device: String) -> String {
        let values = event.values
        let unit = values.unit == .millimetres ? "mm" : "units"
        var text = "\(device): gesture \(event.gesture)"
        if let direction = event.direction { text += " \(direction)" }
        text += " \(event.state.rawValue), \(values.fingers) finger(s) at \(values.location) \(unit)"
        switch event.gesture {
        case "pinch", "touchpadPinch":
            text += String(format: ", scale %.2f", values.scale)
            if event.gesture == "touchpadPinch" { text += String(format: ", rotation %.1f°", values.rotation * 180 / .pi) }
        case "rotation": text += String(format: ", rotation %.1f°", values.rotation * 180 / .pi)
        case "tap", "doubleTap", "tripleTap", "longPress", "hold": break
        default: text += ", translation \(values.translation), velocity \(values.velocity) \(unit)/s"
        }
        return text
    }

    static func jsonLine(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Loads the recordings a command was given: every device of each file (several devices
/// of one file share a clock), an events-only file onto `--description`'s device. Prints
/// the reader's warnings on standard error. Errors say what would fix them.
enum RecordingInput {
    /// The devices of one file, replayed together on the file's clock.
    struct File {
        var path: String
        var recordings: [Recording]
    }

    static func load(_ path: String, description: String?, command: String) throws -> File {
        var recordings: [Recording]
        do {
            recordings = try Recording.loadAll(contentsOf: path)
            if recordings.count == 1, recordings[0].description == nil {
                guard let description else {
                    var message =
                        "\(path) has events only; give the device's description with --description FILE"
                        + " (evemu-play takes an events file the same way)"
                    if let sibling = siblingDescription(of: path) { message += "; beside it: --description '\(sibling)'" }
                    printError("ringloop \(command): \(message)")
                    throw ExitCode(1)
                }
                recordings = [try Recording.load(description: description, events: path)]
            }
        } catch let error as RecordingError {
            printError("ringloop \(command): \(error)")
            throw ExitCode(1)
        }
        for recording in recordings {
            for warning in recording.warnings { printError("ringloop \(command): \(warning)") }
        }
        return File(path: path, recordings: recordings)
    }

    /// The description an events file of the evemu-devices collection pairs with by its
    /// naming convention (`NAME.DESC.events` → `NAME.desc`), if one is beside it.
    static func siblingDescription(of path: String) -> String? {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent()
        let name = url.lastPathComponent
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return nil }
        let candidates = entries.filter { entry in
            let stem = (entry as NSString).deletingPathExtension
            return ["desc", "prop", "device"].contains((entry as NSString).pathExtension) && name.hasPrefix(stem)
                && entry != name
        }
        guard let best = candidates.max(by: { $0.count < $1.count }) else { return nil }
        return path.contains("/") ? folder.appendingPathComponent(best).relativePath(from: path) : best
    }
}

extension URL {
    /// This file's path written the way `reference` was (relative or absolute).
    fileprivate func relativePath(from reference: String) -> String {
        reference.hasPrefix("/")
            ? path : String(reference[..<(reference.lastIndex(of: "/") ?? reference.startIndex)]) + "/" + lastPathComponent
    }
}

/// Hands a value that is not `Sendable` to one other thread, which alone uses it after.
final class UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The ranges numeric options accept, checked in `validate()` so no number from the
/// command line can overflow a conversion later (NaN and infinities are refused too).
enum OptionRange {
    /// Durations: up to a year.
    static let longestDuration = 365.0 * 24 * 3600
    /// Replay speed factors.
    static let speeds = 0.001...1000.0
    /// Seconds to wait for readers before a replay.
    static let longestWait = 3600.0

    static func duration(_ value: Double?, option: String = "--duration") throws {
        guard let value else { return }
        guard value.isFinite, value > 0, value <= longestDuration else {
            throw ValidationError("\(option) must be more than 0 and at most \(Int(longestDuration)) seconds (a year), got \(value)")
        }
    }

    static func speed(_ value: Double?, option: String = "--speed") throws {
        guard let value else { return }
        guard value.isFinite, speeds.contains(value) else {
            throw ValidationError(
                "\(option) must be between \(speeds.lowerBound) and \(Int(speeds.upperBound)) (1 = recorded pace), got \(value)")
        }
    }

    static func wait(_ value: Double, option: String = "--wait") throws {
        guard value.isFinite, value >= 0, value <= longestWait else {
            throw ValidationError("\(option) must be between 0 and \(Int(longestWait)) seconds, got \(value)")
        }
    }
}

/// Writes a line to standard output at once (a `print` into a pipe waits for 4 KiB): one
/// event per line as it happens, for `monitor --json | jq` and for programs that wait
/// for a line. A closed pipe ends the command through SIGPIPE being ignored and the
/// write failing, which is not an error here.
func writeLine(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(UInt8(ascii: "\n"))
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = write(1, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}

/// Why opening a device failed, with what would fix a permission error.
func openFailure(_ error: Int32) -> String {
    let fix = error == EACCES || error == EPERM ? " (add the user to group 'input', or run as root)" : ""
    return String(cString: strerror(error)) + fix
}
