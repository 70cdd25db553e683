import RingLoopEvdev
import RingLoopHID

/// The standard gamepad without a device: a recording's keys and axes through a
/// ``GamepadLayout`` on the calling thread.
public enum GamepadBenchmark {
    /// Feeds `events` to `layout` `warmRounds` then `measuredRounds` times; returns the
    /// inputs fed and gamepad events made in the measured rounds, which start right after
    /// `beforeMeasured`.
    public static func run(
        layout: GamepadLayout, events: [InputEvent], warmRounds: Int, measuredRounds: Int,
        beforeMeasured: () -> Void = {}, handler: (GamepadEvent) -> Void
    ) -> (inputs: Int, outputs: Int) {
        GamepadThroughput.run(
            layout: layout, events: events, warmRounds: warmRounds, measuredRounds: measuredRounds,
            beforeMeasured: beforeMeasured, handler: handler)
    }
}
