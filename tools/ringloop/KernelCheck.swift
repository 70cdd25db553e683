import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

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
        KernelChecks.readPath(context)
        KernelChecks.hotplug(context)
        KernelChecks.keyRepeat(context)
        KernelChecks.stateAtAttach(context)
        KernelChecks.droppedAndResynced(context)
        KernelChecks.grabAndClock(context)
        KernelChecks.ledOutput(context)
        UHIDChecks.run(context)
        CorpusReplay.run(context)
        KernelChecks.demo(context)
        say("kernel-check: checks took \(String(format: "%.1f", milliseconds(MonotonicInstant.now - started) / 1000)) s")
        say("kernel-check: \(report.passed) passed, \(report.failed) failed")
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

/// Counts and prints the checks' results, one line each.
final class CheckReport: @unchecked Sendable {
    // Used from the command's thread only.
    let only: String?
    private(set) var passed = 0
    private(set) var failed = 0

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

    func check(_ name: String, _ ok: Bool, _ detail: String) {
        if ok { pass(name, detail) } else { fail(name, detail) }
    }
}

/// A payload as text, for comparing two streams of HID events (timestamps aside).
func payloadText(_ payload: HIDEvent.Payload) -> String {
    switch payload {
    case .digitizer(let frame):
        let contacts = frame.contacts.map {
            "#\($0.trackingID)@\($0.slot) \($0.phase) \($0.x),\($0.y) p\($0.pressure) s\($0.size) t\($0.toolType)"
        }
        return "digitizer fingers \(frame.fingerCount) bbox \(frame.isBoundingBox) button \(frame.buttonDown) "
            + contacts.joined(separator: "; ")
    default:
        return "\(payload)"
    }
}

/// Compares two lists, saying where they first differ.
func firstDifference(_ got: [String], _ expected: [String]) -> String? {
    for index in 0..<max(got.count, expected.count) {
        let left = index < got.count ? got[index] : "(nothing)"
        let right = index < expected.count ? expected[index] : "(nothing)"
        if left != right { return "at \(index) of \(expected.count): got \(left), expected \(right)" }
    }
    return nil
}

/// Writes a line to standard output at once (the console is read while the checks run).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A duration in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}
