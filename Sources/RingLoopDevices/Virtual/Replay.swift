#if canImport(Glibc)
import Glibc
#endif

/// How fast a recording is replayed.
public enum ReplaySpeed: Sendable, Hashable {
    /// At the recorded pace.
    case recorded
    /// At `factor` times the recorded pace (2 = twice as fast).
    case scaled(Double)
    /// Without waiting between frames.
    case asFastAsPossible
}

/// Replays a recording's events into a virtual device, frame by frame (up to each
/// `SYN_REPORT`), at the recorded times relative to the first event. The device stamps
/// each event when it is sent, with its own clock, as a kernel device does.
public enum Replay {
    /// The recording's frames: events up to and including each `SYN_REPORT`, with the
    /// time of the frame's first event in microseconds. Trailing events without a
    /// `SYN_REPORT` form a last frame.
    public static func frames(of recording: Recording) -> [(time: Int64, events: [RecordedEvent])] {
        var frames: [(Int64, [RecordedEvent])] = []
        var current: [RecordedEvent] = []
        for event in recording.events {
            current.append(event)
            if event.isSynReport {
                frames.append((current[0].timeMicroseconds, current))
                current = []
            }
        }
        if !current.isEmpty { frames.append((current[0].timeMicroseconds, current)) }
        return frames
    }

    /// Sends the recording's frames to `device`, sleeping between them as `speed` says.
    /// - Parameters:
    ///   - progress: Called after each frame with (frames sent, frame count).
    ///   - shouldStop: Checked before each frame; return `true` to stop early.
    /// - Returns: The number of frames sent.
    @discardableResult
    public static func play(
        _ recording: Recording, to device: any VirtualInputDevice, speed: ReplaySpeed = .recorded,
        progress: ((Int, Int) -> Void)? = nil, shouldStop: () -> Bool = { false }
    ) throws(VirtualDeviceError) -> Int {
        let frames = frames(of: recording)
        guard let first = frames.first?.time else { return 0 }
        // Offsets count from the moment the first frame has been sent, so no gap between
        // two frames' timestamps is ever shorter than recorded (scaled).
        var startNanoseconds: Int64 = 0
        for (index, frame) in frames.enumerated() {
            if shouldStop() { return index }
            if index > 0 {
                let offset = max(0, frame.time - first) * 1000
                switch speed {
                case .recorded: sleepUntil(nanoseconds: startNanoseconds + offset)
                case .scaled(let factor): sleepUntil(nanoseconds: startNanoseconds + Int64(Double(offset) / max(factor, 1e-6)))
                case .asFastAsPossible: break
                }
            }
            try device.send(frame.events.map { ($0.type, $0.code, $0.value) })
            if index == 0 {
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                startNanoseconds = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
            }
            progress?(index + 1, frames.count)
        }
        return frames.count
    }

    static func sleepUntil(nanoseconds: Int64) {
        var target = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    }
}
