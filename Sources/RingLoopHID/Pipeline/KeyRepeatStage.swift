import RingLoop

/// Key repeat by loop timers on the client loop, in place of the kernel's (for devices
/// without it, and for one delay and rate across every keyboard): the kernel's repeats
/// are dropped, and a key held down repeats after the delay at the interval until it goes
/// up, its device goes away or the client loses the focus. Modifiers do not repeat; a
/// modifier that changes while a key repeats changes the later repeats. A key the keymap
/// says does not repeat (`xkb_keymap_key_repeats`: Caps Lock, Num Lock) starts no repeat:
/// the keymap stage's keymap when the system has one, else the system's own keyboard
/// configuration compiled once, at the first key press (none where xkb-data is missing:
/// then only modifiers are left out).
final class KeyRepeatStage: HIDEventStage {
    let delay: Duration
    let interval: Duration
    /// The keymap whose repeat flags count when the system has no keymap stage
    /// (compiled at the first key press; `.some(nil)`: it could not be).
    private var ownKeymap: Keymap??
    private var context: HIDStageContext?
    private var timer: LoopTimer?
    private(set) var repeating: (device: HIDDeviceID, key: KeyEvent)?

    init(delay: Duration, interval: Duration) {
        self.delay = delay
        self.interval = interval
    }

    func install(in context: HIDStageContext) { self.context = context }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .key(let key):
            if key.state == .repeat { return }
            if key.state == .down, KeyModifiers.forLinuxKey(key.code) == nil, keymapRepeats(key.code) {
                start(device: event.device, key: key)
            } else if key.state == .up, repeating?.device == event.device, repeating?.key.code == key.code {
                stop()
            } else if let current = repeating, current.device == event.device {
                // A modifier changed: later repeats carry the new modifiers.
                var updated = current.key
                updated.modifiers = key.modifiers
                repeating = (current.device, updated)
            }
        case .deviceRemoved:
            if repeating?.device == event.device { stop() }
        default:
            break
        }
        emit(event)
    }

    func focusChanged(isFocused: Bool, emit: (HIDEvent) -> Void) {
        if !isFocused { stop() }
    }

    func remove(emit: (HIDEvent) -> Void) {
        stop()
        context = nil
    }

    /// Whether the keymap lets `code` repeat (`true` without any keymap).
    private func keymapRepeats(_ code: UInt16) -> Bool {
        if let stage = context?.system.pipeline.keymap { return stage.keyboard.keymap.repeats(code: code) }
        if ownKeymap == nil {
            ownKeymap = .some(try? Keymap(configuration: KeyboardConfiguration.resolve()))
        }
        return ownKeymap??.repeats(code: code) ?? true
    }

    private func start(device: HIDDeviceID, key: KeyEvent) {
        stop()
        guard let context else { return }
        repeating = (device, key)
        let stage = UnownedLoopReference(self, loop: context.loop)
        let timer = LoopTimer(after: delay, repeating: interval) { _ in stage.value.fire() }
        self.timer = timer
        context.loop.add(timer, to: .common)
    }

    private func fire() {
        guard let context, let (device, key) = repeating else { return }
        var repeated = key
        repeated.state = .repeat
        context.emit(HIDEvent(device: device, timestamp: .now, payload: .key(repeated)), after: self)
    }

    private func stop() {
        timer?.invalidate()
        timer = nil
        repeating = nil
    }
}
