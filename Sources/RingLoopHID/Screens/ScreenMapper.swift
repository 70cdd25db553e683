import RingLoopEvdev

/// The screen-mapping stage's core: gives each touch contact, pen event and absolute
/// pointer event of a mapped device its location in its screen's pixels.
///
/// A plain value with no loop, timer or BeforeWaiting work of its own: the chain (or an
/// app, or a test) sets each device's ``ScreenMapping`` as the device attaches
/// (``setMapping(_:for:)``, worked out by ``DeviceSettingsResolver``) and removes it as
/// the device goes, and passes every event through ``process(_:)``, which fills in
/// ``Contact/screenLocation``, ``PenEvent/screenLocation`` and
/// ``AbsolutePointerEvent/screenLocation`` and leaves every other value as the decoder
/// made it. Events of devices without a mapping (touchpads, keyboards, a touchscreen
/// with no screen) pass unchanged.
///
/// `process` allocates nothing when the event holds the only reference to its
/// digitizer frame's contacts (as an event taken off the queue does); costs are measured
/// by `ringloop-bench`'s `screen.map` rows.
public struct ScreenMapper: Sendable {
    private var mappings: [HIDDeviceID: ScreenMapping] = [:]

    /// A mapper with no device mapped.
    public init() {}

    /// Maps `device`'s positions through `mapping` from now on (`nil`: no longer).
    public mutating func setMapping(_ mapping: ScreenMapping?, for device: HIDDeviceID) {
        mappings[device] = mapping
    }

    /// The mapping of `device`, if it has one.
    public func mapping(for device: HIDDeviceID) -> ScreenMapping? { mappings[device] }

    /// Forgets every device (the chain stopped).
    public mutating func removeAll() { mappings.removeAll(keepingCapacity: true) }

    /// Whether a device's positions belong on a screen: a touchscreen, a tablet (pen
    /// display or graphics tablet) or an absolute pointer — not a touchpad, whose positions
    /// move a pointer, nor a gamepad's, joystick's or tablet pad's axes.
    /// - Parameters:
    ///   - info: the device.
    ///   - deviceClass: the class its settings give it instead of its own, if any.
    public static func mapsToScreen(_ info: HIDDeviceInfo, as deviceClass: HIDDeviceClass? = nil) -> Bool {
        switch deviceClass ?? info.deviceClass {
        case .touchscreen, .tablet: return true
        case .pointer:
            let absolute = info.codes[Evdev.EV_ABS] ?? []
            return absolute.contains(Evdev.ABS_X) && absolute.contains(Evdev.ABS_Y)
        default: return false
        }
    }

    /// Adds the screen location to `event` when its device has a mapping; a device's
    /// removal forgets its mapping.
    public mutating func process(_ event: inout HIDEvent) {
        if case .deviceRemoved = event.payload {
            mappings[event.device] = nil
            return
        }
        guard let mapping = mappings[event.device] else { return }
        Self.apply(mapping, to: &event)
    }

    /// Adds the screen location by `mapping` to a contact, pen or absolute pointer event.
    @inline(__always)
    public static func apply(_ mapping: ScreenMapping, to event: inout HIDEvent) {
        if case .digitizer = event.payload {
            // Taken out of the event first (the event holds a placeholder meanwhile), so the
            // frame's contacts are not shared and change in place.
            var payload = HIDEvent.Payload.deviceAdded
            swap(&payload, &event.payload)
            guard case .digitizer(var frame) = consume payload else { return }
            frame.mapContacts(through: mapping)
            event.payload = .digitizer(frame)
            return
        }
        switch event.payload {
        case .pen(var pen):
            pen.screenLocation = mapping.location(normalizedX: pen.normalizedX, normalizedY: pen.normalizedY)
            event.payload = .pen(pen)
        case .absolutePointer(var pointer):
            pointer.screenLocation = mapping.location(normalizedX: pointer.normalizedX, normalizedY: pointer.normalizedY)
            event.payload = .absolutePointer(pointer)
        default:
            break
        }
    }
}
