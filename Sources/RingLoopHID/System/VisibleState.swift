import RingLoop
import RingLoopEvdev

/// What a stream of HID events has told about one device so far: keys, buttons and
/// gamepad buttons held, switches on, touches live, the pen near or not. Two of these
/// make resync a difference: one follows every event the decoder produced (nothing is
/// lost there), one every event handlers were given; after a loss between them (a full
/// queue, a full hand-off between threads) ``difference(to:device:at:)`` gives exactly
/// the events that bring the handlers' view to the device's: key-ups for keys released,
/// key-downs for keys pressed, touches cancelled or begun, switches, the pen.
///
/// The event-level view built on the kernel-level ``DeviceState`` (RingLoopEvdev): its
/// keys split by the kind of event each was delivered as (a code's kind follows the
/// device, so only the events say it), and contacts and the pen as the events carried them
/// (normalized, on a screen). ``VisibleStates`` names every place that keeps one.
///
/// A value of fixed size that never allocates (bit sets and inline contacts).
struct VisibleState: Sendable {
    var keys = KeyCodeSet()
    var buttons = KeyCodeSet()
    var gamepadButtons = KeyCodeSet()
    /// Switches on.
    var switches = SmallCodeSet()
    /// Live contacts, by tracking id.
    var touches = DigitizerFrame()
    /// The device's pen, while in proximity.
    var pen: PenEvent?

    /// Whether nothing is held, live or near (a device that was removed, or never seen).
    var isRest: Bool {
        keys.isEmpty && buttons.isEmpty && gamepadButtons.isEmpty && switches.isEmpty && touches.count == 0 && pen == nil
    }

    /// Takes in one event of the device.
    mutating func apply(_ payload: HIDEvent.Payload) {
        switch payload {
        case .key(let key) where key.state != .repeat: keys.set(key.code, key.state == .down)
        case .button(let button): buttons.set(button.code, button.isDown)
        case .gamepadButton(let button): gamepadButtons.set(button.code, button.isDown)
        case .switchChanged(let change): switches.set(change.code, change.isOn)
        case .digitizer(let frame):
            for index in 0..<frame.count {
                let contact = frame[index]
                switch contact.phase {
                case .began, .moved, .stationary: touches.upsert(contact)
                case .ended, .cancelled: touches.remove(trackingID: contact.trackingID)
                }
            }
        case .pen(let pen): self.pen = pen.inProximity ? pen : nil
        case .deviceRemoved: self = VisibleState()
        default: break
        }
    }

    /// The events that take a client that saw `self` to `target`, in this order: key and
    /// button releases, presses, switches, one digitizer frame (touches gone cancelled,
    /// new ones began, the others moved to where they are), the pen.
    func difference(to target: VisibleState, device: HIDDeviceID, at time: MonotonicInstant) -> [HIDEvent] {
        var out: [HIDEvent] = []
        func event(_ payload: HIDEvent.Payload) { out.append(HIDEvent(device: device, timestamp: time, payload: payload)) }
        var modifiers = KeyModifiers()
        for code in keys.all where target.keys.contains(code) {
            if let modifier = KeyModifiers.forLinuxKey(code) { modifiers.insert(modifier) }
        }
        for code in keys.all where !target.keys.contains(code) {
            event(.key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .up, modifiers: modifiers)))
        }
        for code in buttons.all where !target.buttons.contains(code) {
            event(.button(ButtonEvent(code: code, number: FrameDecoder.buttonNumber(code), isDown: false)))
        }
        for code in gamepadButtons.all where !target.gamepadButtons.contains(code) {
            event(.gamepadButton(GamepadButtonEvent(code: code, isDown: false)))
        }
        for code in target.keys.all where !keys.contains(code) {
            if let modifier = KeyModifiers.forLinuxKey(code) { modifiers.insert(modifier) }
            event(.key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .down, modifiers: modifiers)))
        }
        for code in target.buttons.all where !buttons.contains(code) {
            event(.button(ButtonEvent(code: code, number: FrameDecoder.buttonNumber(code), isDown: true)))
        }
        for code in target.gamepadButtons.all where !gamepadButtons.contains(code) {
            event(.gamepadButton(GamepadButtonEvent(code: code, isDown: true)))
        }
        for code in target.switches.changed(from: switches) {
            event(.switchChanged(SwitchEvent(code: code, isOn: target.switches.contains(code))))
        }
        var frame = DigitizerFrame()
        for index in 0..<touches.count where target.touches.index(of: touches[index].trackingID) == nil {
            var gone = touches[index]
            gone.phase = .cancelled
            frame.append(gone)
        }
        for index in 0..<target.touches.count {
            var contact = target.touches[index]
            contact.phase = touches.index(of: contact.trackingID) == nil ? .began : .moved
            frame.append(contact)
        }
        if frame.count > 0 {
            frame.fingerCount = target.touches.count
            event(.digitizer(frame))
        }
        if let pen = target.pen, pen != self.pen {
            event(.pen(pen))
        } else if target.pen == nil, var pen = self.pen {
            pen.inProximity = false
            pen.touching = false
            pen.pressure = 0
            pen.barrelButtons = 0
            event(.pen(pen))
        }
        return out
    }
}

extension DigitizerFrame {
    /// The index of the contact with `trackingID`, if any.
    func index(of trackingID: Int32) -> Int? {
        (0..<count).first { self[$0].trackingID == trackingID }
    }

    /// Adds or replaces the contact with the same tracking id.
    mutating func upsert(_ contact: Contact) {
        if let index = index(of: contact.trackingID) { replace(at: index, with: contact) } else { append(contact) }
    }
}

/// The visible state of every device of a stream: a ledger.
///
/// The ledgers, one per boundary an event crosses, each named once:
///
/// | boundary | ledger | what it follows |
/// |---|---|---|
/// | read | `FrameDecoder.read` (a ``DeviceState``, kernel terms) | the device's frames as applied at `SYN_REPORT`; its difference to the state read back after `SYN_DROPPED` is the resync, its release is the detach |
/// | read | `DeliveryLedgers.read`, `Forwarder.read` (the dedicated thread's) | every event the decoders produced (nothing is lost there: the truth) |
/// | delivered | `DeliveryLedgers.delivered` | every event the handlers were given; after a loss the difference from it to `read` is what they get |
/// | offered (a server) | `HIDEventServer.offered` | every event that reached the routing stage; a client given the focus gets the difference to it |
/// | routed (a server, per client) | `ServedClient.routed` | every event routed to the client, what it would have seen with nothing dropped |
/// | sent (a server, per client) | `ServedClient.sent` | every event that went out to the client; a lag is repaired by the difference from it to `routed` |
/// | received (a server's client) | `ServerDeviceFeed.received` | every event the server sent; released when the server goes |
struct VisibleStates: Sendable {
    private(set) var devices: [HIDDeviceID: VisibleState] = [:]

    subscript(device: HIDDeviceID) -> VisibleState { devices[device] ?? VisibleState() }

    /// Replaces a device's state (with a snapshot taken where the events were lost).
    mutating func set(_ state: VisibleState, for device: HIDDeviceID) {
        devices[device] = state.isRest ? nil : state
    }

    /// Takes in one event. Motion, scroll, axes and the like hold nothing: they leave
    /// the table untouched (no lookup, no state made for a device that never held
    /// anything), which keeps a pointer's stream off this table entirely.
    mutating func apply(_ event: HIDEvent) {
        switch event.payload {
        case .deviceRemoved: devices[event.device] = nil
        case .key, .button, .gamepadButton, .switchChanged, .digitizer, .pen:
            devices[event.device, default: VisibleState()].apply(event.payload)
        default: break
        }
    }
}
