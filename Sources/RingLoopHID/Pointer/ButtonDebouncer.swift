import RingLoop

/// Button debouncing as libinput's documentation describes it ("Button debouncing"),
/// for one device.
///
/// - The **bounce** method, always on: a change of a button's state is passed on at once,
///   and for ``bounceTimeout`` after it the button's further changes are taken for the
///   switch bouncing and dropped; when the time is up, a state that differs from the one
///   passed on is passed on then (a press–release–press gives one press; a real release
///   within the time comes late, never lost).
/// - The **spurious** method, on from the first faulty sequence the device shows (a
///   release followed within ``spuriousTimeout`` by a press while the button was held):
///   from then on a release waits ``spuriousTimeout``, and a press within that time drops
///   both; a release not followed by a press is passed on when the time is up.
///
/// Times are the kernel's timestamps of the events: ``process(_:at:emit:)`` passes on what
/// fell due before an event first, and ``flush(upTo:emit:)`` what is due by a time (the
/// stage calls it when its timer fires).
struct ButtonDebouncer: Sendable {
    /// How long after a change the button's further changes count as bouncing (ns).
    static let bounceTimeout: Int64 = 25_000_000
    /// How long a release waits for a press once spurious releases were seen (ns).
    static let spuriousTimeout: Int64 = 12_000_000

    private struct ButtonState {
        var button: ButtonEvent
        /// The switch's last state, as the kernel said.
        var physicallyDown: Bool
        /// The state passed on.
        var reportedDown: Bool
        /// Changes until then are bouncing (nanoseconds; 0: none).
        var bounceEnd: Int64 = 0
        /// When the last release was passed on (nanoseconds).
        var releasedAt: Int64 = .min
        /// A release waiting for the spurious timeout (nanoseconds; 0: none).
        var releaseDue: Int64 = 0
    }

    private var buttons: [ButtonState] = []
    /// Whether the device showed a spurious release (the spurious method is on).
    private(set) var spuriousMethod = false

    init() { buttons.reserveCapacity(8) }

    /// The next time something falls due (nanoseconds), if anything waits.
    var nextDeadline: Int64? {
        var next: Int64?
        for state in buttons {
            for due in [state.bounceEnd, state.releaseDue] where due != 0 { next = min(next ?? due, due) }
        }
        return next
    }

    /// Passes on what `button` going down or up at `time` (nanoseconds) gives, after what
    /// fell due before it.
    mutating func process(_ button: ButtonEvent, at time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        flush(upTo: time, emit: emit)
        let index: Int
        if let found = buttons.firstIndex(where: { $0.button.code == button.code }) {
            index = found
        } else {
            buttons.append(ButtonState(button: button, physicallyDown: !button.isDown, reportedDown: !button.isDown))
            index = buttons.count - 1
        }
        var state = buttons[index]
        defer { buttons[index] = state }
        state.physicallyDown = button.isDown
        if button.isDown {
            if state.releaseDue != 0 {
                // A release and a press within the spurious timeout: both dropped.
                state.releaseDue = 0
                return
            }
            if state.bounceEnd != 0 {
                // A press soon after a release the button was held before: the release was
                // spurious (the press itself comes when the bounce time is up).
                if !state.reportedDown, time - state.releasedAt < Self.spuriousTimeout { spuriousMethod = true }
                return
            }
            guard !state.reportedDown else { return }
            state.reportedDown = true
            state.bounceEnd = time + Self.bounceTimeout
            emit(ButtonEvent(code: button.code, number: button.number, isDown: true), time)
        } else {
            guard state.bounceEnd == 0, state.releaseDue == 0, state.reportedDown else { return }
            if spuriousMethod {
                state.releaseDue = time + Self.spuriousTimeout
                return
            }
            state.reportedDown = false
            state.releasedAt = time
            state.bounceEnd = time + Self.bounceTimeout
            emit(ButtonEvent(code: button.code, number: button.number, isDown: false), time)
        }
    }

    /// Passes on what is due by `time` (nanoseconds), each at its due time.
    mutating func flush(upTo time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        while let next = nextDeadline, next <= time { flushOnce(upTo: next, emit: emit) }
    }

    private mutating func flushOnce(upTo time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        for index in buttons.indices {
            var state = buttons[index]
            guard (state.bounceEnd != 0 && state.bounceEnd <= time) || (state.releaseDue != 0 && state.releaseDue <= time) else {
                continue
            }
            if state.releaseDue != 0, state.releaseDue <= time {
                let due = state.releaseDue
                state.releaseDue = 0
                state.reportedDown = false
                state.releasedAt = due
                state.bounceEnd = due + Self.bounceTimeout
                emit(ButtonEvent(code: state.button.code, number: state.button.number, isDown: false), due)
            }
            if state.bounceEnd != 0, state.bounceEnd <= time {
                let due = state.bounceEnd
                state.bounceEnd = 0
                if state.physicallyDown != state.reportedDown {
                    // The bounce time is up with the switch in the other state: pass it on.
                    state.reportedDown = state.physicallyDown
                    if !state.reportedDown { state.releasedAt = due }
                    state.bounceEnd = due + Self.bounceTimeout
                    emit(ButtonEvent(code: state.button.code, number: state.button.number, isDown: state.reportedDown), due)
                }
            }
            buttons[index] = state
        }
    }
}
