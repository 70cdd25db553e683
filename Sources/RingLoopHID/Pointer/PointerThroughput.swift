import RingLoop

/// The pointer stage's cost per event, for `ringloop-bench`'s `pointer.stage` rows:
/// decoded events of a real mouse recording, from memory, through the chain's
/// ``PointerStage`` (adaptive acceleration, the cursor on a screen, debouncing), each
/// event borrowed as the pipeline hands it over and the event it emits read and let go.
/// It lives here, with package access, so the measured path is compiled as the chain's
/// own is (see ``DecodeThroughput``).
package enum PointerThroughput {
    /// Runs `events` `warmRounds` then `measuredRounds` times through a pointer stage with
    /// `settings` and a cursor on `screen`; returns the events processed in the measured
    /// rounds and a sum of the cursor's positions (to keep the work observable).
    /// `beforeMeasured` runs between the two. Each round is moved on in time past the last,
    /// so the trackers see the recording's pace.
    /// `touchpad`: the events' device is a touchpad (its motion, the touchpad stage's
    /// normalized deltas, accelerated by the touchpad curve).
    package static func run(
        events: [HIDEvent], settings: PointerSettings, screen: ScreenDescription, touchpad: Bool = false, warmRounds: Int,
        measuredRounds: Int, beforeMeasured: () -> Void
    ) -> (events: Int, checksum: Double) {
        let stage = PointerStage(defaults: settings)
        stage.setScreensForMeasurement([screen])
        if touchpad, let device = events.first?.device { stage.setTouchpadForMeasurement(device) }
        guard let first = events.first?.timestamp.nanoseconds, let last = events.last?.timestamp.nanoseconds else { return (0, 0) }
        let span = last - first + 1_000_000_000
        var checksum = 0.0
        for round in 0..<(warmRounds + measuredRounds) {
            if round == warmRounds {
                beforeMeasured()
                checksum = 0
            }
            let shift = UInt64(round) * span
            for var event in events {
                event.timestamp = MonotonicInstant(nanoseconds: event.timestamp.nanoseconds + shift)
                stage.process(event) { passed in
                    if case .pointerMotion(let motion) = passed.payload { checksum += motion.cursor?.location.x ?? 0 }
                }
            }
        }
        return (events.count * measuredRounds, checksum)
    }
}

/// A touchpad's pointer motion as the touchpad stage makes it, for the benchmark: the
/// motion of `frames` (a touchpad's decoded events) by a ``TouchpadInterpreter`` with
/// libinput's default settings, each at its frame's time.
package enum TouchpadMotionMaker {
    package static func motions(of frames: [HIDEvent], device info: HIDDeviceInfo) -> [HIDEvent] {
        var interpreter = TouchpadInterpreter(device: info, settings: TouchpadSettings())
        var actions: [TouchpadAction] = []
        var motions: [HIDEvent] = []
        for event in frames {
            guard case .digitizer(let frame) = event.payload else { continue }
            actions.removeAll(keepingCapacity: true)
            interpreter.process(frame, at: event.timestamp, into: &actions)
            for case .motion(let dx, let dy, let deviceDX, let deviceDY) in actions {
                let motion = PointerMotionEvent(
                    dx: Int32(deviceDX), dy: Int32(deviceDY), acceleratedDX: dx, acceleratedDY: dy, unacceleratedDX: dx,
                    unacceleratedDY: dy)
                motions.append(HIDEvent(device: event.device, timestamp: event.timestamp, payload: .pointerMotion(motion)))
            }
        }
        return motions
    }
}
