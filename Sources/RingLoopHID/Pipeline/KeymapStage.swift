import Logging
import RingLoop
import RingLoopEvdev

/// The keymap stage (DESIGN.md §3a), the first that gives events their meaning, right after
/// key repeat (so the chain's own repeats are read with the state when they fire):
/// each key event gets its keysym, its UTF-8 text and the keymap's modifiers (locks,
/// latches, the layout in effect) from one ``KeyboardState`` for the system's seat, and
/// the keyboards' lock LEDs follow the state.
///
/// A repeat of a key the keymap says does not repeat (a modifier, a lock) is consumed here.
/// A device that goes away releases the keys it held; the focus going away ends a compose
/// sequence and clears latches. Set with ``HIDEventSystem/setKeymap(_:composeTable:controlsLEDs:)``.
final class KeymapStage: HIDEventStage {
    let keyboard: KeyboardState
    /// Whether the stage writes the keyboards' lock LEDs.
    let controlsLEDs: Bool
    private var context: HIDStageContext?
    /// The keys each device holds down, released when it goes away.
    private var held: [HIDDeviceID: Set<UInt16>] = [:]
    private static let logger = Logger(label: "RingLoop.HID.keymap")

    init(keymap: Keymap, composeTable: ComposeTable?, controlsLEDs: Bool) {
        keyboard = KeyboardState(keymap: keymap, composeTable: composeTable)
        self.controlsLEDs = controlsLEDs
    }

    func install(in context: HIDStageContext) {
        self.context = context
        // The keyboards attached now show the state's locks.
        writeLEDs(keyboard.leds, device: nil)
    }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .key(var key):
            let result = keyboard.apply(to: &key)
            if result.isIgnoredRepeat { return }
            switch key.state {
            case .down: held[event.device, default: []].insert(key.code)
            case .up: held[event.device]?.remove(key.code)
            case .repeat: break
            }
            var interpreted = event
            interpreted.payload = .key(key)
            emit(interpreted)
            if result.ledsChanged { writeLEDs(result.leds, device: nil) }
        case .deviceAdded:
            emit(event)
            writeLEDs(keyboard.leds, device: event.device)
        case .deviceRemoved:
            // Its held keys go up in the seat's state (Shift held on a keyboard unplugged).
            let before = keyboard.leds
            for code in held.removeValue(forKey: event.device) ?? [] { _ = keyboard.process(code: code, state: .up) }
            emit(event)
            if keyboard.leds != before { writeLEDs(keyboard.leds, device: nil) }
        default:
            emit(event)
        }
    }

    func focusChanged(isFocused: Bool, emit: (HIDEvent) -> Void) {
        if !isFocused { keyboard.cancelComposeAndLatches() }
    }

    func remove(emit: (HIDEvent) -> Void) {
        context = nil
    }

    /// Writes `leds` (Num, Caps, Scroll Lock) to `device`, or to every keyboard with lock
    /// LEDs. A keyboard that refuses is logged, not retried.
    private func writeLEDs(_ leds: KeyboardLEDs, device: HIDDeviceID?) {
        guard controlsLEDs, let context else { return }
        let system = context.system
        let targets = device.map { id in system.device(id).map { [$0] } ?? [] } ?? system.devices
        let lights: [(UInt16, KeyboardLEDs)] = [(Evdev.LED_NUML, .numLock), (Evdev.LED_CAPSL, .capsLock), (Evdev.LED_SCROLLL, .scrollLock)]
        for info in targets where !info.leds.isEmpty {
            for (code, led) in lights where info.leds.contains(code) {
                do {
                    try system.setLED(code, on: leds.contains(led), device: info.id)
                } catch {
                    Self.logger.debug("keymap: cannot set \(Evdev.shownName(ofCode: code, type: Evdev.EV_LED)) of \(info.name): \(error)")
                }
            }
        }
    }
}
