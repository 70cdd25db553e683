import RingLoop
import RingLoopEvdev

/// What a stream of HID events has told about one device so far: keys, buttons and
/// gamepad buttons held, switches on, touches live, the pen near or not. Two of these
/// make resync a difference: one follows every event the decoder produced (nothing is
/// lost there), one every event handlers were given; after a loss between them (a full
/// queue, a full hand-off between threads) ``DeviceLedger/difference(to:device:at:)`` gives
/// exactly the events that bring the handlers' view to the device's: key-ups for keys
/// released, key-downs for keys pressed, touches cancelled or begun, switches, the pen.
///
/// The one ledger type, RingLoopEvdev's ``DeviceLedger`` (the kernel's terms are its
/// ``DeviceState``), in events' terms: each key down tagged with the kind of event it was
/// delivered as (``DeliveredKeyKind``: a code's kind follows the device, so only the events
/// say it), and contacts and the pen as the events carried them (normalized, on a screen:
/// ``DeliveredContacts``). ``VisibleStates`` names every place that keeps one.
///
/// A value of fixed size that never allocates (bit sets and inline contacts).
typealias VisibleState = DeviceLedger<DeliveredContacts>

/// The contacts of a device as its events carried them: the live touches and the pen.
struct DeliveredContacts: LedgerContacts {
    /// Live contacts, by tracking id.
    var touches = DigitizerFrame()
    /// The device's pen, while in proximity.
    var pen: PenEvent?

    init() {}
}

/// The kind of event a key down was delivered as: a delivered ledger's tag of each key
/// (``DeviceLedger/keyTags``).
enum DeliveredKeyKind: UInt8, CaseIterable {
    case key = 0
    case button = 1
    case gamepadButton = 2
}

extension DeviceLedger where Contacts == DeliveredContacts {
    /// Live contacts, by tracking id.
    var touches: DigitizerFrame {
        get { contacts.touches }
        _modify { yield &contacts.touches }
        set { contacts.touches = newValue }
    }

    /// The device's pen, while in proximity.
    var pen: PenEvent? {
        get { contacts.pen }
        set { contacts.pen = newValue }
    }

    /// Whether nothing is held, live or near (a device that was removed, or never seen).
    var isRest: Bool {
        keys.isEmpty && switches.isEmpty && touches.count == 0 && pen == nil
    }

    /// Whether `code` is down, delivered as `kind`.
    func holds(_ code: UInt16, as kind: DeliveredKeyKind) -> Bool {
        keys.contains(code) && keyTags[code] == kind.rawValue
    }

    /// The codes down delivered as `kind`, in ascending order.
    func codes(heldAs kind: DeliveredKeyKind) -> [UInt16] {
        keys.all.filter { keyTags[$0] == kind.rawValue }
    }

    /// Records `code` pressed as `kind`, or released (a release of another kind than the
    /// press is not this key's: it changes nothing).
    mutating func set(_ code: UInt16, as kind: DeliveredKeyKind, down: Bool) {
        if down {
            keys.set(code, true)
            keyTags[code] = kind.rawValue
        } else if holds(code, as: kind) {
            keys.set(code, false)
            keyTags[code] = 0
        }
    }

    /// Takes in one event of the device.
    mutating func apply(_ payload: HIDEvent.Payload) {
        switch payload {
        case .key(let key) where key.state != .repeat: set(key.code, as: .key, down: key.state == .down)
        case .button(let button): set(button.code, as: .button, down: button.isDown)
        case .gamepadButton(let button): set(button.code, as: .gamepadButton, down: button.isDown)
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
        let keys = codes(heldAs: .key)
        let targetKeys = target.codes(heldAs: .key)
        for code in keys where target.holds(code, as: .key) {
            if let modifier = KeyModifiers.forLinuxKey(code) { modifiers.insert(modifier) }
        }
        for code in keys where !target.holds(code, as: .key) {
            event(.key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .up, modifiers: modifiers)))
        }
        for code in codes(heldAs: .button) where !target.holds(code, as: .button) {
            event(.button(ButtonEvent(code: code, number: FrameDecoder.buttonNumber(code), isDown: false)))
        }
        for code in codes(heldAs: .gamepadButton) where !target.holds(code, as: .gamepadButton) {
            event(.gamepadButton(GamepadButtonEvent(code: code, isDown: false)))
        }
        for code in targetKeys where !holds(code, as: .key) {
            if let modifier = KeyModifiers.forLinuxKey(code) { modifiers.insert(modifier) }
            event(.key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .down, modifiers: modifiers)))
        }
        for code in target.codes(heldAs: .button) where !holds(code, as: .button) {
            event(.button(ButtonEvent(code: code, number: FrameDecoder.buttonNumber(code), isDown: true)))
        }
        for code in target.codes(heldAs: .gamepadButton) where !holds(code, as: .gamepadButton) {
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
/// | read | `FrameDecoder.read` (a ``DeviceState``: the one ledger type in kernel terms) | the device's frames as applied at `SYN_REPORT`; its difference to the state read back after `SYN_DROPPED` is the resync, its release is the detach |
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
