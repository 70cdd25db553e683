import RingLoop
import RingLoopEvdev

/// The gamepad layout stage (DESIGN.md §3a): beside each raw key, button or axis event of a
/// device that has an SDL mapping, the standard gamepad's events it makes
/// (``HIDEvent/Payload/gamepad(_:)``, SDL's control names), from ``GamepadLayout``.
///
/// A device's mapping is looked up once, the first time one of its events passes (or at
/// its `deviceAdded`), in the system's ``SDLMappingDatabase``. The raw event goes on first,
/// then what it made. When a device goes away, or the client loses the focus, every
/// control still held is released (buttons up, sticks centred) before the next event.
final class GamepadLayoutStage: HIDEventStage {
    /// The mappings devices are looked up in.
    let mappings: SDLMappingDatabase
    /// Each device's dead zones.
    let deadZones: (HIDDeviceInfo) -> GamepadDeadZones
    private var context: HIDStageContext?
    /// Each device's standard gamepad; `nil` once looked up without a mapping.
    private var layouts: [HIDDeviceID: GamepadLayout?] = [:]

    init(mappings: SDLMappingDatabase, deadZones: @escaping (HIDDeviceInfo) -> GamepadDeadZones) {
        self.mappings = mappings
        self.deadZones = deadZones
    }

    func install(in context: HIDStageContext) { self.context = context }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .gamepadButton(let button):
            emit(event)
            feed(event.device) { $0.process(button: button.code, isDown: button.isDown) { made(event, $0, emit) } }
        case .gamepadAxis(let axis):
            emit(event)
            feed(event.device) { $0.process(axis: axis.code, value: axis.value) { made(event, $0, emit) } }
        case .button(let button):
            emit(event)
            feed(event.device) { $0.process(button: button.code, isDown: button.isDown) { made(event, $0, emit) } }
        case .key(let key) where key.state != .repeat:
            emit(event)
            feed(event.device) { $0.process(button: key.code, isDown: key.state == .down) { made(event, $0, emit) } }
        case .axis(let axis) where axis.source == .absolute:
            emit(event)
            feed(event.device) { $0.process(axis: axis.code, value: axis.value) { made(event, $0, emit) } }
        case .deviceAdded:
            layouts[event.device] = nil
            emit(event)
            feed(event.device) { _ in }
        case .deviceRemoved:
            if let held = layouts.removeValue(forKey: event.device), var layout = held {
                layout.reset { made(event, $0, emit) }
            }
            emit(event)
        default:
            emit(event)
        }
    }

    func focusChanged(isFocused: Bool, emit: (HIDEvent) -> Void) {
        guard !isFocused else { return }
        let now = MonotonicInstant.now
        for id in Array(layouts.keys) {
            let origin = HIDEvent(device: id, timestamp: now, payload: .focusChanged(isFocused: false))
            feed(id) { $0.reset { made(origin, $0, emit) } }
        }
    }

    func remove(emit: (HIDEvent) -> Void) {
        layouts = [:]
        context = nil
    }

    /// Runs `body` on the device's standard gamepad, in place (processing copies
    /// nothing); looks the device's mapping up the first time.
    private func feed(_ id: HIDDeviceID, _ body: (inout GamepadLayout) -> Void) {
        if layouts[id] == nil {
            guard let device = context?.device(id) else { return }
            layouts[id] = .some(
                mappings.match(for: device).map { GamepadLayout(device: device, mapping: $0.mapping, deadZones: deadZones(device)) })
        }
        guard case .some(.some) = layouts[id] else { return }
        body(&layouts[id]!!)
    }
}

/// A standard gamepad event made from `origin` (its device and time).
private func made(_ origin: HIDEvent, _ gamepad: GamepadEvent, _ emit: (HIDEvent) -> Void) {
    emit(HIDEvent(device: origin.device, timestamp: origin.timestamp, payload: .gamepad(gamepad)))
}

extension HIDEventSystem {
    /// Adds the gamepad layout stage: beside the raw events of every device with an SDL
    /// mapping in `mappings` (by default SDL_GameControllerDB's bundled lines and SDL's
    /// environment variables), the standard gamepad's events (``HIDEvent/Kind/gamepad``,
    /// SDL's control names, values after `deadZones`, the raw value beside). In an event
    /// server the clients get both. Client loop thread; before or after ``start()``;
    /// calling it again replaces the mappings.
    public func addGamepadLayout(
        mappings: SDLMappingDatabase = .bundledWithEnvironment(), deadZones: GamepadDeadZones = .fromDevice
    ) {
        addGamepadLayout(mappings: mappings, deadZonesOf: { _ in deadZones })
    }

    /// Adds the gamepad layout stage with dead zones chosen per device (by its
    /// ``HIDDeviceInfo/sdlGUID``, name or ids), asked once, when the device's mapping is
    /// looked up. See ``addGamepadLayout(mappings:deadZones:)``.
    public func addGamepadLayout(
        mappings: SDLMappingDatabase = .bundledWithEnvironment(),
        deadZonesOf deadZones: @escaping (HIDDeviceInfo) -> GamepadDeadZones
    ) {
        loop.preconditionOnLoopThread("HIDEventSystem.addGamepadLayout")
        pipeline.gamepadLayout = GamepadLayoutStage(mappings: mappings, deadZones: deadZones)
        pipeline.stagesChanged()
    }
}

extension SDLMappingDatabase {
    /// The bundled lines with what SDL's environment variables add
    /// (``addEnvironment(_:)``); problems in a variable's lines are left out.
    public static func bundledWithEnvironment() -> SDLMappingDatabase {
        var database = SDLMappingDatabase.bundled()
        _ = database.addEnvironment()
        return database
    }
}
