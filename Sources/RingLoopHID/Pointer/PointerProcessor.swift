import RingLoop

/// One relative device's acceleration state: its settings and its velocity trackers.
struct PointerAccelerator: Sendable {
    let acceleration: PointerAcceleration
    /// The adaptive profile's normalization: 1000 over the device's dpi.
    let normalization: Double
    private var velocity = PointerVelocity()
    private var previousVelocity = 0.0

    init(_ acceleration: PointerAcceleration, dotsPerInch: Int = PointerSettings.defaultDotsPerInch) {
        self.acceleration = acceleration
        normalization = Double(PointerSettings.defaultDotsPerInch) / Double(dotsPerInch)
    }

    /// The accelerated deltas of a motion of `dx`, `dy` device counts at `time` (ns).
    mutating func accelerate(dx: Int32, dy: Int32, at time: Int64) -> (dx: Double, dy: Double) {
        switch acceleration.profile {
        case .flat:
            let factor = acceleration.flatFactor
            return (Double(dx) * factor, Double(dy) * factor)
        case .adaptive:
            let x = Double(dx) * normalization
            let y = Double(dy) * normalization
            let current = velocity.add(dx: x, dy: y, at: time)
            let factor = acceleration.adaptiveFactor(from: previousVelocity, to: current)
            previousVelocity = current
            return (x * factor, y * factor)
        case .custom:
            let x = Double(dx)
            let y = Double(dy)
            let current = velocity.add(dx: x, dy: y, at: time)
            let factor = acceleration.curve?.factor(at: current) ?? 1
            return (x * factor, y * factor)
        }
    }
}

/// The pointer stage's core: relative devices' motion accelerated and moving one cursor
/// over the screens, their wheels turned and scaled, their buttons debounced and the
/// middle button emulated, each device by its ``PointerSettings``.
///
/// A plain value with no loop: the stage (or a test) sets each device's settings as it
/// attaches (``setDevice(_:settings:acceleratesMotion:)``), passes every event through
/// ``process(_:emit:)``, and calls ``flush(upTo:emit:)`` when ``nextDeadline`` passes
/// (debouncing and middle-button emulation hold buttons for a few milliseconds).
package struct PointerProcessor: Sendable {
    private struct DeviceState: Sendable {
        var settings: PointerSettings
        var accelerator: PointerAccelerator
        /// Whether its motion is accelerated here (a touchpad's comes accelerated by its own stage).
        var acceleratesMotion: Bool
        var debouncer = ButtonDebouncer()
        var middle = MiddleButtonEmulation()

        init(settings: PointerSettings, acceleratesMotion: Bool) {
            self.settings = settings
            accelerator = PointerAccelerator(settings.acceleration, dotsPerInch: settings.dotsPerInch)
            self.acceleratesMotion = acceleratesMotion
        }
    }

    /// What a device no one set gets.
    package var defaults: PointerSettings
    private var devices: [HIDDeviceID: DeviceState] = [:]
    private var layout: CursorLayout

    /// A processor whose devices get `defaults` until set otherwise, with a cursor over
    /// `screens` (none: no cursor).
    package init(defaults: PointerSettings = PointerSettings(), screens: [ScreenDescription] = []) {
        self.defaults = defaults
        layout = CursorLayout(screens: screens)
    }

    /// Sets `device`'s settings (its acceleration starts again).
    package mutating func setDevice(_ device: HIDDeviceID, settings: PointerSettings, acceleratesMotion: Bool = true) {
        devices[device] = DeviceState(settings: settings, acceleratesMotion: acceleratesMotion)
    }

    /// The settings `device` is processed by.
    package func settings(of device: HIDDeviceID) -> PointerSettings { devices[device]?.settings ?? defaults }

    /// Forgets `device`.
    package mutating func removeDevice(_ device: HIDDeviceID) { devices[device] = nil }

    /// Forgets every device.
    package mutating func removeAll() { devices.removeAll(keepingCapacity: true) }

    /// Takes new screens for the cursor.
    package mutating func setScreens(_ screens: [ScreenDescription]) { layout.setScreens(screens) }

    /// The cursor, `nil` without screens.
    package var cursor: PointerCursor? { layout.cursor }

    /// Puts the cursor at `location` on screen number `screen`; returns whether there is such a screen.
    package mutating func warpCursor(to location: ScreenPoint, screen: Int) -> Bool { layout.warp(to: location, screen: screen) }

    /// The next time a held button falls due (nanoseconds), if one is held.
    package var nextDeadline: Int64? {
        var next: Int64?
        for state in devices.values {
            for due in [state.debouncer.nextDeadline, state.middle.nextDeadline] {
                if let due { next = min(next ?? due, due) }
            }
        }
        return next
    }

    /// Passes on `event` as the pointer makes it: motion accelerated with the cursor,
    /// scrolling turned and scaled, buttons debounced and emulated; other events as they are.
    package mutating func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .pointerMotion(var motion):
            withState(of: event.device) { state in
                guard state.acceleratesMotion else { return }
                (motion.acceleratedDX, motion.acceleratedDY) = state.accelerator.accelerate(
                    dx: motion.dx, dy: motion.dy, at: Int64(event.timestamp.nanoseconds))
            }
            motion.cursor = layout.move(dx: motion.acceleratedDX, dy: motion.acceleratedDY)
            emit(HIDEvent(device: event.device, timestamp: event.timestamp, payload: .pointerMotion(motion)))
        case .scroll(var scroll):
            let settings = devices[event.device]?.settings ?? defaults
            let factor = settings.naturalScroll ? -settings.scrollFactor : settings.scrollFactor
            if factor != 1 {
                scroll.vertical *= factor
                scroll.horizontal *= factor
            }
            emit(HIDEvent(device: event.device, timestamp: event.timestamp, payload: .scroll(scroll)))
        case .button(let button):
            let device = event.device
            let time = Int64(event.timestamp.nanoseconds)
            withState(of: device) { state in
                let settings = state.settings
                // Debounced first, then the middle button emulated from what is left.
                var middle = state.middle
                func emulated(_ button: ButtonEvent, _ at: Int64) {
                    if settings.middleButtonEmulation {
                        middle.process(button, at: at) { emit(Self.event(device, $0, $1)) }
                    } else {
                        emit(Self.event(device, button, at))
                    }
                }
                if settings.debounce {
                    state.debouncer.process(button, at: time, emit: emulated)
                } else {
                    emulated(button, time)
                }
                state.middle = middle
            }
        case .deviceRemoved:
            devices[event.device] = nil
            emit(event)
        default:
            emit(event)
        }
    }

    /// Passes on the buttons held until `time` (nanoseconds), each at its due time.
    package mutating func flush(upTo time: Int64, emit: (HIDEvent) -> Void) {
        for device in Array(devices.keys) {
            guard var state = devices[device] else { continue }
            let settings = state.settings
            var middle = state.middle
            func emulated(_ button: ButtonEvent, _ at: Int64) {
                if settings.middleButtonEmulation {
                    middle.process(button, at: at) { emit(Self.event(device, $0, $1)) }
                } else {
                    emit(Self.event(device, button, at))
                }
            }
            state.debouncer.flush(upTo: time, emit: emulated)
            middle.flush(upTo: time) { emit(Self.event(device, $0, $1)) }
            state.middle = middle
            devices[device] = state
        }
    }

    /// Runs `body` on `device`'s state in place (one made from the defaults for a device
    /// no one set).
    private mutating func withState(of device: HIDDeviceID, _ body: (inout DeviceState) -> Void) {
        if let index = devices.index(forKey: device) { return body(&devices.values[index]) }
        var state = DeviceState(settings: defaults, acceleratesMotion: true)
        body(&state)
        devices[device] = state
    }

    private static func event(_ device: HIDDeviceID, _ button: ButtonEvent, _ time: Int64) -> HIDEvent {
        HIDEvent(device: device, timestamp: MonotonicInstant(nanoseconds: UInt64(max(0, time))), payload: .button(button))
    }
}
