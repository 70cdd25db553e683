// Only the public API, as an app's own tests would write it: this file does not compile
// when a payload cannot be made outside RingLoopHID.
import RingLoop
import RingLoopHID

/// `event` made again field by field with the payloads' public initializers, as an app
/// makes a synthetic event for its handlers' tests.
func madeByAnApp(_ event: HIDEvent) -> HIDEvent {
    let payload: HIDEvent.Payload
    switch event.payload {
    case .key(let key):
        payload = .key(KeyEvent(usage: key.usage, code: key.code, state: key.state, modifiers: key.modifiers))
    case .button(let button):
        payload = .button(ButtonEvent(code: button.code, number: button.number, isDown: button.isDown))
    case .pointerMotion(let motion):
        payload = .pointerMotion(
            PointerMotionEvent(
                dx: motion.dx, dy: motion.dy, acceleratedDX: motion.acceleratedDX, acceleratedDY: motion.acceleratedDY,
                unacceleratedDX: motion.unacceleratedDX, unacceleratedDY: motion.unacceleratedDY,
                cursor: motion.cursor.map { PointerCursor(location: $0.location, screen: $0.screen) }))
    case .scroll(let scroll):
        payload = .scroll(
            ScrollEvent(
                vertical: scroll.vertical, horizontal: scroll.horizontal, isHighResolution: scroll.isHighResolution,
                source: scroll.source, phase: scroll.phase, unscaledVertical: scroll.unscaledVertical,
                unscaledHorizontal: scroll.unscaledHorizontal))
    case .absolutePointer(let pointer):
        payload = .absolutePointer(
            AbsolutePointerEvent(
                x: pointer.x, y: pointer.y, normalizedX: pointer.normalizedX, normalizedY: pointer.normalizedY))
    case .digitizer(let frame):
        var made = DigitizerFrame()
        for contact in frame.contacts {
            made.append(
                Contact(
                    slot: contact.slot, trackingID: contact.trackingID, phase: contact.phase, x: contact.x,
                    y: contact.y, normalizedX: contact.normalizedX, normalizedY: contact.normalizedY,
                    millimetresX: contact.millimetresX, millimetresY: contact.millimetresY,
                    pressure: contact.pressure, size: contact.size, minor: contact.minor,
                    orientation: contact.orientation, distance: contact.distance, toolType: contact.toolType))
        }
        made.fingerCount = frame.fingerCount
        made.isBoundingBox = frame.isBoundingBox
        made.buttonDown = frame.buttonDown
        payload = .digitizer(made)
    case .pen(let pen):
        payload = .pen(
            PenEvent(
                tool: pen.tool, inProximity: pen.inProximity, touching: pen.touching, x: pen.x, y: pen.y,
                normalizedX: pen.normalizedX, normalizedY: pen.normalizedY, pressure: pen.pressure,
                distance: pen.distance, tiltX: pen.tiltX, tiltY: pen.tiltY, barrelButtons: pen.barrelButtons))
    case .gamepadButton(let button):
        payload = .gamepadButton(GamepadButtonEvent(code: button.code, isDown: button.isDown))
    case .gamepadAxis(let axis):
        payload = .gamepadAxis(GamepadAxisEvent(code: axis.code, value: axis.value, normalized: axis.normalized))
    case .switchChanged(let change):
        payload = .switchChanged(SwitchEvent(code: change.code, isOn: change.isOn))
    case .dial(let value):
        payload = .dial(value)
    case .motion(let motion):
        payload = .motion(
            MotionEvent(
                acceleration: MotionVector(x: motion.acceleration.x, y: motion.acceleration.y, z: motion.acceleration.z),
                rotationRate: MotionVector(x: motion.rotationRate.x, y: motion.rotationRate.y, z: motion.rotationRate.z),
                sensorTime: motion.sensorTime, sampleRate: motion.sampleRate, sampleCount: motion.sampleCount,
                sensors: motion.sensors, isCalibrated: motion.isCalibrated))
    case .axis(let axis):
        payload = .axis(AxisEvent(source: axis.source, code: axis.code, value: axis.value, normalized: axis.normalized))
    case .deviceAdded:
        payload = .deviceAdded
    case .deviceRemoved:
        payload = .deviceRemoved
    case .eventsDropped(let count):
        payload = .eventsDropped(count: count)
    case .focusChanged(let isFocused):
        payload = .focusChanged(isFocused: isFocused)
    case .gamepad(let gamepad):
        payload = .gamepad(GamepadEvent(control: gamepad.control, value: gamepad.value, raw: gamepad.raw))
    }
    return HIDEvent(device: HIDDeviceID(rawValue: event.device.rawValue), timestamp: event.timestamp, payload: payload)
}

/// The input chain article's synthetic events, as the article shows them (a test checks
/// that it still does, and that the key press is what a keyboard's decoder makes).
func theArticlesSyntheticEvents() -> (press: HIDEvent, touch: HIDEvent) {
    let press = HIDEvent(
        device: HIDDeviceID(rawValue: 1), timestamp: .now,
        payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(30), code: 30, state: .down)))
    var frame = DigitizerFrame()
    frame.append(Contact(slot: 0, trackingID: 7, phase: .began, x: 512, y: 300, normalizedX: 0.5, normalizedY: 0.4))
    let touch = HIDEvent(device: HIDDeviceID(rawValue: 2), timestamp: .now, payload: .digitizer(frame))
    return (press, touch)
}
