import RingLoop
import RingLoopEvdev

// Disable-while-typing, and tapping: taps of one to three fingers, tap-and-drag, drag lock; claims by gesture recognizers.
extension TouchpadInterpreter {
    // MARK: Typing

    /// A key of a keyboard this touchpad pairs with went down (not a modifier): touches
    /// that begin in the next moments are ignored, and a tap under way is no tap.
    package mutating func keyTyped(at time: MonotonicInstant) {
        guard settings.disableWhileTyping else { return }
        let typing = time < typingUntil || time - lastKey < settings.longTypingTimeout
        lastKey = time
        typingUntil = time + (typing ? settings.longTypingTimeout : settings.typingTimeout)
        if case .touching = tap { tap = .dead }
    }

    // MARK: Tapping

    mutating func updateTap(fingers: Int, at time: MonotonicInstant, into out: inout [TouchpadAction]) {
        let moved = touches.contains { $0.isLive && $0.role == .finger && $0.movedBeyondTap }
        let busy = physicalButtons > 0 || clickButton != nil
        switch tap {
        case .idle:
            guard fingers > 0 else { return }
            tap = busy || fingers > 3 ? .dead : .touching(fingers: fingers, since: time)
        case .touching(let most, let since):
            if busy || moved || fingers > 3 {
                tap = .dead
            } else if fingers == 0 {
                finishTap(fingers: most, at: time, into: &out)
            } else if fingers > most {
                tap = .touching(fingers: fingers, since: since)
            }
        case .dead:
            if fingers == 0, !touches.contains(where: { $0.isLive }) { tap = .idle }
        case .tapped(let button, _):
            guard fingers > 0 else { return }
            tap = .dragOrDoubleTap(button: button, since: time)
        case .dragOrDoubleTap(let button, _):
            if fingers == 0 {
                // A double tap: the first click ends, the second begins.
                release(button, into: &out)
                press(button, into: &out)
                tap = .tapped(button: button, since: time)
            } else if moved || fingers > 1 {
                tap = .dragging(button: button)
            }
        case .dragging(let button):
            guard fingers == 0 else { return }
            if settings.dragLock {
                tap = .dragLockWait(button: button, since: time)
            } else {
                release(button, into: &out)
                tap = .idle
            }
        case .dragLockWait(let button, _):
            guard fingers > 0 else { return }
            tap = .dragLockTouch(button: button, since: time)
        case .dragLockTouch(let button, _):
            if fingers == 0 {
                // A tap ends the drag.
                release(button, into: &out)
                tap = .idle
            } else if moved {
                tap = .dragging(button: button)
            }
        }
    }

    mutating func finishTap(fingers: Int, at time: MonotonicInstant, into out: inout [TouchpadAction]) {
        guard let button = settings.tapButton(fingers: fingers) else {
            tap = .idle
            return
        }
        press(button, into: &out)
        if settings.tapAndDrag {
            // The button stays down for the tap timeout: a finger coming back drags. After
            // a tap of two or three fingers too, with their button ("Tap-and-drag":
            // dragging is always done with one finger, the tap's fingers choose the button;
            // libinput 1.22 on the booted kernel holds the Cypress pad's two- and
            // three-finger taps' buttons 107 ms).
            tap = .tapped(button: button, since: time)
        } else {
            release(button, into: &out)
            tap = .idle
        }
    }

    mutating func press(_ button: UInt16, into out: inout [TouchpadAction]) {
        heldTapButton = button
        out.append(.button(code: button, isDown: true, isTap: true))
    }

    mutating func release(_ button: UInt16, into out: inout [TouchpadAction]) {
        guard heldTapButton == button else { return }
        heldTapButton = nil
        out.append(.button(code: button, isDown: false, isTap: true))
    }

    // MARK: Gesture recognizers

    /// A gesture recognizer claimed the touch `id` (UIKit's rule: a recognized gesture's
    /// touches are cancelled for whatever else reads them): it moves and scrolls no more,
    /// a tap it was part of clicks no more, and a tap button of its sequence is released.
    package mutating func claim(_ id: Int32, into out: inout [TouchpadAction]) {
        if let index = touches.firstIndex(where: { $0.id == id }) { touches[index].role = .ignored }
        guard sequence.contains(id) || touches.isEmpty else { return }
        cancelTapAndScroll(into: &out)
    }

    /// A recognizer claimed a gesture on this pad (it began, or a discrete one was
    /// recognized): every touch down now, and the tap of the touches just lifted.
    package mutating func claimAll(into out: inout [TouchpadAction]) {
        for index in touches.indices { touches[index].role = .ignored }
        cancelTapAndScroll(into: &out)
    }

    private mutating func cancelTapAndScroll(into out: inout [TouchpadAction]) {
        switch tap {
        case .touching: tap = .dead
        case .tapped(let button, _), .dragOrDoubleTap(let button, _), .dragging(let button), .dragLockWait(let button, _),
            .dragLockTouch(let button, _):
            release(button, into: &out)
            tap = touches.contains { $0.isLive } ? .dead : .idle
        case .idle, .dead: break
        }
        if scrollSource != nil, !touches.contains(where: { $0.isLive && $0.role == .finger }) { stopScroll(into: &out) }
    }

    /// Whether the touches of the last tap (or the touches now down) include `id`.
    package func isInSequence(_ id: Int32) -> Bool { sequence.contains(id) }
}
