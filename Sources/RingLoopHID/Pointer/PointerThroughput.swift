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
    package static func run(
        events: [HIDEvent], settings: PointerSettings, screen: ScreenDescription, warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void
    ) -> (events: Int, checksum: Double) {
        let stage = PointerStage(defaults: settings)
        stage.setScreensForMeasurement([screen])
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
