import RingLoopEvdev

/// Middle-button emulation, as libinput offers it for devices without a middle button:
/// left and right pressed within ``timeout`` of each other give a middle press (`BTN_MIDDLE`),
/// released when either is; the other's release is dropped. A left or right press waits
/// up to ``timeout`` for the other: released or not joined by then, it is passed on late
/// (with its release, if that came).
struct MiddleButtonEmulation: Sendable {
    /// How long a left or right press waits for the other (ns).
    static let timeout: Int64 = 50_000_000

    private enum State {
        case idle
        /// A left or right press waiting for the other until `due`.
        case waiting(ButtonEvent, due: Int64)
        /// Both went down: the middle button is down until one goes up.
        case middleDown
        /// The middle button went up; the other release is still to come.
        case middleReleased
    }

    private var state = State.idle
    /// Left or right buttons passed on as themselves and still down.
    private var passedDown: Set<UInt16> = []

    /// The middle button as the decoder numbers it.
    static let middle = ButtonEvent(code: UInt16(Evdev.BTN_MIDDLE), number: 3, isDown: true)

    /// When the waiting press falls due (nanoseconds), if one waits.
    var nextDeadline: Int64? {
        if case .waiting(_, let due) = state { return due }
        return nil
    }

    private static func isLeftOrRight(_ code: UInt16) -> Bool { code == UInt16(Evdev.BTN_LEFT) || code == UInt16(Evdev.BTN_RIGHT) }

    /// Passes on what `button` at `time` gives.
    mutating func process(_ button: ButtonEvent, at time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        flush(upTo: time, emit: emit)
        guard Self.isLeftOrRight(button.code) else {
            // Another button: a waiting press goes first.
            if case .waiting(let held, _) = state {
                state = .idle
                passOn(held, at: time, emit: emit)
            }
            return emit(button, time)
        }
        switch state {
        case .idle:
            if button.isDown, passedDown.isEmpty {
                state = .waiting(button, due: time + Self.timeout)
            } else {
                passOn(button, at: time, emit: emit)
            }
        case .waiting(let held, _):
            if button.isDown, button.code != held.code {
                state = .middleDown
                var middle = Self.middle
                middle.isDown = true
                emit(middle, time)
            } else {
                // The waiting button went up (or repeated): a click of its own.
                state = .idle
                passOn(held, at: time, emit: emit)
                passOn(button, at: time, emit: emit)
            }
        case .middleDown:
            guard !button.isDown else { return }
            state = .middleReleased
            var middle = Self.middle
            middle.isDown = false
            emit(middle, time)
        case .middleReleased:
            if !button.isDown { state = .idle }
        }
    }

    /// Passes on a waiting press that is due by `time`.
    mutating func flush(upTo time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        guard case .waiting(let held, let due) = state, due <= time else { return }
        state = .idle
        passOn(held, at: due, emit: emit)
    }

    private mutating func passOn(_ button: ButtonEvent, at time: Int64, emit: (ButtonEvent, Int64) -> Void) {
        if button.isDown { passedDown.insert(button.code) } else { passedDown.remove(button.code) }
        emit(button, time)
    }
}
