// kiosk: a headless kiosk's main loop — a touchscreen and a keyboard through the HID
// chain, a 60 Hz timer driving the display, SIGTERM ending it cleanly.
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
    var keys = 0
    var touchFrames = 0
}
let counts = LoopBound(Counts(), loop: loop)

let system = HIDEventSystem(
    configuration: .init(deviceDirectory: folder, shape: .dedicatedThread, nodeNames: names), loop: loop)
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
try system.start()

// The display: a 60 Hz timer in the common modes, so it keeps running in any mode.
let display = LoopTimer(after: .zero, repeating: .nanoseconds(16_666_667)) { _ in counts.value.frames += 1 }
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
say("kiosk: \(counts.value.frames) frames at 60 Hz, \(counts.value.keys) keys, \(counts.value.touchFrames) touch frames")

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
