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

    /// The accelerated deltas of a touchpad's motion of `dx`, `dy` at `time` (ns): the
    /// deltas already normalized to libinput's 1000 dpi by the touchpad stage, through
    /// the profile's touchpad curve (``PointerAcceleration/touchpadFactor(from:to:)``,
    /// ``PointerAcceleration/touchpadFlatFactor``).
    ///
    /// Each delta is first clamped to ``PointerVelocity/largestDelta`` (NaN counts as 0):
    /// they come as numbers from another stage or an event server, and a huge one must
    /// not make the factor, the deltas or the cursor infinite.
    mutating func accelerateTouchpad(dx: Double, dy: Double, at time: Int64) -> (dx: Double, dy: Double) {
        let dx = PointerVelocity.clamped(dx)
        let dy = PointerVelocity.clamped(dy)
        switch acceleration.profile {
        case .flat:
            let factor = acceleration.touchpadFlatFactor
            return (dx * factor, dy * factor)
        case .adaptive:
            let current = velocity.add(dx: dx, dy: dy, at: time)
            let factor = acceleration.touchpadFactor(from: previousVelocity, to: current)
            previousVelocity = current
            return (dx * factor, dy * factor)
        case .custom:
            let current = velocity.add(dx: dx, dy: dy, at: time)
            let factor = acceleration.curve?.factor(at: current) ?? 1
            return (dx * factor, dy * factor)
        }
    }
}

/// The pointer stage's core: relative devices' motion accelerated and moving one cursor
/// over the screens, their wheels turned and scaled, their buttons debounced and the
/// middle button emulated, each device by its ``PointerSettings``.
///
/// A plain value with no loop: the stage (or a test) sets each device's settings as it
/// attaches (``setDevice(_:settings:isTouchpad:)``), passes every event through
/// ``process(_:emit:)``, and calls ``flush(upTo:emit:)`` when ``nextDeadline`` passes
/// (debouncing and middle-button emulation hold buttons for a few milliseconds).
package struct PointerProcessor: Sendable {
    private struct DeviceState: Sendable {
        var settings: PointerSettings
        var accelerator: PointerAccelerator
        /// Whether it is a touchpad, whose motion and buttons the touchpad stage made: its
        /// motion comes normalized to 1000 dpi (in the unaccelerated deltas) and is
        /// accelerated by the touchpad's curve, and its buttons (taps, clickpad clicks) are not
        /// debounced here — libinput debounces the physical buttons of pointers only, and a
        /// tap's release held 25 ms would be late.
        var isTouchpad: Bool
        var debouncer = ButtonDebouncer()
        var middle = MiddleButtonEmulation()
        /// What its scrolling is multiplied by: the scroll factor, negative for natural scrolling.
        let scrollMultiplier: Double

        init(settings: PointerSettings, isTouchpad: Bool) {
            self.settings = settings
            scrollMultiplier = settings.naturalScroll ? -settings.scrollFactor : settings.scrollFactor
            accelerator = PointerAccelerator(settings.acceleration, dotsPerInch: settings.dotsPerInch)
            self.isTouchpad = isTouchpad
        }
    }

    /// What a device no one set gets.
    package var defaults: PointerSettings
    /// The devices set or seen, in a list: a few at most, found faster by comparing ids
    /// than by hashing them (the last one found first).
    private var devices: [(id: HIDDeviceID, state: DeviceState)] = []
    private var lastIndex = 0
    private var layout: CursorLayout
    /// ``nextDeadline`` as of the last change of a button (`Int64.max`: none).
    private var earliestDeadline = Int64.max

    /// A processor whose devices get `defaults` until set otherwise, with a cursor over
    /// `screens` (none: no cursor).
    package init(defaults: PointerSettings = PointerSettings(), screens: [ScreenDescription] = []) {
        self.defaults = defaults
        layout = CursorLayout(screens: screens)
        devices.reserveCapacity(8)
    }

    /// Where `device` is in ``devices``.
    @inline(__always)
    private func index(of device: HIDDeviceID) -> Int? {
        if lastIndex < devices.count, devices[lastIndex].id == device { return lastIndex }
        return devices.firstIndex { $0.id == device }
    }

    /// Sets `device`'s settings (its acceleration starts again).
    package mutating func setDevice(_ device: HIDDeviceID, settings: PointerSettings, isTouchpad: Bool = false) {
        let state = DeviceState(settings: settings, isTouchpad: isTouchpad)
        if let index = index(of: device) {
            devices[index].state = state
        } else {
            devices.append((device, state))
        }
        earliestDeadline = heldButtonsDeadline
    }

    /// The settings `device` is processed by.
    package func settings(of device: HIDDeviceID) -> PointerSettings { index(of: device).map { devices[$0].state.settings } ?? defaults }

    /// Forgets `device`.
    package mutating func removeDevice(_ device: HIDDeviceID) {
        guard let index = index(of: device) else { return }
        devices.remove(at: index)
        lastIndex = 0
        earliestDeadline = heldButtonsDeadline
    }

    /// Forgets every device.
    package mutating func removeAll() {
        devices.removeAll(keepingCapacity: true)
        lastIndex = 0
        earliestDeadline = .max
    }

    /// Takes new screens for the cursor.
    package mutating func setScreens(_ screens: [ScreenDescription]) { layout.setScreens(screens) }

    /// The cursor, `nil` without screens.
    package var cursor: PointerCursor? { layout.cursor }

    /// Puts the cursor at `location` on screen number `screen`; returns whether there is such a screen.
    package mutating func warpCursor(to location: ScreenPoint, screen: Int) -> Bool { layout.warp(to: location, screen: screen) }

    /// The next time a held button falls due (nanoseconds), if one is held.
    package var nextDeadline: Int64? { earliestDeadline == .max ? nil : earliestDeadline }

    /// ``nextDeadline`` worked out from every device's held buttons (`Int64.max`: none).
    private var heldButtonsDeadline: Int64 {
        var next: Int64?
        for (_, state) in devices {
            if let due = state.debouncer.nextDeadline { next = min(next ?? due, due) }
            if let due = state.middle.nextDeadline { next = min(next ?? due, due) }
        }
        return next ?? .max
    }

    /// Whether a held button falls due by `time`: it must be passed on before an event of then.
    @inline(__always)
    package func hasDueButtons(at time: MonotonicInstant) -> Bool { Int64(clamping: time.nanoseconds) >= earliestDeadline }

    /// Passes on `event` as the pointer makes it, after the held buttons due by its time:
    /// motion accelerated with the cursor, scrolling turned and scaled, buttons debounced
    /// and emulated; other events as they are.
    package mutating func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        if hasDueButtons(at: event.timestamp) { flush(upTo: Int64(clamping: event.timestamp.nanoseconds), emit: emit) }
        switch event.payload {
        case .pointerMotion(let motion):
            emit(moved(event, motion))
        case .scroll(var scroll):
            // From the unscaled amounts, not the ones it came with: scrolling that an
            // event server's pointer stage scaled or turned is scaled once, by this
            // device's settings.
            var factor = 1.0
            withState(of: event.device) { factor = $0.scrollMultiplier }
            // (Clamped as deltas are: a huge amount must not scale to infinity.)
            scroll.vertical = PointerVelocity.clamped(scroll.unscaledVertical) * factor
            scroll.horizontal = PointerVelocity.clamped(scroll.unscaledHorizontal) * factor
            emit(HIDEvent(device: event.device, timestamp: event.timestamp, payload: .scroll(scroll)))
        case .button(let button):
            let device = event.device
            let time = Int64(event.timestamp.nanoseconds)
            withState(of: device) { state in
                let settings = state.settings
                // Debounced first, then the middle button emulated from what is left.
                var middle = state.middle
                func emulated(_ button: ButtonEvent, _ at: Int64) {
                    Self.afterDebouncing(button, at: at, of: device, settings: settings, middle: &middle, emit: emit)
                }
                if settings.debounce && !state.isTouchpad {
                    state.debouncer.process(button, at: time, emit: emulated)
                } else {
                    emulated(button, time)
                }
                state.middle = middle
            }
            earliestDeadline = heldButtonsDeadline
        case .deviceRemoved:
            removeDevice(event.device)
            emit(event)
        default:
            emit(event)
        }
    }

    /// `event`, whose payload is `motion`, as the pointer makes it: accelerated by its
    /// device's profile (a touchpad's unaccelerated deltas, which the touchpad stage
    /// normalized, by the profile's touchpad curve), with the cursor it moved.
    ///
    /// What is accelerated is never the accelerated deltas the motion comes with: a mouse's
    /// raw counts (whose normalized deltas become its unaccelerated ones) or a touchpad's
    /// unaccelerated deltas. Motion an event server's pointer stage accelerated is
    /// accelerated once here, by this device's settings.
    @inline(__always)
    package mutating func moved(_ event: HIDEvent, _ motion: PointerMotionEvent) -> HIDEvent {
        var motion = motion
        withState(of: event.device) { state in
            let time = Int64(event.timestamp.nanoseconds)
            if state.isTouchpad {
                (motion.acceleratedDX, motion.acceleratedDY) = state.accelerator.accelerateTouchpad(
                    dx: motion.unacceleratedDX, dy: motion.unacceleratedDY, at: time)
            } else {
                (motion.acceleratedDX, motion.acceleratedDY) = state.accelerator.accelerate(dx: motion.dx, dy: motion.dy, at: time)
                let normalization = state.accelerator.normalization
                motion.unacceleratedDX = Double(motion.dx) * normalization
                motion.unacceleratedDY = Double(motion.dy) * normalization
            }
        }
        motion.cursor = layout.move(dx: motion.acceleratedDX, dy: motion.acceleratedDY)
        return HIDEvent(device: event.device, timestamp: event.timestamp, payload: .pointerMotion(motion))
    }

    /// The step after debouncing: `button` (at `time`) through the middle-button emulation
    /// where `settings` ask for it, else passed on as it is.
    @inline(__always)
    private static func afterDebouncing(
        _ button: ButtonEvent, at time: Int64, of device: HIDDeviceID, settings: PointerSettings,
        middle: inout MiddleButtonEmulation, emit: (HIDEvent) -> Void
    ) {
        if settings.middleButtonEmulation {
            middle.process(button, at: time) { emit(event(device, $0, $1)) }
        } else {
            emit(event(device, button, time))
        }
    }

    /// Passes on the buttons held until `time` (nanoseconds), each at its due time.
    package mutating func flush(upTo time: Int64, emit: (HIDEvent) -> Void) {
        for index in devices.indices {
            let device = devices[index].id
            var state = devices[index].state
            let settings = state.settings
            var middle = state.middle
            func emulated(_ button: ButtonEvent, _ at: Int64) {
                Self.afterDebouncing(button, at: at, of: device, settings: settings, middle: &middle, emit: emit)
            }
            state.debouncer.flush(upTo: time, emit: emulated)
            middle.flush(upTo: time) { emit(Self.event(device, $0, $1)) }
            state.middle = middle
            devices[index].state = state
        }
        earliestDeadline = heldButtonsDeadline
    }

    /// Runs `body` on `device`'s state in place (one made from the defaults for a device
    /// no one set).
    @inline(__always)
    private mutating func withState(of device: HIDDeviceID, _ body: (inout DeviceState) -> Void) {
        if let index = index(of: device) {
            lastIndex = index
            return body(&devices[index].state)
        }
        devices.append((device, DeviceState(settings: defaults, isTouchpad: false)))
        lastIndex = devices.count - 1
        body(&devices[lastIndex].state)
    }

    private static func event(_ device: HIDDeviceID, _ button: ButtonEvent, _ time: Int64) -> HIDEvent {
        HIDEvent(device: device, timestamp: MonotonicInstant(nanoseconds: UInt64(max(0, time))), payload: .button(button))
    }
}
