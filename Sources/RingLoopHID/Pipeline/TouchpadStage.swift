import RingLoop
import RingLoopEvdev

/// The touchpad stage (DESIGN.md §3a: before the pointer, so that its motion gets the
/// pointer's cursor and acceleration): turns each touchpad's frames into pointer motion,
/// button and scroll events by a ``TouchpadInterpreter`` per device — tapping, a clickpad's
/// software buttons or clickfinger, palm rejection, disable-while-typing, two-finger and
/// edge scrolling. The frames themselves go on, for recognizers and handlers.
///
/// Beside gesture recognizers it keeps UIKit's rule: touches a recognizer claims (one that
/// begins with ``GestureRecognizer/cancelsTouchesInHandlers``) move and scroll no more, and
/// a tap is a click only where no recognizer claimed it. While recognizers are attached,
/// what the stage makes of a pass's frames waits until the gesture stage has evaluated
/// them at BeforeWaiting, so a claim comes before the click it cancels. Present only while
/// the system has touchpad settings (``HIDEventSystem/setTouchpadSettings(_:)``).
///
/// Its events carry the time of what made them, never the clock's time as they go out:
/// the frame's (motion, a tap's press, a click, scrolling), the due time of a timeout (a
/// tap's button released after the tap timeout, a drag lock's end), the pad's latest
/// frame for what a recognizer's claim, new settings or the pad's removal releases — and
/// never earlier than the pad's previous event, so that each pad's pointer events are in
/// order of time, with recognizers too (which hold them to the pass's evaluation).
final class TouchpadStage: HIDEventStage {
    private struct Pad {
        var device: HIDDeviceID
        var interpreter: TouchpadInterpreter
        var isBuiltIn: Bool
        /// Actions waiting for the recognizers' evaluation, each with the time of the frame
        /// that made it (a motion keeps it: the pointer's acceleration measures velocity).
        var held: [(action: TouchpadAction, time: MonotonicInstant)] = []
        /// Buttons whose press went out (a release of any other is dropped).
        var buttonsDown: [UInt16] = []
        /// The stamp of the pad's latest frame.
        var latestFrame: MonotonicInstant?
        /// The stamp of the pad's latest event passed on (motion, button, scroll).
        var latestStamp: MonotonicInstant?
        /// Whether a scroll sequence is under way (its next event is `changed`).
        var isScrolling = false
        /// Device-unit motion not yet passed on as whole units.
        var remainderX = 0.0
        var remainderY = 0.0
    }

    private enum DeviceKind { case touchpad, builtInKeyboard, other }

    private(set) var settings: TouchpadSettings
    private var context: HIDStageContext?
    private var pads: [Pad] = []
    private var kinds: [(HIDDeviceID, DeviceKind)] = []
    private var actions: [TouchpadAction] = []
    private var wakeUp: StageWakeUpTimer?
    /// The last key typed on a built-in keyboard, for touchpads that attach after it.
    private var lastKeyTyped: MonotonicInstant?

    init(settings: TouchpadSettings) {
        self.settings = settings
        actions.reserveCapacity(32)
    }

    /// Takes new settings: each touchpad starts again with them (what it held is released).
    func update(_ settings: TouchpadSettings, emit: (HIDEvent) -> Void) {
        self.settings = settings
        releaseAll(emit: emit)
        pads.removeAll()
    }

    func install(in context: HIDStageContext) {
        self.context = context
        wakeUp = StageWakeUpTimer(loop: context.loop)
    }

    /// Whether the pass's actions wait for the gesture stage (recognizers are attached).
    private var holdsForRecognizers: Bool { context?.system.pipeline.gestures != nil }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .digitizer(let frame):
            emit(event)
            guard let index = pad(for: event.device) else { return }
            pads[index].latestFrame = event.timestamp
            // Timeouts that ran out before this frame: what each releases, at its time.
            advanceDeadlines(index, upTo: event.timestamp)
            actions.removeAll(keepingCapacity: true)
            pads[index].interpreter.process(frame, at: event.timestamp, into: &actions)
            deliver(index, at: event.timestamp, emit: emit)
        case .button(let button):
            guard let index = pad(for: event.device) else { return emit(event) }
            // A clickpad's click is the interpreter's to name (software buttons, clickfinger),
            // and it has no other button: libinput 1.22 shows none of the BTN_RIGHT a Cypress
            // clickpad's driver reports (kernel-check, libinput/touchpad).
            if pads[index].interpreter.isClickpad { return }
            pads[index].interpreter.physicalButton(isDown: button.isDown, at: event.timestamp)
            emit(event)
        case .key(let key):
            emit(event)
            guard key.state == .down, settings.disableWhileTyping, !Self.isModifier(key.code),
                key.modifiers.isDisjoint(with: Self.shortcutModifiers), kind(of: event.device) == .builtInKeyboard
            else { return }
            lastKeyTyped = event.timestamp
            // (Typing makes no action: it only keeps the next touches from tapping.)
            for index in pads.indices where pads[index].isBuiltIn { pads[index].interpreter.keyTyped(at: event.timestamp) }
        case .deviceAdded:
            // A touchpad's interpreter from its arrival, so that keys typed before its first
            // touch count.
            _ = pad(for: event.device)
            emit(event)
        case .deviceRemoved:
            if let index = pads.firstIndex(where: { $0.device == event.device }) {
                actions.removeAll(keepingCapacity: true)
                pads[index].interpreter.reset(into: &actions)
                hold(index, at: event.timestamp)
                flush(index, emit: emit)
                pads.remove(at: index)
            }
            kinds.removeAll { $0.0 == event.device }
            emit(event)
        default:
            emit(event)
        }
    }

    /// Deadlines that passed (a tap's release, a drag lock's end), stamped with the time
    /// each was due, then, without recognizers, what waits goes on.
    func beforeWaiting(emit: (HIDEvent) -> Void) {
        let now = MonotonicInstant.now
        var earliest: MonotonicInstant?
        for index in pads.indices {
            advanceDeadlines(index, upTo: now)
            actions.removeAll(keepingCapacity: true)
            deliver(index, at: now, emit: emit)
            if let deadline = pads[index].interpreter.nextDeadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        wakeUp?.arm(at: earliest)
    }

    func remove(emit: (HIDEvent) -> Void) {
        releaseAll(emit: emit)
        pads.removeAll()
        kinds.removeAll()
        wakeUp?.invalidate()
        wakeUp = nil
        context = nil
    }

    // MARK: Beside the recognizers

    /// A recognizer claimed the touch `id` of `device` (the gesture stage takes it back):
    /// its tap, if not gone out yet, never clicks; a tap button it holds is released.
    func touchClaimed(device: HIDDeviceID, id: Int32) {
        guard let index = pads.firstIndex(where: { $0.device == device }) else { return }
        if pads[index].interpreter.isInSequence(id) {
            pads[index].held.removeAll {
                if case .button(_, _, true) = $0.action { return true }
                return false
            }
        }
        actions.removeAll(keepingCapacity: true)
        pads[index].interpreter.claim(id, into: &actions)
        hold(index, at: latestTime(of: index))
    }

    /// A recognizer that cancels touches in handlers began (or, discrete, was recognized) on
    /// `device`: the touches down and the tap just made are its, not the pointer's.
    func gestureClaimed(device: HIDDeviceID) {
        guard let index = pads.firstIndex(where: { $0.device == device }) else { return }
        pads[index].held.removeAll {
            if case .button(_, _, true) = $0.action { return true }
            return false
        }
        actions.removeAll(keepingCapacity: true)
        pads[index].interpreter.claimAll(into: &actions)
        hold(index, at: latestTime(of: index))
    }

    /// The gesture stage evaluated the pass: what the touchpads made of it goes on.
    func gesturesEvaluated() {
        guard let context else { return }
        for index in pads.indices where !pads[index].held.isEmpty {
            flush(index) { context.emit($0, after: self) }
        }
    }

    // MARK: Events

    /// Keeps ``actions``, made at `time`; without recognizers, passes on what the pad
    /// holds.
    private func deliver(_ index: Int, at time: MonotonicInstant, emit: (HIDEvent) -> Void) {
        hold(index, at: time)
        if !holdsForRecognizers, !pads[index].held.isEmpty { flush(index, emit: emit) }
    }

    /// The time of the pad's latest frame or event: what releases without input of its
    /// own (a claim, new settings) is stamped with it.
    private func latestTime(of index: Int) -> MonotonicInstant {
        switch (pads[index].latestFrame, pads[index].latestStamp) {
        case (let frame?, let stamp?): max(frame, stamp)
        case (let frame?, nil): frame
        case (nil, let stamp?): stamp
        case (nil, nil): .now
        }
    }

    /// Lets the pad's timeouts run out up to `limit`, one deadline at a time, and keeps
    /// what each releases at its own due time (a tap's release, then a drag lock's end,
    /// would otherwise share the first one's).
    private func advanceDeadlines(_ index: Int, upTo limit: MonotonicInstant) {
        while let due = pads[index].interpreter.nextDeadline, due <= limit {
            actions.removeAll(keepingCapacity: true)
            pads[index].interpreter.advance(to: due, into: &actions)
            hold(index, at: due)
            // (advance(to:) moves past a deadline it reaches: guard against one it keeps.)
            if pads[index].interpreter.nextDeadline == due { break }
        }
    }

    /// Keeps ``actions``, made at `time`, until the pad's next flush.
    private func hold(_ index: Int, at time: MonotonicInstant) {
        for action in actions { pads[index].held.append((action, time)) }
    }

    /// Passes on what the pad holds, each at the time it was made (no earlier than the
    /// pad's previous event).
    private func flush(_ index: Int, emit: (HIDEvent) -> Void) {
        let device = pads[index].device
        for (action, made) in pads[index].held {
            let madeAt = max(made, pads[index].latestStamp ?? made)
            pads[index].latestStamp = madeAt
            switch action {
            case .motion(let dx, let dy, let deviceDX, let deviceDY):
                // The raw deltas in the pad's own units, whole (the rest carried to the next
                // motion); the normalized ones (1000 dpi) as the unaccelerated deltas, which
                // the pointer stage, where present (here or in an event server's client),
                // accelerates by the touchpad curve, and as the accelerated ones until it does.
                let x = pads[index].remainderX + deviceDX
                let y = pads[index].remainderY + deviceDY
                let wholeX = x.rounded(.towardZero)
                let wholeY = y.rounded(.towardZero)
                pads[index].remainderX = x - wholeX
                pads[index].remainderY = y - wholeY
                let motion = PointerMotionEvent(
                    dx: Int32(wholeX), dy: Int32(wholeY), acceleratedDX: dx, acceleratedDY: dy, unacceleratedDX: dx, unacceleratedDY: dy)
                // At its frame's time, even after waiting for the recognizers: the pointer
                // stage's acceleration measures the velocity by it.
                emit(HIDEvent(device: device, timestamp: madeAt, payload: .pointerMotion(motion)))
            case .button(let code, let isDown, _):
                if isDown {
                    pads[index].buttonsDown.append(code)
                } else {
                    guard let held = pads[index].buttonsDown.firstIndex(of: code) else { continue }
                    pads[index].buttonsDown.remove(at: held)
                }
                let button = ButtonEvent(code: code, number: FrameDecoder.buttonNumber(code), isDown: isDown)
                emit(HIDEvent(device: device, timestamp: madeAt, payload: .button(button)))
            case .scroll(let horizontal, let vertical, let source, let isStop):
                // In the pointer's pixels, positive up (ScrollEvent's sense); a sequence
                // begins, changes, and ends with libinput's axis stop.
                let phase: ScrollEvent.Phase = isStop ? .ended : pads[index].isScrolling ? .changed : .began
                pads[index].isScrolling = !isStop
                let scroll = ScrollEvent(
                    vertical: vertical == 0 ? 0 : -vertical, horizontal: horizontal, source: source == .edge ? .edge : .finger,
                    phase: phase)
                emit(HIDEvent(device: device, timestamp: madeAt, payload: .scroll(scroll)))
            }
        }
        pads[index].held.removeAll(keepingCapacity: true)
    }

    private func releaseAll(emit: (HIDEvent) -> Void) {
        for index in pads.indices {
            actions.removeAll(keepingCapacity: true)
            pads[index].interpreter.reset(into: &actions)
            hold(index, at: latestTime(of: index))
            flush(index, emit: emit)
        }
    }

    // MARK: Devices

    private func pad(for device: HIDDeviceID) -> Int? {
        for index in pads.indices where pads[index].device == device { return index }
        guard kind(of: device) == .touchpad, let info = context?.device(device) else { return nil }
        var interpreter = TouchpadInterpreter(device: info, settings: settings)
        let isBuiltIn = Self.isBuiltIn(info)
        if let lastKeyTyped, isBuiltIn { interpreter.keyTyped(at: lastKeyTyped) }
        pads.append(Pad(device: device, interpreter: interpreter, isBuiltIn: isBuiltIn))
        pads[pads.count - 1].held.reserveCapacity(32)
        return pads.count - 1
    }

    private func kind(of device: HIDDeviceID) -> DeviceKind {
        for (id, kind) in kinds where id == device { return kind }
        var kind = DeviceKind.other
        if let info = context?.device(device) {
            if info.deviceClass == .touchpad {
                kind = .touchpad
            } else if info.roles.contains(.keyboard), info.busType == Evdev.BUS_I8042 {
                kind = .builtInKeyboard
            }
        }
        kinds.append((device, kind))
        return kind
    }

    /// A touchpad inside the machine: not on USB or Bluetooth (libinput pairs those with
    /// no keyboard for disable-while-typing).
    static func isBuiltIn(_ info: HIDDeviceInfo) -> Bool {
        info.busType != Evdev.BUS_USB && info.busType != Evdev.BUS_BLUETOOTH
    }

    static func isModifier(_ code: UInt16) -> Bool {
        switch code {
        case Evdev.KEY_LEFTCTRL, Evdev.KEY_RIGHTCTRL, Evdev.KEY_LEFTSHIFT, Evdev.KEY_RIGHTSHIFT, Evdev.KEY_LEFTALT,
            Evdev.KEY_RIGHTALT, Evdev.KEY_LEFTMETA, Evdev.KEY_RIGHTMETA, Evdev.KEY_CAPSLOCK, Evdev.KEY_FN:
            true
        default: false
        }
    }

    /// Modifiers that make a key a shortcut rather than typing.
    static let shortcutModifiers: KeyModifiers = [.control, .leftAlt, .rightAlt, .leftMeta, .rightMeta]
}

extension HIDEventSystem {
    /// Makes touchpads pointers from now on (the touchpad stage): taps click, a clickpad's
    /// click presses the button its software areas or fingers choose, two fingers or an
    /// edge scroll, palms and touches while typing are ignored, one finger moves the
    /// pointer — each by `settings` (libinput's options). Touchpads' frames still reach
    /// recognizers and handlers. `nil` takes the stage out. Set again, every touchpad starts
    /// over with the new settings (what it held is released). Client loop thread; before
    /// or after ``start()``.
    ///
    /// The pointer events a touchpad makes carry the time of what made them, on the
    /// touchpad's own clock, never the time they are passed on: a frame's time for its
    /// motion, a tap's press, a click and scrolling (also when recognizers hold them until
    /// the pass is evaluated); the time a timeout was due for what it releases (a tap's
    /// button up ``TouchpadSettings/tapTimeout`` after the tap, a drag lock's end); the
    /// touchpad's latest frame for what a recognizer's claim or new settings release. Each
    /// touchpad's pointer events are in order of time: none is stamped earlier than the one
    /// before it.
    ///
    /// A client of an event server whose server makes its touchpads pointers gets their
    /// pointer events from the server, with the frames: a touchpad stage here would make
    /// pointer events of the same touches a second time. Give the server the touchpad
    /// settings; the client's ``setPointer(_:)`` accelerates their motion by its own
    /// settings, from the unaccelerated deltas the server's touchpad stage filled in.
    public func setTouchpadSettings(_ settings: TouchpadSettings?) {
        loop.preconditionOnLoopThread("HIDEventSystem.setTouchpadSettings")
        guard let settings else {
            if let stage = pipeline.touchpad { pipeline.remove(stage) }
            return
        }
        if let stage = pipeline.touchpad {
            stage.update(settings) { pipeline.emit($0, after: stage) }
            return
        }
        pipeline.touchpad = TouchpadStage(settings: settings)
        pipeline.stagesChanged()
    }

    /// The touchpad settings the touchpad stage works by, if it is present.
    public var touchpadSettings: TouchpadSettings? { pipeline.touchpad?.settings }
}
