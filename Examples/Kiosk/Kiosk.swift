// kiosk: a headless kiosk's main loop — a touchscreen and a keyboard through the HID
// chain, gestures on the touchscreen (tap, two-finger scroll in the tracking mode, pinch
// to zoom), a 60 Hz timer driving the display in every mode, SIGTERM ending it cleanly.
//
//   swift run kiosk                      # the bundled recordings, hosted and replayed
//   swift run kiosk --devices /dev/input # real devices, until SIGINT or SIGTERM
//   swift run kiosk --until-signal       # the recordings, then wait for a signal
//
// Without --devices it hosts devices/touchscreen-multitouch.evemu and
// devices/keyboard.evemu (from the package's folder, or --recordings DIR) as virtual
// devices (uinput where usable, else FUSE) with a ReplaySession, replays them once, and
// ends when the replay has. A failure ends it with one line and a sysexits status.
import Glibc
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization

/// Writes a line at once (a pipe would buffer `print`).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Ends the program with one line on standard error and `status` (sysexits.h).
func fail(_ message: String, status: Int32) -> Never {
    let bytes = Array("kiosk: \(message)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

var arguments = CommandLine.arguments.dropFirst()
var deviceFolder: String?
var recordingsFolder = "devices"
var untilSignal = false
while let argument = arguments.popFirst() {
    switch argument {
    case "--devices", "--recordings":
        guard let folder = arguments.popFirst() else { fail("\(argument) needs a folder", status: 64) }
        if argument == "--devices" { deviceFolder = folder } else { recordingsFolder = folder }
    case "--until-signal":
        untilSignal = true
    default:
        fail("unknown argument '\(argument)'; usage: kiosk [--devices DIR | --recordings DIR] [--until-signal]", status: 64)
    }
}

let loop = RingRunLoop.current
// Blocked here, before any other thread starts, so every thread leaves them to the loop.
let signals: AsyncStream<Int32>
do { signals = try loop.signals([SIGINT, SIGTERM]) } catch { fail("cannot watch signals: \(error)", status: 71) }

// The devices: real ones, or the bundled recordings hosted as virtual devices, which the
// chain attaches and then replays, once it has them all.
var session: ReplaySession?
let input: HIDEventSystem.Input
if let deviceFolder {
    input = .devices(.init(path: deviceFolder, shape: .dedicatedThread))
} else {
    var files: [[Recording]] = []
    for name in ["touchscreen-multitouch.evemu", "keyboard.evemu"] {
        let path = recordingsFolder + "/" + name
        do { files.append([try Recording.load(contentsOf: path)]) } catch {
            if case .unreadable(_, .noSuchFileOrDirectory) = error {
                fail("\(path): No such file or directory (run from the package's folder, or give --recordings DIR)", status: 66)
            }
            fail("\(error)", status: 65)
        }
    }
    do {
        let hosted = try ReplaySession(files: files, configuration: .init(folderPath: "/tmp/kiosk-\(getpid())"))
        session = hosted
        let waitForSignal = untilSignal
        input = .player(
            hosted, shape: .dedicatedThread,
            finished: {
                if let failure = hosted.wait().failures.first { say("kiosk: \(failure)") }
                if waitForSignal {
                    say("kiosk: replay done; SIGTERM or Ctrl-C to stop")
                } else {
                    // The system calls this once the handlers have had the last frames.
                    loop.stop()
                }
            })
    } catch {
        fail("\(error)", status: 69)
    }
}

struct Counts {
    var frames = 0
    /// Display frames drawn while the loop ran in the tracking mode (during a scroll).
    var framesWhileTracking = 0
    var keys = 0
    var touchFrames = 0
    var gestures: [String: Int] = [:]
}
let counts = LoopBound(Counts(), loop: loop)

let system = HIDEventSystem(configuration: .init(input: input, tracksInteractions: true), loop: loop)
system.addHandler(kinds: [.key], deviceClasses: [.keyboard]) { event in
    guard case .key(let key) = event.payload, key.state != .repeat else { return .pass }
    counts.value.keys += 1
    say("key \(Evdev.name(ofCode: key.code, type: Evdev.EV_KEY) ?? "\(key.code)") \(key.state)")
    return .consumed
}
system.addHandler(kinds: [.digitizer], deviceClasses: [.touchscreen]) { event in
    guard case .digitizer(let frame) = event.payload else { return .pass }
    counts.value.touchFrames += 1
    for contact in frame.contacts where contact.phase == .began || contact.phase == .ended {
        say("touch \(contact.trackingID) \(contact.phase) at (\(contact.x), \(contact.y))")
    }
    return .consumed
}

// Gestures, as a kiosk's screens use them: a tap selects, a two-finger drag scrolls (the
// loop runs in the tracking mode meanwhile, as UIKit's main loop does under a scroll
// view), a pinch zooms. The touch handler above still gets every frame.
extension GestureKind {
    static let scroll = GestureKind("scroll")
    static let zoom = GestureKind("zoom")
}
let tap = TapGestureRecognizer(taps: 1, fingers: 1)
let scroll = PanGestureRecognizer(fingers: 2...2, kind: .scroll)
scroll.tracksInteraction = true
let zoom = PinchGestureRecognizer(kind: .zoom)
for recognizer in [tap, scroll, zoom] as [GestureRecognizer] {
    recognizer.surfaces = [.touchscreen]
    recognizer.cancelsTouchesInHandlers = false
    recognizer.addAction { event in
        guard event.state == .ended else { return }
        counts.value.gestures[event.gesture.rawValue, default: 0] += 1
        let values = event.values
        let unit = values.unit == .millimetres ? "mm" : "device units"
        switch event.gesture {
        case .tap: say("tap at \(values.location) \(unit)")
        case .scroll: say("scrolled by \(values.translation) \(unit)")
        default: say("zoomed to \((values.scale * 100).rounded() / 100)x")
        }
    }
    system.addGestureRecognizer(recognizer)
}
do { try system.start() } catch { fail("\(error)", status: 69) }

// The display: a 60 Hz timer in the common modes, so it keeps running in any mode, the
// tracking mode included.
let display = LoopTimer(after: .zero, repeating: .nanoseconds(16_666_667)) { _ in
    counts.value.frames += 1
    if loop.currentMode == .tracking { counts.value.framesWhileTracking += 1 }
}
loop.add(display, to: .common)

Task(executorPreference: loop) {
    for await signal in signals {
        say("kiosk: signal \(signal), shutting down")
        loop.stop()
        break
    }
}

loop.run()
display.invalidate()
system.stop()
session?.close()
let final = counts.value
let gestures = final.gestures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
say(
    "kiosk: \(final.frames) frames at 60 Hz (\(final.framesWhileTracking) while scrolling), \(final.keys) keys, "
        + "\(final.touchFrames) touch frames, gestures: \(gestures.isEmpty ? "none" : gestures)")
