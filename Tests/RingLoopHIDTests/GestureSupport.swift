import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The recognizers an app would attach, with the relationships UIKit apps set up.
enum GestureSet: String, CaseIterable, Sendable {
    /// UIKit's recognizers: taps with 1–3 fingers, a double tap (the single tap waits for
    /// it to fail), a long press, one- and two-finger pans (waiting for swipes and the
    /// edge pan to fail), swipes in four directions, pinch and rotation (simultaneous),
    /// an edge pan from any edge.
    case uikit
    /// libinput's touchpad gestures with tapping: taps with 1–3 fingers and a double tap,
    /// hold, the 3–4 finger swipe, pinch; one-finger motion and two-finger scrolling as pans.
    case libinput

    func make() -> [GestureRecognizer] {
        switch self {
        case .uikit: StandardGestures.uikit()
        case .libinput: StandardGestures.libinput(surfaces: Set(GestureSurface.Kind.allCases))
        }
    }
}

/// Runs recognizers over a recording from memory, as the loop would: the frames decoded
/// in order, deadlines passed in time between them, and time enough at the end for the
/// last deadlines.
struct GestureRun {
    var events: [GestureEvent] = []
    var cancellations: [(HIDDeviceID, Int32)] = []

    init(_ recording: Recording, recognizers: [GestureRecognizer], removeAt cutoff: Int? = nil) {
        let info = deviceInfo(of: recording)
        let surface = GestureSurface(device: info)
        let arena = GestureArena()
        for recognizer in recognizers { arena.add(recognizer) }
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        var collected: [GestureEvent] = []
        var cancelled: [(HIDDeviceID, Int32)] = []
        func take() {
            arena.takeReports { _, event in collected.append(event) }
            arena.takeCancellations { cancelled.append(($0, $1)) }
        }
        var last = MonotonicInstant(nanoseconds: 0)
        for (index, event) in recording.events.enumerated() {
            if let cutoff, index == cutoff {
                decoder.detach(at: last, into: &out)
                break
            }
            decoder.feed(event, into: &out)
            for decoded in out {
                arena.advance(to: decoded.timestamp)
                take()
                if case .digitizer(let frame) = decoded.payload {
                    arena.process(frame, device: decoded.device, at: decoded.timestamp, surface: surface)
                    take()
                }
                last = decoded.timestamp
            }
            out.removeAll()
        }
        for decoded in out {
            if case .digitizer(let frame) = decoded.payload {
                arena.process(frame, device: decoded.device, at: decoded.timestamp, surface: surface)
            }
        }
        if cutoff != nil { arena.removeDevice(info.id) }
        take()
        arena.advance(to: last + .seconds(2))
        take()
        events = collected
        cancellations = cancelled
    }

    /// Each gesture that succeeded: a discrete one recognized, or a continuous one that
    /// began and ended (not cancelled), as "name[ direction] fingers".
    var recognized: [String] { Self.recognized(events) }

    static func recognized(_ events: [GestureEvent]) -> [String] {
        var began: [String: Int] = [:]
        var out: [String] = []
        for event in events {
            let key = event.gesture.rawValue
            switch event.state {
            case .began: began[key] = event.values.fingers
            case .ended:
                if let fingers = began.removeValue(forKey: key) {
                    out.append("\(key) \(fingers)")
                } else {
                    out.append("\(key)\(event.direction.map { " \($0)" } ?? "") \(event.values.fingers)")
                }
            case .cancelled: began[key] = nil
            default: break
            }
        }
        return out
    }
}

/// A recording's device description as the chain takes it.
func deviceInfo(of recording: Recording) -> HIDDeviceInfo { HIDDeviceInfo(description: recording.description!) }

/// The events the decoder makes of `recording` (with its description), of its first
/// `count` input events.
func decodedEvents(of recording: Recording, first count: Int = .max) -> [HIDEvent] {
    var decoder = FrameDecoder(info: deviceInfo(of: recording))
    var events: [HIDEvent] = []
    for event in recording.events.prefix(count) { decoder.feed(event, into: &events) }
    return events
}

/// The events the decoder makes of `recording` (with its description), frame by frame:
/// `body` gets the events of each `SYN_REPORT` that ends a frame with any.
func forEachDecodedFrame(of recording: Recording, _ body: ([HIDEvent]) throws -> Void) rethrows {
    var decoder = FrameDecoder(info: deviceInfo(of: recording))
    var frame: [HIDEvent] = []
    for event in recording.events {
        decoder.feed(event, into: &frame)
        guard event.isSynReport, !frame.isEmpty else { continue }
        try body(frame)
        frame.removeAll(keepingCapacity: true)
    }
}

let gesturesFolder = devicesFolder + "/gestures"

func loadGestureRecording(_ name: String) throws -> Recording {
    try Recording.load(contentsOf: gesturesFolder + "/" + name + ".evemu")
}

/// A recording sent to an event system as a stream device (a pipe) with its own stamps,
/// moved as a whole onto the loop's clock: the chain sees the recording's time between
/// frames whatever the machine's load, as the kernel stamps events when the device sends
/// them and not when a reader gets to them.
///
/// Placed ahead of the clock (`firstAt` in the future), every frame is in the pipe before
/// the loop's time reaches the first deadline it sets: deadlines before the last frame
/// pass in the frames' own time, as from memory (``GestureRun``), and only those after it
/// wait for the clock — the deadline timer's path. Placed behind it, the frames are late
/// as under a loaded loop.
final class GestureStream {
    let device: HIDDeviceID
    private let writeEnd: Int32
    /// Microseconds added to the recording's stamps.
    private let shift: Int64

    /// Attaches a pipe to `system` (started) as the device `recording` describes; the
    /// recording's first event will carry `start`.
    init(_ recording: Recording, to system: HIDEventSystem, firstAt start: MonotonicInstant) throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        writeEnd = ends[1]
        // Room for a whole recording, written before the loop reads any of it.
        _ = fcntl(writeEnd, 1031 /* F_SETPIPE_SZ, _GNU_SOURCE only */, 1 << 20)
        let room = Int(fcntl(writeEnd, 1032 /* F_GETPIPE_SZ */))
        let size = recording.events.first.map { MemoryLayout.size(ofValue: $0.kernelEvent) } ?? 0
        try #require(recording.events.count * size <= room, "the recording does not fit the pipe")
        shift = Int64(start.nanoseconds / 1000) - (recording.events.first?.timeMicroseconds ?? 0)
        device = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: deviceInfo(of: recording))
    }

    deinit { close() }

    /// Writes `events` of the recording, a frame per write, with their stamps.
    func send(_ events: some Sequence<InputEvent>) {
        let stamped = events.map { event in
            let time = event.timeMicroseconds + shift
            return InputEvent(
                seconds: time / 1_000_000, microseconds: Int32(time % 1_000_000), type: event.type, code: event.code,
                value: event.value)
        }
        writeFrames(stamped, to: writeEnd)
    }

    private var closed = false

    /// Ends the stream: the device is removed once the chain has read everything.
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(writeEnd)
    }

    /// The stamp the last digitizer frame of `events` carries on the stream.
    func lastFrameStamp(of events: [InputEvent], info: HIDDeviceInfo) -> MonotonicInstant? {
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        for event in events { decoder.feed(event, into: &out) }
        guard let last = out.last(where: { $0.kind == .digitizer }) else { return nil }
        return MonotonicInstant(nanoseconds: UInt64(Int64(last.timestamp.nanoseconds / 1000) + shift) * 1000)
    }

    /// Whether the gesture recognizers of `system` have seen the frame stamped `last` and
    /// wait for no deadline: nothing the stream sent can change what they recognize.
    func isSettled(in system: HIDEventSystem, through last: MonotonicInstant) -> Bool {
        guard let arena = system.gestures?.arena else { return false }
        return arena.latestFrameTime(of: device) == last && arena.nextDeadline == nil
    }
}

/// How far ahead of the loop's clock ``GestureStream``s that must not depend on the
/// machine's load are placed: the loop would have to stall this long before it reads the
/// first frame for the clock to pass a deadline the frames set.
let gestureStreamLead = Duration.seconds(1)

/// Runs `recording` through a started event system on the current thread's loop as a
/// ``GestureStream`` placed ``gestureStreamLead`` ahead, until the recognizers are
/// settled, then ends the stream and waits for the device's removal.
func playGestureStream(_ recording: Recording, to system: HIDEventSystem, loop: RingRunLoop) throws {
    var removed = false
    let token = system.addHandler(kinds: [.deviceRemoved]) { _ in
        removed = true
        return .pass
    }
    defer { system.removeHandler(token) }
    let stream = try GestureStream(recording, to: system, firstAt: .now + gestureStreamLead)
    stream.send(recording.events)
    let last = try #require(stream.lastFrameStamp(of: recording.events, info: deviceInfo(of: recording)))
    #expect(runUntil(loop) { stream.isSettled(in: system, through: last) }, "the recognizers never settled")
    stream.close()
    #expect(runUntil(loop) { removed }, "the stream's end did not remove the device")
}
