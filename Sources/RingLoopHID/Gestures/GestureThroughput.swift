import RingLoop

/// Recognizer cost per touch frame, for `ringloop-bench`'s `gestures` rows: digitizer
/// frames from memory through the arena with ten recognizers (taps, long press, pans,
/// swipes, pinch, rotation, edge pan) and their actions, as the BeforeWaiting observer
/// runs them. It lives here, with package access, so the measured path is compiled as the
/// chain's own is (see ``DecodeThroughput``).
package enum GestureThroughput {
    /// The ten recognizers measured.
    package static func recognizers() -> [GestureRecognizer] {
        let tap = TapGestureRecognizer(taps: 1)
        let doubleTap = TapGestureRecognizer(taps: 2)
        tap.require(toFail: doubleTap)
        let pan = PanGestureRecognizer(fingers: 1...1)
        let right = SwipeGestureRecognizer(directions: .right)
        let left = SwipeGestureRecognizer(directions: .left)
        let edge = ScreenEdgePanGestureRecognizer(edges: .all)
        for other in [right, left, edge] as [GestureRecognizer] { pan.require(toFail: other) }
        let pinch = PinchGestureRecognizer()
        let rotation = RotationGestureRecognizer()
        pinch.recognizeSimultaneously { _, other in other === rotation }
        return [
            tap, doubleTap, LongPressGestureRecognizer(), pan, PanGestureRecognizer(fingers: 2...2), right, left, pinch,
            rotation, edge,
        ]
    }

    /// Feeds `frames` (one device's digitizer frames, oldest first) `warmRounds` then
    /// `measuredRounds` times, each round later than the last so every round is new
    /// touches; returns the frames fed in the measured rounds and the reports made there.
    /// `beforeMeasured` runs between the two.
    package static func run(
        frames: [(MonotonicInstant, DigitizerFrame)], surface: GestureSurface, warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void, action: @escaping (GestureEvent) -> Void
    ) -> (frames: Int, reports: Int) {
        let rounds = warmRounds + measuredRounds
        let arena = GestureArena()
        for recognizer in recognizers() { arena.add(recognizer) }
        let device = HIDDeviceID(rawValue: 1)
        guard let first = frames.first?.0, let last = frames.last?.0 else { return (0, 0) }
        let span = last - first + .seconds(2)
        var reports = 0
        var fed = 0
        for round in 0..<rounds {
            if round == warmRounds {
                beforeMeasured()
                reports = 0
                fed = 0
            }
            let shift = span * round
            for index in frames.indices {
                let at = frames[index].0 + shift
                arena.advance(to: at)
                arena.process(frames[index].1, device: device, at: at, surface: surface)
                arena.takeReports { recognizer, event in
                    reports += 1
                    for recognizerAction in recognizer.actions { recognizerAction(event) }
                    action(event)
                }
                arena.takeCancellations { _, _ in }
                fed += 1
            }
            // The last deadlines (a single tap waiting for the double tap), outside the frames.
            arena.advance(to: last + shift + .seconds(1))
            arena.takeReports { _, event in action(event) }
        }
        return (fed, reports)
    }
}
