import RingLoopEvdev

/// The standard gamepad's cost per raw input, for `ringloop-bench`'s `gamepad` rows: a
/// recording's keys and axes through ``GamepadLayout`` with a handler of the events it
/// makes. It lives here, with package access, so the measured path is compiled as the
/// chain's own is (see ``DecodeThroughput``).
package enum GamepadThroughput {
    /// Feeds the `EV_KEY` and `EV_ABS` events of `events` to `layout`, `warmRounds` then
    /// `measuredRounds` times (the layout reset between rounds, so each round moves it
    /// again); returns the inputs fed and the gamepad events made in the measured rounds.
    /// `beforeMeasured` runs between the two.
    package static func run(
        layout: GamepadLayout, events: [InputEvent], warmRounds: Int, measuredRounds: Int, beforeMeasured: () -> Void,
        handler: (GamepadEvent) -> Void
    ) -> (inputs: Int, outputs: Int) {
        var layout = layout
        let inputs = events.filter { ($0.type == Evdev.EV_KEY && $0.value != 2) || $0.type == Evdev.EV_ABS }
        var fed = 0
        var made = 0
        for round in 0..<(warmRounds + measuredRounds) {
            if round == warmRounds {
                beforeMeasured()
                fed = 0
                made = 0
            }
            for event in inputs {
                if event.type == Evdev.EV_KEY {
                    layout.process(button: event.code, isDown: event.value != 0) { output in
                        made += 1
                        handler(output)
                    }
                } else {
                    layout.process(axis: event.code, value: event.value) { output in
                        made += 1
                        handler(output)
                    }
                }
                fed += 1
            }
            layout.reset { output in
                made += 1
                handler(output)
            }
        }
        return (fed, made)
    }
}
