import Logging
import RingLoop

/// The pointer stage (DESIGN.md §3a: after the screen mapping, before the gamepad layout):
/// every relative device's motion accelerated by its profile and moving one cursor over
/// the screens, its wheels turned (natural scrolling) and scaled, its buttons debounced
/// and the middle button emulated where asked (``PointerProcessor``); each device by the
/// system's ``PointerSettings`` with its own settings on top (the per-device settings file
/// of ``HIDEventSystem/setScreens(_:)``, udev's `MOUSE_DPI`). Present while the system's
/// configuration has ``HIDEventSystem/Configuration/pointer`` (or ``HIDEventSystem/setPointer(_:)``
/// gave it).
///
/// Held buttons (debouncing waits up to 25 ms, middle-button emulation 50 ms) are passed
/// on when a later event of their device comes or at BeforeWaiting once due, a timer
/// waking the loop for them.
final class PointerStage: HIDEventStage {
    static let logger = Logger(label: "RingLoop.HID.pointer")

    private(set) var processor: PointerProcessor
    private var context: HIDStageContext?
    private var wakeUp: StageWakeUpTimer?
    /// What the processor made of an event, passed on once it is done: a handler may warp
    /// the cursor (changing the processor) while an event is passed on.
    private var made: [HIDEvent] = []

    init(defaults: PointerSettings) {
        processor = PointerProcessor(defaults: defaults)
        made.reserveCapacity(8)
    }

    func install(in context: HIDStageContext) {
        self.context = context
        wakeUp = StageWakeUpTimer(loop: context.loop)
        settingsChanged()
    }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        if case .pointerMotion(let motion) = event.payload, !processor.hasDueButtons(at: event.timestamp) {
            // The common case, without the list: the processor's access ends before the
            // event is passed on.
            let moved = processor.moved(event, motion)
            return emit(moved)
        }
        if case .deviceAdded = event.payload, let device = context?.device(event.device) { configure(device) }
        made.removeAll(keepingCapacity: true)
        processor.process(event) { made.append($0) }
        if case .button = event.payload { wakeUp?.arm(at: deadline) }
        passOn(emit)
    }

    func beforeWaiting(emit: (HIDEvent) -> Void) {
        guard processor.nextDeadline != nil else { return }
        made.removeAll(keepingCapacity: true)
        processor.flush(upTo: Int64(clamping: MonotonicInstant.now.nanoseconds)) { made.append($0) }
        wakeUp?.arm(at: deadline)
        passOn(emit)
    }

    func remove(emit: (HIDEvent) -> Void) {
        made.removeAll(keepingCapacity: true)
        processor.flush(upTo: .max) { made.append($0) }
        passOn(emit)
        processor.removeAll()
        wakeUp?.invalidate()
        wakeUp = nil
        context = nil
    }

    /// Passes on what the processor made (the one event of a motion without a copy of the list).
    private func passOn(_ emit: (HIDEvent) -> Void) {
        if made.count == 1 { return emit(made[0]) }
        for event in made { emit(event) }
    }

    /// What every device gets unless its own settings say otherwise.
    var defaults: PointerSettings { processor.defaults }

    private var deadline: MonotonicInstant? { processor.nextDeadline.map { MonotonicInstant(nanoseconds: UInt64(max(0, $0))) } }

    /// Takes new defaults: every attached device is configured again.
    func update(_ defaults: PointerSettings) {
        processor.defaults = defaults
        settingsChanged()
    }

    /// The screens or the settings files changed: the cursor's screens and every attached
    /// device's settings are worked out again.
    func settingsChanged() {
        guard let context else { return }
        processor.setScreens(context.system.screens?.allScreens ?? [])
        for device in context.system.devices { configure(device) }
    }

    /// Takes `screens` for the cursor without a system (the benchmark).
    func setScreensForMeasurement(_ screens: [ScreenDescription]) { processor.setScreens(screens) }

    /// Takes `device` for a touchpad with the defaults, without a system (the benchmark).
    func setTouchpadForMeasurement(_ device: HIDDeviceID) { processor.setDevice(device, settings: defaults, isTouchpad: true) }

    /// The cursor, `nil` without screens.
    var cursor: PointerCursor? { processor.cursor }

    func warpCursor(to location: ScreenPoint, screen: Int) -> Bool { processor.warpCursor(to: location, screen: screen) }

    /// The settings `device` is processed by.
    func settings(of device: HIDDeviceID) -> PointerSettings { processor.settings(of: device) }

    private func configure(_ device: HIDDeviceInfo) {
        guard let attachment = context?.attachment(of: device) else { return }
        let (settings, problems) = defaults.applying(attachment.settings, udevProperties: attachment.identity.properties)
        for problem in problems { Self.logger.warning("\(device.name): \(problem)") }
        processor.setDevice(device.id, settings: settings, isTouchpad: device.deviceClass == .touchpad)
    }
}

extension HIDEventSystem {
    /// Gives relative devices a pointer from now on: acceleration, a cursor over the
    /// screens (``setScreens(_:)``), natural scrolling and a scroll factor, button
    /// debouncing and middle-button emulation, by `settings` with each device's own on top
    /// (the per-device settings file, udev's `MOUSE_DPI`); `nil` takes the stage out (motion
    /// passes raw, with no cursor). Client loop thread; before or after ``start()``.
    ///
    /// A client of an event server
    /// (``HIDEventSystem/Configuration/init(server:namespace:trusting:clientName:subscribedKinds:subscribedDeviceClasses:requestsFocus:queueCapacity:)``)
    /// gets the events its server's stages made: where the server has the pointer stage,
    /// its motion comes accelerated and its scrolling scaled by the server's settings. A
    /// stage here makes them again from what the devices reported, never from what the
    /// server made of it: a mouse's raw counts, a touchpad's unaccelerated deltas
    /// (``PointerMotionEvent/unacceleratedDX``, which the server's touchpad stage filled),
    /// the unscaled scrolling (``ScrollEvent/unscaledVertical``). Each motion is
    /// accelerated once and each scroll scaled once, by this system's settings in place of
    /// the server's, whether or not the server had a pointer stage. Buttons go through this
    /// system's debouncing and middle-button emulation as well, after the server's
    /// (``PointerSettings/debounce`` off leaves them as the server passed them on).
    /// - Parameter settings: What every relative device gets unless its own settings say otherwise.
    public func setPointer(_ settings: PointerSettings?) {
        loop.preconditionOnLoopThread("HIDEventSystem.setPointer")
        guard let settings else {
            if let stage = pipeline.pointer { pipeline.remove(stage) }
            return
        }
        if let stage = pipeline.pointer { return stage.update(settings) }
        pipeline.pointer = PointerStage(defaults: settings)
        pipeline.stagesChanged()
    }

    /// The pointer's settings for every device, if the pointer stage is present.
    public var pointerSettings: PointerSettings? { pipeline.pointer?.defaults }

    /// The settings `device`'s pointer events are made by (its own on top of the system's),
    /// if the pointer stage is present.
    public func pointerSettings(for device: HIDDeviceID) -> PointerSettings? { pipeline.pointer?.settings(of: device) }

    /// Where the cursor is: a location in a screen's pixels and which screen; `nil` without
    /// the pointer stage or without screens.
    public var cursor: PointerCursor? { pipeline.pointer?.cursor }

    /// Puts the cursor at `location` on the layout's screen number `screen` (clamped to that
    /// screen); the next motion moves it from there. Client loop thread.
    /// - Parameters:
    ///   - location: The location in the screen's pixels.
    ///   - screen: The screen's index in ``DeviceSettingsResolver/allScreens`` of ``screens``.
    /// - Returns: Whether the cursor moved: `false` without the pointer stage, without
    ///   screens, or for a screen that is not there.
    @discardableResult
    public func warpCursor(to location: ScreenPoint, screen: Int = 0) -> Bool {
        loop.preconditionOnLoopThread("HIDEventSystem.warpCursor")
        return pipeline.pointer?.warpCursor(to: location, screen: screen) ?? false
    }
}
