import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// The checks `tools/kernel-stage` runs in a booted kernel (QEMU, Debian's own kernels):
/// every recording replayed through uinput and read back from the kernel's evdev node by
/// the chain and as `record` reads it, kernel HID drivers fed through uhid, and the
/// kernel behaviours the FUSE nodes only model (repeat, `SYN_DROPPED`, grab, clocks,
/// LEDs, hotplug, state at attach). One line per check (`PASS name: …` or `FAIL name:
/// …`), then `kernel-check: N passed, M failed`; the exit status is 1 when any failed.
struct KernelCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kernel-check",
        abstract: "Check the input chain against the running kernel's evdev, uinput and uhid (for tools/kernel-stage).",
        shouldDisplay: false)

    @Option(help: "The recordings' folder (devices/).")
    var devices: String

    @Option(help: "Where to write what the checks record (the uhid devices' evemu files).")
    var output: String?

    @Option(help: "Run only the checks whose name starts with this.")
    var only: String?

    func run() throws {
        guard case .success = VirtualDeviceBackend.availability(.uinput) else {
            printError("ringloop kernel-check: /dev/uinput is not usable here; this command is for a booted test kernel")
            throw ExitCode(1)
        }
        let report = CheckReport(only: only)
        let chain = try ChainWatch()
        defer { chain.stop() }
        let started = MonotonicInstant.now
        let context = CheckContext(devices: devices, output: output, chain: chain, report: report)
        let phases: [(String, (CheckContext) -> Void)] = [
            ("read path", KernelChecks.readPath), ("hotplug", KernelChecks.hotplug), ("key repeat", KernelChecks.keyRepeat),
            ("state at attach", KernelChecks.stateAtAttach), ("SYN_DROPPED", KernelChecks.droppedAndResynced),
            ("grab and clock", KernelChecks.grabAndClock), ("LED output", KernelChecks.ledOutput), ("keymap", KernelChecks.keymap),
            ("uhid", UHIDChecks.run), ("rumble", UHIDChecks.rumble),
            ("pointer", PointerChecks.run), ("touchpad pointer", TouchpadMotionChecks.run),
            ("udev wait", UdevWaitChecks.run), ("libinput", LibinputChecks.run), ("libinput touchpad", TouchpadChecks.run),
            ("recordings", CorpusReplay.run),
            ("demo", KernelChecks.demo),
        ]
        for (phase, run) in phases {
            let phaseStarted = MonotonicInstant.now
            run(context)
            let seconds = milliseconds(MonotonicInstant.now - phaseStarted) / 1000
            if seconds >= 1 { say("kernel-check: \(phase) took \(Format.fixed(seconds, 1)) s") }
        }
        say("kernel-check: checks took \(Format.fixed(milliseconds(MonotonicInstant.now - started) / 1000, 1)) s")
        say("kernel-check: \(report.passed) passed, \(report.failed) failed, \(report.skipped) skipped")
        if report.failed > 0 { throw ExitCode(1) }
    }
}

/// What every check gets.
struct CheckContext {
    var devices: String
    var output: String?
    var chain: ChainWatch
    var report: CheckReport
}

extension CheckContext {
    /// The real recording `file` (a path under `folder`, which ends in `/`) for the check
    /// `name`: with `description` (a path under `folder` too), that description's device
    /// playing `file`'s events; without, the first recording in `file` that describes its
    /// device. `nil` after failing `name` when it cannot be loaded.
    func loadRealRecording(_ name: String, folder: String, file: String, description: String?) -> Recording? {
        do {
            if let description {
                return try Recording.load(description: folder + description, events: folder + file)
            }
            guard let found = try Recording.loadAll(contentsOf: folder + file).first(where: { $0.description != nil }) else {
                report.fail(name, "\(file) describes no device")
                return nil
            }
            return found
        } catch {
            report.fail(name, "\(error)")
            return nil
        }
    }
}

/// Counts and prints the checks' results, one line each.
final class CheckReport: @unchecked Sendable {
    // Used from the command's thread only.
    let only: String?
    private(set) var passed = 0
    private(set) var failed = 0
    private(set) var skipped = 0

    init(only: String?) { self.only = only }

    /// Whether the check named `name` is to run.
    func wants(_ name: String) -> Bool { only.map { name.hasPrefix($0) } ?? true }

    func pass(_ name: String, _ detail: String) {
        passed += 1
        say("PASS \(name): \(detail)")
    }

    func fail(_ name: String, _ detail: String) {
        failed += 1
        say("FAIL \(name): \(detail)")
    }

    /// A check that cannot run here, with the reason (a limit of the kernel, not a
    /// difference).
    func skip(_ name: String, _ reason: String) {
        skipped += 1
        say("SKIP \(name): \(reason)")
    }

    func check(_ name: String, _ ok: Bool, _ detail: String) {
        if ok { pass(name, detail) } else { fail(name, detail) }
    }
}

/// A payload compared field by field (timestamps aside), printed only when two streams
/// differ: formatting every event through reflection costs more than the replay itself
/// under emulation.
enum PayloadKey: Equatable, CustomStringConvertible {
    case key(KeyEvent), button(ButtonEvent), motion(Int32, Int32), scroll(ScrollEvent)
    case absolutePointer(AbsolutePointerEvent), pen(PenEvent), gamepadButton(GamepadButtonEvent)
    case gamepadAxis(GamepadAxisEvent), switchChanged(SwitchEvent), dial(Int32), axis(AxisEvent)
    case motionSample(MotionEvent), gamepad(GamepadEvent)
    case digitizer(contacts: [Contact], fingers: Int, boundingBox: Bool, button: Bool)
    case added, removed, dropped(Int), focus(Bool)

    init(_ payload: HIDEvent.Payload) {
        switch payload {
        case .key(let event): self = .key(event)
        case .button(let event): self = .button(event)
        case .pointerMotion(let motion): self = .motion(motion.dx, motion.dy)
        case .scroll(let event): self = .scroll(event)
        case .absolutePointer(let event): self = .absolutePointer(event)
        case .digitizer(let frame):
            self = .digitizer(
                contacts: frame.contacts, fingers: frame.fingerCount, boundingBox: frame.isBoundingBox, button: frame.buttonDown)
        case .pen(let event): self = .pen(event)
        case .gamepadButton(let event): self = .gamepadButton(event)
        case .gamepadAxis(let event): self = .gamepadAxis(event)
        case .switchChanged(let event): self = .switchChanged(event)
        case .dial(let steps): self = .dial(steps)
        case .axis(let event): self = .axis(event)
        case .motion(let event): self = .motionSample(event)
        case .deviceAdded: self = .added
        case .deviceRemoved: self = .removed
        case .eventsDropped(let count): self = .dropped(count)
        case .focusChanged(let isFocused): self = .focus(isFocused)
        case .gamepad(let event): self = .gamepad(event)
        }
    }

    var description: String {
        switch self {
        case .digitizer(let contacts, let fingers, let boundingBox, let button):
            let list = contacts.map { "#\($0.trackingID)@\($0.slot) \($0.phase) \($0.x),\($0.y) p\($0.pressure) s\($0.size)" }
            return "digitizer fingers \(fingers) bbox \(boundingBox) button \(button) " + list.joined(separator: "; ")
        // (String(describing: self) would call this description again.)
        case .key(let event): return "\(event)"
        case .button(let event): return "\(event)"
        case .motion(let dx, let dy): return "motion \(dx) \(dy)"
        case .scroll(let event): return "scroll \(event)"
        case .absolutePointer(let event): return "absolute \(event)"
        case .pen(let event): return "\(event)"
        case .gamepadButton(let event): return "gamepad \(event)"
        case .gamepadAxis(let event): return "gamepad axis \(event)"
        case .switchChanged(let event): return "switch \(event)"
        case .dial(let steps): return "dial \(steps)"
        case .axis(let event): return "\(event)"
        case .motionSample(let event): return "\(event)"
        case .gamepad(let event): return "\(event)"
        case .added: return "added"
        case .removed: return "removed"
        case .dropped(let count): return "dropped \(count)"
        case .focus(let isFocused): return isFocused ? "focus gained" : "focus lost"
        }
    }
}

/// A raw event compared without its time.
struct RawKey: Equatable, CustomStringConvertible {
    var type: UInt16
    var code: UInt16
    var value: Int32
    init(_ event: InputEvent) { (type, code, value) = (event.type, event.code, event.value) }
    var description: String { "\(type) \(code) \(value)" }
}

/// Compares two lists, saying where they first differ.
func firstDifference<T: Equatable & CustomStringConvertible>(_ got: [T], _ expected: [T]) -> String? {
    if got == expected { return nil }
    for index in 0..<max(got.count, expected.count) {
        let left = index < got.count ? got[index].description : "(nothing)"
        let right = index < expected.count ? expected[index].description : "(nothing)"
        if index >= got.count || index >= expected.count || got[index] != expected[index] {
            return "at \(index) of \(expected.count): got \(left), expected \(right)"
        }
    }
    return nil
}

/// Writes a line to standard output at once (the console is read while the checks run).
func say(_ line: String) {
    StandardOutput.write(line + "\n")
}

/// A duration in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}
