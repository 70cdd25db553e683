// kiosk: a headless kiosk's main loop — a touchscreen and a keyboard through the HID
// chain, gestures on the touchscreen (tap, two-finger scroll in the tracking mode, pinch
// to zoom), a 60 Hz timer driving the display in every mode, SIGTERM ending it cleanly.
//
//   swift run kiosk                      # the bundled recordings, hosted and replayed
//   swift run kiosk --devices /dev/input # real devices, until SIGINT or SIGTERM
//   swift run kiosk --until-signal       # the recordings, then wait for a signal
//
// Without --devices it hosts devices/touchscreen-multitouch.evemu and
// devices/keyboard.evemu as virtual devices (uinput where usable, else FUSE), replays them
// once, and ends when the replay has.
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

var arguments = CommandLine.arguments.dropFirst()
var deviceFolder: String?
var untilSignal = false
while let argument = arguments.popFirst() {
    switch argument {
    case "--devices":
        guard let folder = arguments.popFirst() else {
            say("kiosk: --devices needs a folder of evdev nodes")
            exit(64)
        }
        deviceFolder = folder
    case "--until-signal":
        untilSignal = true
    default:
        say("usage: kiosk [--devices DIR] [--until-signal]   (unknown argument '\(argument)')")
        exit(64)
    }
}

let loop = RingRunLoop.current
// Blocked here, before any other thread starts, so every thread leaves them to the loop.
let signals = try loop.signals([SIGINT, SIGTERM])

// The devices: real ones, or the bundled recordings hosted as virtual devices.
var host: VirtualDeviceHost?
var replays: [(recording: Recording, device: any VirtualInputDevice)] = []
let folder: String
var names: Set<String>?
if let deviceFolder {
    folder = deviceFolder
} else {
    let hosted = try VirtualDeviceHost(folderPath: "/tmp/kiosk-\(getpid())")
    for file in ["devices/touchscreen-multitouch.evemu", "devices/keyboard.evemu"] {
        let recording = try Recording.load(contentsOf: file)
        replays.append((recording, try hosted.create(recording.description!, forReplay: true)))
    }
    host = hosted
    folder = hosted.backend == .fuse ? hosted.folderPath : "/dev/input"
    names = Set(replays.map { String($0.device.nodePath.split(separator: "/").last!) })
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

let system = HIDEventSystem(
    configuration: .init(deviceDirectory: folder, shape: .dedicatedThread, nodeNames: names, tracksInteractions: true),
    loop: loop)
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
let tap = TapGestureRecognizer(taps: 1, fingers: 1, name: "tap")
let scroll = PanGestureRecognizer(fingers: 2...2, name: "scroll")
scroll.tracksInteraction = true
let zoom = PinchGestureRecognizer(name: "zoom")
for recognizer in [tap, scroll, zoom] as [GestureRecognizer] {
    recognizer.surfaces = [.touchscreen]
    recognizer.cancelsTouchesInHandlers = false
    recognizer.addAction { event in
        guard event.state == .ended else { return }
        counts.value.gestures[event.gesture, default: 0] += 1
        let values = event.values
        let unit = values.unit == .millimetres ? "mm" : "device units"
        switch event.gesture {
        case "tap": say("tap at \(values.location) \(unit)")
        case "scroll": say("scrolled by \(values.translation) \(unit)")
        default: say("zoomed to \((values.scale * 100).rounded() / 100)x")
        }
    }
    system.addGestureRecognizer(recognizer)
}
try system.start()

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

if !replays.isEmpty {
    // Replay once both devices are attached; the replay runs on its own thread.
    while system.devices.count < replays.count {
        _ = loop.run(mode: .default, for: .milliseconds(20))
    }
    let finished = Atomic<Bool>(false)
    let waitForSignal = untilSignal
    let toPlay = UncheckedReplays(replays)
    let replay = PosixThreadForExample {
        _ = try? Replay.play(toPlay.value, timeline: .eachFromItsStart)
        finished.store(true, ordering: .releasing)
    }
    let watcher = LoopTimer(after: .milliseconds(50), repeating: .milliseconds(50)) { timer in
        guard finished.load(ordering: .acquiring) else { return }
        timer.invalidate()
        if waitForSignal {
            say("kiosk: replay done; SIGTERM or Ctrl-C to stop")
        } else {
            // The last frames reach the handlers before the loop stops.
            loop.perform(after: .milliseconds(200), inModes: [.common]) { loop.stop() }
        }
    }
    loop.add(watcher, to: .common)
    _ = replay
}

loop.run()
display.invalidate()
system.stop()
for (_, device) in replays { device.remove() }
host?.close()
let final = counts.value
let gestures = final.gestures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
say(
    "kiosk: \(final.frames) frames at 60 Hz (\(final.framesWhileTracking) while scrolling), \(final.keys) keys, "
        + "\(final.touchFrames) touch frames, gestures: \(gestures.isEmpty ? "none" : gestures)")

/// The replay pairs, handed to the replay thread once (not touched here after).
final class UncheckedReplays: @unchecked Sendable {
    let value: [(recording: Recording, device: any VirtualInputDevice)]
    init(_ value: [(recording: Recording, device: any VirtualInputDevice)]) { self.value = value }
}

/// A detached thread for the replay (the package's thread type is internal).
final class PosixThreadForExample: Sendable {
    init(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        pthread_create(
            &thread, nil,
            { pointer in
                let box = Unmanaged<Box>.fromOpaque(pointer!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        pthread_detach(thread)
    }
}
