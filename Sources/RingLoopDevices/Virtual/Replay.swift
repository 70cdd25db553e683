import RingLoopEvdev

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

    /// A recorded gap at this speed, in nanoseconds (at most about 146 years, whatever
    /// the factor); `nil` when there is no waiting.
    func scaled(nanoseconds: Int64) -> Int64? {
        switch self {
        case .recorded: return nanoseconds
        case .asFastAsPossible: return nil
        case .scaled(let factor):
            guard factor.isFinite, factor > 0 else { return nil }
            let scaled = Double(nanoseconds) / factor
            return scaled < Double(Int64.max / 2) ? Int64(scaled) : Int64.max / 2
        }
    }
}

/// Replays a recording's events into a virtual device, frame by frame (up to each
/// `SYN_REPORT`), at the recorded times relative to the first event. The device stamps
/// each event when it is sent, with its own clock, as a kernel device does.
public enum Replay {
    /// The recording's frames: events up to and including each `SYN_REPORT`, with the
    /// time of the frame's first event in microseconds. Trailing events without a
    /// `SYN_REPORT` form a last frame.
    public static func frames(of recording: Recording) -> [(time: Int64, events: [InputEvent])] {
        var frames: [(Int64, [InputEvent])] = []
        var current: [InputEvent] = []
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
    ///   - recording: The recording whose frames are sent.
    ///   - device: The virtual device they go to.
    ///   - speed: Recorded speed, scaled, or as fast as possible.
    ///   - progress: Called after each frame with (frames sent, frame count).
    ///   - shouldStop: Checked before each frame; return `true` to stop early.
    /// - Returns: The number of frames sent.
    @discardableResult
    public static func play(
        _ recording: Recording, to device: any VirtualInputDevice, speed: ReplaySpeed = .recorded,
        progress: ((Int, Int) -> Void)? = nil, shouldStop: () -> Bool = { false }
    ) throws(VirtualDeviceError) -> Int {
        try play([(recording, device)], timeline: .sharedClock, speed: speed, progress: progress, shouldStop: shouldStop)
    }

    /// How the recordings replayed together are put on one timeline.
    public enum Timeline: Sendable, Hashable {
        /// Their timestamps are on one clock (the devices of one file: `libinput record`
        /// of several devices, an evemu file of several descriptions): the gaps between
        /// devices are kept.
        case sharedClock
        /// Each starts at once, from its own first frame (recordings made apart).
        case eachFromItsStart
    }

    /// Sends the frames of several recordings, each to its device, merged in time order
    /// on one thread, sleeping between them as `speed` says.
    /// - Parameters:
    ///   - pairs: Each recording with the virtual device its frames go to.
    ///   - timeline: Whether the recordings share one clock or each starts at once.
    ///   - speed: Recorded speed, scaled, or as fast as possible.
    ///   - progress: Called after each frame with (frames sent, frame count of all).
    ///   - shouldStop: Checked before each frame; return `true` to stop early.
    /// - Returns: The number of frames sent.
    @discardableResult
    public static func play(
        _ pairs: [(recording: Recording, device: any VirtualInputDevice)], timeline: Timeline,
        speed: ReplaySpeed = .recorded, progress: ((Int, Int) -> Void)? = nil, shouldStop: () -> Bool = { false }
    ) throws(VirtualDeviceError) -> Int {
        var schedule: [(offset: Int64, device: Int, events: [InputEvent])] = []
        let perDevice = pairs.map { frames(of: $0.recording) }
        let sharedStart = perDevice.compactMap { $0.first?.time }.min() ?? 0
        for (index, list) in perDevice.enumerated() {
            guard let start = timeline == .sharedClock ? sharedStart : list.first?.time else { continue }
            // A device's frames keep their file order even where the recorded clock steps
            // back (two recordings joined): such a frame goes out at once.
            var previous: Int64 = 0
            for frame in list {
                previous = max(previous, frame.time - start)
                schedule.append((previous, index, frame.events))
            }
        }
        // Stable: frames of one device keep their order, devices keep theirs at equal times.
        schedule = schedule.enumerated().sorted {
            ($0.element.offset, $0.offset) < ($1.element.offset, $1.offset)
        }.map(\.element)
        var startNanoseconds: Int64 = 0
        for (index, entry) in schedule.enumerated() {
            if shouldStop() { return index }
            if index > 0 {
                let offset = entry.offset * 1000
                if let wait = speed.scaled(nanoseconds: offset),
                    !sleepUntil(nanoseconds: startNanoseconds &+ wait, unless: shouldStop)
                {
                    return index
                }
            } else {
                startNanoseconds = monotonicNanoseconds() - entry.offset * 1000
            }
            try pairs[entry.device].device.send(entry.events.map { ($0.type, $0.code, $0.value) })
            progress?(index + 1, schedule.count)
        }
        return schedule.count
    }

    static func monotonicNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The longest single sleep: `shouldStop` is checked at least this often.
    static let sleepSlice: Int64 = 50_000_000

    /// Sleeps until `nanoseconds` (CLOCK_MONOTONIC) in slices, checking `shouldStop`
    /// between them; `false` when it asked to stop. A long recorded gap (or a tiny speed
    /// factor) never keeps a replay from stopping.
    static func sleepUntil(nanoseconds target: Int64, unless shouldStop: () -> Bool) -> Bool {
        while true {
            if shouldStop() { return false }
            let now = monotonicNanoseconds()
            if now >= target { return true }
            let until = min(target, now + sleepSlice)
            var time = timespec(tv_sec: Int(until / 1_000_000_000), tv_nsec: Int(until % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
        }
    }
}
