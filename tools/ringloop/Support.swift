import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The signals that end a command cleanly (through a ``LoopSignalSource`` on its loop:
/// virtual devices removed, folders unmounted) instead of killing it mid-way. Until a
/// command creates its source — while it opens and reads its inputs, which a FIFO with
/// no writer can make wait for ever — they keep their default actions, so Ctrl-C ends it.
let endingSignals: Set<Int32> = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

extension LoopSignalSource {
    /// A source of ``endingSignals`` on `loop`, or the failure that says why not.
    static func ending(on loop: RingRunLoop, _ handler: @escaping @Sendable (Int32) -> Void) throws(Failure) -> LoopSignalSource {
        do { return try LoopSignalSource(endingSignals, on: loop, handler: handler) } catch {
            throw .failed("cannot watch signals: \(String(cString: strerror(error.rawValue)))")
        }
    }
}

/// How a command's run on its loop ends: a signal, a closed standard output, a timer or
/// the end of a replay calls ``end()``, which stops the loop; the run's own `while` asks
/// ``hasEnded`` (a stop ends only the innermost run). Any thread.
final class LoopEnding: Sendable {
    private let loop: RingRunLoop
    private let ended = Atomic<Bool>(false)

    init(loop: RingRunLoop) { self.loop = loop }

    /// Whether ``end()`` was called.
    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// Ends the run: marks it ended and stops the loop.
    func end() {
        ended.store(true, ordering: .releasing)
        loop.stop()
    }
}

/// Readable lines and JSON objects for HID events.
enum EventFormat {
    static func text(_ event: HIDEvent, device: String) -> String { "\(device): \(event.payload)" }

    /// One JSON object with the fixed names docs/COMMANDS.md documents.
    static func json(_ event: HIDEvent, device: String, latencyMicroseconds: Double) -> [String: Any] {
        var object: [String: Any] = [
            "kind": event.kind.rawValue, "device": device,
            "time": Double(event.timestamp.nanoseconds) / 1e9, "latency_us": latencyMicroseconds,
        ]
        switch event.payload {
        case .key(let key):
            object["code"] = Evdev.shownName(ofCode: key.code, type: Evdev.EV_KEY)
            object["usagePage"] = key.usage.map { Int($0.page) as Any } ?? JSON.null
            object["usage"] = key.usage.map { Int($0.usage) as Any } ?? JSON.null
            object["state"] = key.state.rawValue
            object["modifiers"] = Int(key.modifiers.rawValue)
            if key.keysym != 0 {
                object["keysym"] = Keymap.keysymName(key.keysym)
                object["text"] = key.text.string
            }
        case .button(let button):
            object["code"] = Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)
            object["button"] = button.number
            object["state"] = button.isDown ? "down" : "up"
        case .pointerMotion(let motion):
            object["dx"] = Int(motion.dx)
            object["dy"] = Int(motion.dy)
            object["acceleratedDX"] = motion.acceleratedDX
            object["acceleratedDY"] = motion.acceleratedDY
            object["unacceleratedDX"] = motion.unacceleratedDX
            object["unacceleratedDY"] = motion.unacceleratedDY
            if let cursor = motion.cursor {
                object["cursor"] = ["x": cursor.location.x, "y": cursor.location.y, "screen": cursor.screen] as [String: Any]
            }
        case .scroll(let scroll):
            object["vertical"] = scroll.vertical
            object["horizontal"] = scroll.horizontal
            object["unscaledVertical"] = scroll.unscaledVertical
            object["unscaledHorizontal"] = scroll.unscaledHorizontal
            object["source"] = scroll.source.rawValue
            if scroll.phase != .none { object["phase"] = scroll.phase.rawValue }
        case .absolutePointer(let pointer):
            object["x"] = Int(pointer.x)
            object["y"] = Int(pointer.y)
            if let location = pointer.screenLocation { object["screen"] = screen(location) }
        case .digitizer(let frame):
            object["fingers"] = frame.fingerCount
            object["contacts"] = frame.contacts.map { contact -> [String: Any] in
                var shown: [String: Any] = [
                    "id": Int(contact.trackingID), "slot": Int(contact.slot), "phase": contact.phase.rawValue,
                    "x": Int(contact.x), "y": Int(contact.y),
                ]
                if let location = contact.screenLocation { shown["screen"] = screen(location) }
                return shown
            }
        case .pen(let pen):
            object["tool"] = pen.tool.rawValue
            object["proximity"] = pen.inProximity
            object["touching"] = pen.touching
            object["x"] = Int(pen.x)
            object["y"] = Int(pen.y)
            object["pressure"] = pen.pressure
            if let location = pen.screenLocation { object["screen"] = screen(location) }
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
            object["sensorTime"] = motion.sensorTime.map { Int($0) as Any } ?? JSON.null
            object["sampleRate"] = motion.sampleRate
            object["calibrated"] = motion.isCalibrated
            if motion.sampleCount > 1 { object["samples"] = Int(motion.sampleCount) }
        case .axis(let axis):
            object["source"] = axis.source.rawValue
            object["code"] = Evdev.shownName(ofCode: axis.code, type: axis.source == .absolute ? Evdev.EV_ABS : Evdev.EV_REL)
            object["value"] = Int(axis.value)
            object["normalized"] = axis.normalized.map { $0 as Any } ?? JSON.null
        case .eventsDropped(let count): object["count"] = count
        case .focusChanged(let isFocused): object["focused"] = isFocused
        case .gamepad(let gamepad):
            object["control"] = gamepad.control.name
            object["value"] = gamepad.value
            object["raw"] = Int(gamepad.raw)
        case .deviceAdded, .deviceRemoved: break
        }
        return object
    }

    /// A location on the screen, `{"x": …, "y": …}` in pixels.
    static func screen(_ location: ScreenPoint) -> [String: Any] { ["x": location.x, "y": location.y] }

    /// A gesture's state change, with the names docs/COMMANDS.md documents.
    static func json(_ event: GestureEvent, device: String) -> [String: Any] {
        func point(_ point: GesturePoint) -> [String: Any] { ["x": point.x, "y": point.y] }
        let values = event.values
        var object: [String: Any] = [
            "kind": "gesture", "device": device, "time": Double(event.timestamp.nanoseconds) / 1e9,
            "gesture": event.gesture.rawValue, "state": event.state.rawValue, "fingers": values.fingers,
            "location": point(values.location), "translation": point(values.translation),
            "velocity": point(values.velocity), "scale": values.scale, "rotation": values.rotation,
            "unit": values.unit == .millimetres ? "mm" : values.unit == .screenPoints ? "pt" : "units",
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
            + "\(Format.fixed(Double(event.peak), 2)) g"
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
    static func text(_ event: GestureEvent, device: String) -> String { "\(device): \(event.summary)" }

    static func jsonLine(_ object: [String: Any]) -> String { JSON(any: object).text() }
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

    /// Reads `path` (a recording file or a FIFO), or says why it cannot be replayed.
    /// Called before the command blocks its signals: a FIFO with no writer waits in
    /// `open`, and Ctrl-C must still end it there.
    static func load(_ path: String, description: String?, command: String) throws(Failure) -> File {
        _ = try InputPath.require(path, [.recording], expected: "a recording (evemu, or libinput record YAML)")
        var recordings: [Recording]
        do {
            recordings = try Recording.loadAll(contentsOf: path)
            if recordings.count == 1, recordings[0].description == nil {
                guard let description else {
                    var message =
                        "\(path) has events only; give the device's description with --description FILE"
                        + " (evemu-play takes an events file the same way)"
                    if let sibling = siblingDescription(of: path) { message += "; beside it: --description '\(sibling)'" }
                    throw Failure.usage(message)
                }
                _ = try InputPath.require(description, [.recording], expected: "a device description (evemu or libinput record)")
                recordings = [try Recording.load(description: description, events: path)]
            }
        } catch {
            throw Failure(error)
        }
        for recording in recordings {
            for warning in recording.warnings { printError("ringloop \(command): \(warning)") }
        }
        return File(path: path, recordings: recordings)
    }

    /// The description an events file of the evemu-devices collection pairs with by its
    /// naming convention (`NAME.DESC.events` → `NAME.desc`), if one is beside it, written
    /// the way `path` was (relative or absolute).
    static func siblingDescription(of path: String) -> String? {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let candidates = folderEntries(folder.isEmpty ? "." : folder).filter { entry in
            guard let dot = entry.lastIndex(of: ".") else { return false }
            let stem = entry[..<dot]
            let suffix = entry[entry.index(after: dot)...]
            return ["desc", "prop", "device"].contains(suffix) && name.hasPrefix(stem) && entry != name
        }
        return candidates.max(by: { $0.count < $1.count }).map { folder + $0 }
    }
}

/// The names in `folder` (not `.` and `..`), or none if it cannot be read.
func folderEntries(_ folder: String) -> [String] {
    (directoryEntries(folder) ?? []).map(\.name)
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

/// Why opening a device failed, with what would fix a permission error.
func openFailure(_ error: Int32) -> String {
    let fix = error == EACCES || error == EPERM ? " (add the user to group 'input', or run as root)" : ""
    return String(cString: strerror(error)) + fix
}
