import RingLoop

/// Recognizer cost per motion sample, for `ringloop-bench`'s `motion` rows: samples
/// from memory through a shake and an orientation recognizer with their actions, as the
/// BeforeWaiting observer runs them (each sample in turn, then the time). It
/// lives here, with package access, so the measured path is compiled as the chain's own
/// is (see ``DecodeThroughput``).
package enum MotionThroughput {
    /// Feeds `samples` (one device's, oldest first) `warmRounds` then `measuredRounds`
    /// times, each round later than the last; returns the samples fed in the measured
    /// rounds and the reports made there. `beforeMeasured` runs between the two.
    package static func run(
        samples: [(MonotonicInstant, MotionEvent)], warmRounds: Int, measuredRounds: Int, beforeMeasured: () -> Void,
        action: @escaping (MonotonicInstant) -> Void
    ) -> (samples: Int, reports: Int) {
        guard let first = samples.first?.0, let last = samples.last?.0 else { return (0, 0) }
        let shake = ShakeRecognizer()
        let orientation = OrientationRecognizer()
        var reports = 0
        shake.addAction { event in
            reports += 1
            action(event.timestamp)
        }
        orientation.addAction { event in
            reports += 1
            action(event.timestamp)
        }
        let recognizers: [MotionRecognizer] = [shake, orientation]
        let device = HIDDeviceID(rawValue: 1)
        let span = last - first + .seconds(2)
        var fed = 0
        for round in 0..<(warmRounds + measuredRounds) {
            if round == warmRounds {
                beforeMeasured()
                reports = 0
                fed = 0
            }
            let shift = span * round
            for index in samples.indices {
                let at = samples[index].0 + shift
                for recognizer in recognizers { recognizer.process(samples[index].1, device: device, at: at) }
                fed += 1
            }
            for recognizer in recognizers { recognizer.advance(to: last + shift + .seconds(1)) }
        }
        return (fed, reports)
    }
}
