import RingLoop

/// Button debouncing as libinput's documentation describes it ("Button debouncing"),
/// for one device, with the details measured against libinput 1.22 on the booted kernel
/// (`kernel-check pointer/debounce`).
///
/// - The **bounce** method, always on: a change of a button's state is passed on at once,
///   and for ``bounceTimeout`` after it the button's further changes are taken for the
///   switch bouncing; when the time is up, a state that differs from the one passed on is
///   passed on then (a press–release–press gives one press; a release within the time
///   comes late, never lost).
/// - The **spurious** method, on from the first faulty sequence the device shows: a
///   release that the button's press follows within ``spuriousTimeout``, the button then
///   held (that first release and press are both passed on; a press 15 ms after did not
///   turn libinput's on). From then on a release waits
///   ``spuriousTimeout``, and a press within that time drops both; a release not followed
///   by a press is passed on when the time is up.
///
/// A change passed on late carries the time of the event that made it, as libinput's
/// does. Times are the kernel's timestamps of the events: ``process(_:at:emit:)`` passes
/// on what fell due before an event first, and ``flush(upTo:emit:)`` what is due by a
/// time (the stage calls it when its timer fires).
struct ButtonDebouncer: Sendable {
    /// How long after a change the button's further changes count as bouncing (ns).
    static let bounceTimeout: Int64 = 25_000_000
    /// How long a release waits for a press once spurious releases were seen (ns).
    static let spuriousTimeout: Int64 = 12_000_000

    private struct ButtonState {
        var button: ButtonEvent
        /// The switch's last state, as the kernel said, and when it changed (ns).
        var physicallyDown: Bool
        var physicalTime: Int64 = 0
        /// The state passed on.
        var reportedDown: Bool
        /// Changes until then are bouncing (ns; 0: none).
        var bounceEnd: Int64 = 0
        /// A release waiting for the spurious timeout: when it was (ns; 0: none).
        var releaseTime: Int64 = 0
        /// When the last release was passed on (ns).
        var releasedAt: Int64 = .min
    }

    private var buttons: [ButtonState] = []
    /// Whether the device showed a spurious release (the spurious method is on).
    private(set) var spuriousMethod = false

    init() { buttons.reserveCapacity(8) }

    /// The next time something falls due (nanoseconds), if anything waits.
    var nextDeadline: Int64? {
        var next: Int64?
        for state in buttons {
            if state.bounceEnd != 0 { next = min(next ?? state.bounceEnd, state.bounceEnd) }
            if state.releaseTime != 0 {
                let due = state.releaseTime + Self.spuriousTimeout
                next = min(next ?? due, due)
            }
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
        state.physicalTime = time
        // Within the bounce time: the state is looked at when it is up.
        guard state.bounceEnd == 0 else { return }
        if button.isDown {
            if state.releaseTime != 0 {
                // A release and a press within the spurious timeout: both dropped.
                state.releaseTime = 0
                return
            }
            guard !state.reportedDown else { return }
            state.reportedDown = true
            state.bounceEnd = time + Self.bounceTimeout
            emit(ButtonEvent(code: button.code, number: button.number, isDown: true), time)
        } else {
            guard state.reportedDown, state.releaseTime == 0 else { return }
            if spuriousMethod {
                state.releaseTime = time
                return
            }
            state.reportedDown = false
            state.releasedAt = time
            state.bounceEnd = time + Self.bounceTimeout
            emit(ButtonEvent(code: button.code, number: button.number, isDown: false), time)
        }
    }

    /// Passes on what is due by `time` (nanoseconds), each with the time of its event.
    mutating func flush(upTo time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        while let next = nextDeadline, next <= time { flushOnce(upTo: next, emit: emit) }
    }

    private mutating func flushOnce(upTo time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        for index in buttons.indices {
            var state = buttons[index]
            if state.releaseTime != 0, state.releaseTime + Self.spuriousTimeout <= time {
                // No press came back: the release was real.
                let due = state.releaseTime + Self.spuriousTimeout
                emit(ButtonEvent(code: state.button.code, number: state.button.number, isDown: false), state.releaseTime)
                state.releasedAt = state.releaseTime
                state.releaseTime = 0
                state.reportedDown = false
                state.bounceEnd = due + Self.bounceTimeout
            } else if state.bounceEnd != 0, state.bounceEnd <= time {
                let due = state.bounceEnd
                state.bounceEnd = 0
                if state.physicallyDown != state.reportedDown {
                    // The bounce time is up with the switch in the other state: pass it on.
                    // Down again soon after a release: that release was spurious.
                    if state.physicallyDown, state.physicalTime - state.releasedAt < Self.spuriousTimeout { spuriousMethod = true }
                    state.reportedDown = state.physicallyDown
                    state.bounceEnd = due + Self.bounceTimeout
                    emit(
                        ButtonEvent(code: state.button.code, number: state.button.number, isDown: state.reportedDown),
                        state.physicalTime)
                }
            }
            buttons[index] = state
        }
    }
}
