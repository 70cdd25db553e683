import RingLoop
import RingLoopEvdev

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
            let key = event.gesture
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
func deviceInfo(of recording: Recording) -> HIDDeviceInfo {
    let description = recording.description!
    return HIDDeviceInfo.describing(
        name: description.name, codes: description.codes, axes: description.absoluteAxes, properties: description.properties)
}

let gesturesFolder = devicesFolder + "/gestures"

func loadGestureRecording(_ name: String) throws -> Recording {
    try Recording.load(contentsOf: gesturesFolder + "/" + name + ".evemu")
}
