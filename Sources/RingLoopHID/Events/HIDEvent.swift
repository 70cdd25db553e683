import RingLoop

/// Identifies an attached device within one event system (stable until it is detached).
public struct HIDDeviceID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "device \(rawValue)" }
}

/// One HID event decoded from an evdev frame, with its device and the kernel's
/// `CLOCK_MONOTONIC` timestamp of the frame.
///
/// A small value type of fixed size (105 bytes), so the event queue holds events without
/// allocating and copying one is cheap: a multitouch frame's contacts (up to
/// ``DigitizerFrame/capacity``) are in a buffer the frame shares (copy on write).
public struct HIDEvent: Sendable, Equatable {
    /// The device that sent it.
    public var device: HIDDeviceID
    /// When the kernel stamped the frame (`CLOCK_MONOTONIC`).
    public var timestamp: MonotonicInstant
    /// What happened.
    public var payload: Payload

    public init(device: HIDDeviceID, timestamp: MonotonicInstant, payload: Payload) {
        self.device = device
        self.timestamp = timestamp
        self.payload = payload
    }

    /// What an event says.
    public enum Payload: Sendable, Equatable {
        case key(KeyEvent)
        case button(ButtonEvent)
        /// A relative device moved: its raw counts, the accelerated deltas and the cursor
        /// (``PointerMotionEvent``).
        case pointerMotion(PointerMotionEvent)
        case scroll(ScrollEvent)
        case absolutePointer(AbsolutePointerEvent)
        case digitizer(DigitizerFrame)
        case pen(PenEvent)
        case gamepadButton(GamepadButtonEvent)
        case gamepadAxis(GamepadAxisEvent)
        case switchChanged(SwitchEvent)
        case dial(Int32)
        /// A sample of an accelerometer or gyroscope (a ``HIDDeviceClass/motion`` node).
        case motion(MotionEvent)
        /// An axis no other event describes: a tablet pad's ring and strips, `ABS_MISC`,
        /// a pen's rotation or wheel, `REL_Z`… of a 3D mouse.
        case axis(AxisEvent)
        case deviceAdded
        case deviceRemoved
        /// The queue or the kernel dropped events; `count` when known (0 when the
        /// kernel's `SYN_DROPPED` does not say). A state resync follows.
        case eventsDropped(count: Int)
        /// A client of an event server gained (`true`) or lost the focus: from here keys
        /// and touches come to it, or no more. In order with the events around it (the
        /// key-ups of keys held when the focus went come first). Device 0.
        case focusChanged(isFocused: Bool)
        /// A control of the standard gamepad (SDL's names) changed: made from the raw
        /// `gamepadButton`/`gamepadAxis` events of a device with an SDL mapping, beside them.
        case gamepad(GamepadEvent)
    }

    /// The event's kind, for routing to handlers.
    public var kind: Kind {
        switch payload {
        case .key: .key
        case .button: .button
        case .pointerMotion: .pointerMotion
        case .scroll: .scroll
        case .absolutePointer: .absolutePointer
        case .digitizer: .digitizer
        case .pen: .pen
        case .gamepadButton: .gamepadButton
        case .gamepadAxis: .gamepadAxis
        case .switchChanged: .switchChanged
        case .dial: .dial
        case .motion: .motion
        case .axis: .axis
        case .deviceAdded: .deviceAdded
        case .deviceRemoved: .deviceRemoved
        case .eventsDropped: .eventsDropped
        case .focusChanged: .focusChanged
        case .gamepad: .gamepad
        }
    }

    /// Kinds of events, for handler registration.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case key, button, pointerMotion, scroll, absolutePointer, digitizer, pen, gamepadButton, gamepadAxis
        case switchChanged, dial, motion, axis, deviceAdded, deviceRemoved, eventsDropped, focusChanged
        /// A standard gamepad control (``GamepadEvent``).
        case gamepad

        /// Whether the event says a device came or went, or the focus did: a full queue
        /// never drops one (it waits aside until there is room), and an app cannot post one.
        var isDeviceLifecycle: Bool { self == .deviceAdded || self == .deviceRemoved || self == .focusChanged }
    }
}

/// A keyboard, consumer or system key.
public struct KeyEvent: Sendable, Hashable {
    public enum State: String, Sendable, Hashable { case down, up, `repeat` }
    /// The HID usage, or `nil` for a key with none.
    public var usage: HIDUsage?
    /// The Linux key code (`KEY_A` is 30).
    public var code: UInt16
    public var state: State
    /// Modifiers held after this event.
    public var modifiers: KeyModifiers
    /// The keysym in the seat's keymap (`XKB_KEY_a` is 0x61; ``Keymap/keysymName(_:)`` names
    /// it), or 0 where no keymap interpreted the event. A composed sequence's last key
    /// carries the sequence's result.
    public var keysym: UInt32
    /// The UTF-8 text the event typed in the seat's keymap: a press's or repeat's
    /// character(s), a composed sequence's result; empty for a release, a dead key, a key
    /// without text, and where no keymap interpreted the event.
    public var text: KeyText
    /// The keymap's modifiers after this event, locks (Caps Lock, Num Lock), latches and the
    /// layout in effect included; all empty where no keymap interpreted the event.
    public var keymapModifiers: KeymapModifierState

    /// A key event, as the decoder makes one (for an app's own tests of its handlers, or a
    /// synthetic key): `usage` is what ``HIDUsage/forLinuxKey(_:)`` gives for `code`.
    ///
    /// - Parameters:
    ///   - usage: The HID usage, or `nil`.
    ///   - code: The Linux key code.
    ///   - state: Down, up or repeat.
    ///   - modifiers: The modifier keys held after the event.
    ///   - keysym: The keysym in the seat's keymap, 0 for none.
    ///   - text: The text typed.
    ///   - keymapModifiers: The keymap's modifiers after the event.
    public init(
        usage: HIDUsage?, code: UInt16, state: State, modifiers: KeyModifiers = [], keysym: UInt32 = 0,
        text: KeyText = KeyText(), keymapModifiers: KeymapModifierState = KeymapModifierState()
    ) {
        self.usage = usage
        self.code = code
        self.state = state
        self.modifiers = modifiers
        self.keysym = keysym
        self.text = text
        self.keymapModifiers = keymapModifiers
    }
}

/// A pointer, touchpad or other button (`BTN_LEFT`…).
public struct ButtonEvent: Sendable, Hashable {
    /// The Linux button code (`BTN_LEFT` is 0x110).
    public var code: UInt16
    /// 1 for the primary button, 2 secondary, 3 middle, then the rest in code order.
    public var number: Int
    public var isDown: Bool

    /// A button event; `number` as the decoder numbers `code` (1 primary, 2 secondary,
    /// 3 middle).
    public init(code: UInt16, number: Int, isDown: Bool) {
        self.code = code
        self.number = number
        self.isDown = isDown
    }
}

/// A relative pointer's motion (a mouse, trackball, pointing stick, or a touchpad moving
/// the pointer): the device's raw counts, the deltas after the device's acceleration, and
/// the cursor the motion moved, where there is one.
///
/// Games and robots want ``dx`` and ``dy`` (what the device counted, as the kernel
/// reported them); a desktop's pointer wants ``acceleratedDX`` and ``acceleratedDY``
/// (libinput's accelerated deltas: normalized to a 1000-dpi device and accelerated by
/// the device's profile and speed) or the ``cursor`` itself. Positive `y` is down, as
/// the kernel's `REL_Y`. The decoder makes the accelerated and unaccelerated deltas equal
/// to the raw ones and no cursor; the touchpad stage fills in a touchpad's unaccelerated
/// deltas, and the pointer stage the accelerated ones and the cursor, and a mouse's
/// unaccelerated ones (its raw counts normalized to 1000 dpi).
///
/// ``unacceleratedDX`` and ``unacceleratedDY`` are libinput's unaccelerated deltas
/// (`libinput_event_pointer_get_dx_unaccelerated`): the motion normalized to a 1000-dpi
/// device, before acceleration. The pointer stage accelerates a mouse's motion from its
/// raw counts and a touchpad's from these, never from the accelerated deltas an event
/// arrives with: a client of an event server whose pointer stage accelerated the motion
/// already accelerates it once, by its own settings. So where the pointer stage is
/// present, the ``acceleratedDX`` and ``acceleratedDY`` an event arrives with (posted,
/// or from an event server) are ignored and made again — a touchpad's too, from its
/// unaccelerated deltas.
public struct PointerMotionEvent: Sendable, Hashable {
    /// The device's own horizontal count (`REL_X`), positive to the right. A touchpad's
    /// motion in its own units (whole units; the rest is carried to its next motion).
    public var dx: Int32
    /// The device's own vertical count (`REL_Y`), positive down.
    public var dy: Int32
    /// The horizontal delta after acceleration, in pixels of the cursor (at libinput's
    /// normalized 1000 dpi).
    public var acceleratedDX: Double
    /// The vertical delta after acceleration, in pixels of the cursor.
    public var acceleratedDY: Double
    /// The horizontal delta before acceleration, normalized to 1000 dpi (libinput's
    /// `dx_unaccelerated`): a touchpad's motion as the touchpad stage measured it in the
    /// pad's millimetres; a mouse's counts times 1000 over its dpi (the pointer stage's
    /// ``PointerSettings/dotsPerInch``), its raw counts where no pointer stage measured them.
    public var unacceleratedDX: Double
    /// The vertical delta before acceleration, normalized to 1000 dpi, positive down.
    public var unacceleratedDY: Double
    /// Where the cursor is after this motion; `nil` where no cursor applies (no screens).
    public var cursor: PointerCursor?

    /// A motion of `dx`, `dy` device counts; the accelerated and unaccelerated deltas are
    /// the raw ones unless given.
    /// - Parameters:
    ///   - dx: The horizontal count, positive to the right.
    ///   - dy: The vertical count, positive down.
    ///   - acceleratedDX: The horizontal delta after acceleration (`dx` when `nil`).
    ///   - acceleratedDY: The vertical delta after acceleration (`dy` when `nil`).
    ///   - unacceleratedDX: The horizontal delta before acceleration, normalized to
    ///     1000 dpi (`dx` when `nil`).
    ///   - unacceleratedDY: The vertical delta before acceleration, normalized to
    ///     1000 dpi (`dy` when `nil`).
    ///   - cursor: The cursor after the motion, if one applies.
    public init(
        dx: Int32, dy: Int32, acceleratedDX: Double? = nil, acceleratedDY: Double? = nil, unacceleratedDX: Double? = nil,
        unacceleratedDY: Double? = nil, cursor: PointerCursor? = nil
    ) {
        self.dx = dx
        self.dy = dy
        self.acceleratedDX = acceleratedDX ?? Double(dx)
        self.acceleratedDY = acceleratedDY ?? Double(dy)
        self.unacceleratedDX = unacceleratedDX ?? Double(dx)
        self.unacceleratedDY = unacceleratedDY ?? Double(dy)
        self.cursor = cursor
    }
}

/// Where the pointer's cursor is: a location in one screen's pixels, and which screen of
/// the layout.
public struct PointerCursor: Sendable, Hashable {
    /// The location in the screen's pixels (as ``ScreenPoint`` measures them: after the
    /// screen's rotation), within the screen: `0 ≤ x ≤ width − 1` and the same for `y`.
    public var location: ScreenPoint
    /// The screen's index in the layout: the system's ``DeviceSettingsResolver/allScreens``
    /// (0 for the only screen).
    public var screen: Int

    /// The cursor at `location` on the layout's screen number `screen`.
    public init(location: ScreenPoint, screen: Int = 0) {
        self.location = location
        self.screen = screen
    }
}

/// Scrolling; positive is up and right. A wheel scrolls in detents (one notch is 1.0):
/// hi-res wheels report fractions (120 units per detent), and a device's low-res wheel
/// events are not counted again when it reports hi-res. Finger, edge and continuous
/// scrolling (``Source``) scroll by a distance in the pointer's pixels (libinput's scroll
/// value for those sources), and end with an event of phase ``Phase/ended`` (libinput's
/// axis stop: the fingers left; an app may start kinetic scrolling from here).
///
/// ``vertical`` and ``horizontal`` are what the pointer stage made of the scrolling
/// (natural scrolling and the scroll factor of ``PointerSettings``);
/// ``unscaledVertical`` and ``unscaledHorizontal`` are the scrolling before them, as the
/// device's wheel or the touchpad stage made it. The pointer stage scales the unscaled
/// amounts, never the amounts an event arrives with: a client of an event server whose
/// pointer stage scaled or turned the scrolling already scales it once, by its own
/// settings.
public struct ScrollEvent: Sendable, Hashable {
    /// What scrolled, as libinput's axis sources.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// A mouse wheel (`REL_WHEEL`, `REL_HWHEEL` and their hi-res forms): in detents.
        case wheel
        /// Fingers on a touchpad (two-finger scrolling): in pixels.
        case finger
        /// A finger along a touchpad's edge (edge scrolling): in pixels.
        case edge
        /// A device moving while a button is held (button scrolling, a trackball's scroll
        /// mode): in pixels, no detents.
        case continuous
    }

    /// Where in a scroll an event is (finger, edge and continuous sources).
    public enum Phase: String, Sendable, Hashable, CaseIterable {
        /// A wheel's step: no gesture around it.
        case none
        /// The first movement of a scroll.
        case began
        /// A later movement.
        case changed
        /// The scroll stopped (libinput's axis stop): the fingers lifted or stopped. Its
        /// values are 0; an app may start kinetic scrolling from the speed before it.
        case ended
    }

    /// The vertical amount, positive up (detents for a wheel, pixels otherwise), after
    /// natural scrolling and the scroll factor. Where the pointer stage is present it
    /// makes this from ``unscaledVertical``: the value an event arrives with (posted, or
    /// from an event server) is ignored.
    public var vertical: Double
    /// The horizontal amount, positive right (detents for a wheel, pixels otherwise),
    /// after natural scrolling and the scroll factor. Where the pointer stage is present
    /// it makes this from ``unscaledHorizontal``: the value an event arrives with is
    /// ignored.
    public var horizontal: Double
    /// Whether the device reports hi-res (`REL_WHEEL_HI_RES`) steps.
    public var isHighResolution: Bool
    /// What scrolled.
    public var source: Source
    /// Where in a scroll the event is (``Phase/none`` for a wheel).
    public var phase: Phase
    /// The vertical amount before natural scrolling and the scroll factor, positive up.
    public var unscaledVertical: Double
    /// The horizontal amount before natural scrolling and the scroll factor, positive right.
    public var unscaledHorizontal: Double

    /// Scrolling by `vertical` and `horizontal` (detents for a wheel); the unscaled
    /// amounts are the same unless given.
    /// - Parameters:
    ///   - vertical: The vertical amount, positive up.
    ///   - horizontal: The horizontal amount, positive right.
    ///   - isHighResolution: Whether the device reports hi-res wheel steps.
    ///   - source: What scrolled.
    ///   - phase: Where in a scroll the event is.
    ///   - unscaledVertical: The vertical amount before natural scrolling and the scroll
    ///     factor (`vertical` when `nil`).
    ///   - unscaledHorizontal: The horizontal amount before natural scrolling and the
    ///     scroll factor (`horizontal` when `nil`).
    public init(
        vertical: Double, horizontal: Double = 0, isHighResolution: Bool = false, source: Source = .wheel,
        phase: Phase = .none, unscaledVertical: Double? = nil, unscaledHorizontal: Double? = nil
    ) {
        self.vertical = vertical
        self.horizontal = horizontal
        self.isHighResolution = isHighResolution
        self.source = source
        self.phase = phase
        self.unscaledVertical = unscaledVertical ?? vertical
        self.unscaledHorizontal = unscaledHorizontal ?? horizontal
    }
}

/// An absolute position on a device without multitouch (a tablet, a single-touch screen).
public struct AbsolutePointerEvent: Sendable, Hashable {
    public var x: Int32
    public var y: Int32
    public var normalizedX: Double
    public var normalizedY: Double
    /// The location in pixels of the screen the device maps to, after its calibration and
    /// the screen's rotation; `nil` when no screen mapping applies (see ``ScreenMapper``).
    public var screenLocation: ScreenPoint?

    /// A position in device units, and the same over the axes' ranges (0…1); the screen
    /// location when one is known.
    public init(x: Int32, y: Int32, normalizedX: Double, normalizedY: Double, screenLocation: ScreenPoint? = nil) {
        self.x = x
        self.y = y
        self.normalizedX = normalizedX
        self.normalizedY = normalizedY
        self.screenLocation = screenLocation
    }
}

/// One contact of a digitizer frame.
public struct Contact: Sendable, Hashable {
    public enum Phase: String, Sendable, Hashable { case began, moved, stationary, ended, cancelled }
    /// The slot (protocol B), or the position assigned by matching (protocol A).
    public var slot: Int16 = 0
    /// The tracking id, stable from began to ended.
    public var trackingID: Int32 = -1
    public var phase: Phase = .moved
    /// Position in device units.
    public var x: Int32 = 0
    public var y: Int32 = 0
    /// Position normalized to 0…1 over the axis range.
    public var normalizedX: Double = 0
    public var normalizedY: Double = 0
    /// Position in millimetres from the axis minimum, when the device gives a resolution.
    public var millimetresX: Double?
    public var millimetresY: Double?
    /// Pressure (device units; 0 when not reported).
    public var pressure: Int32 = 0
    /// Touch major axis (device units; 0 when not reported).
    public var size: Int32 = 0
    /// Touch minor axis (device units; 0 when not reported).
    public var minor: Int32 = 0
    /// Orientation of the touch ellipse (device units; 0 when not reported).
    public var orientation: Int32 = 0
    /// Hover distance (device units; 0 when touching or not reported).
    public var distance: Int32 = 0
    /// `ABS_MT_TOOL_TYPE`: 0 finger, 1 pen, 2 palm, 0x0a dial (0 when not reported).
    public var toolType: Int32 = 0
    /// The location in pixels of the screen the device maps to, after its calibration and
    /// the screen's rotation; `nil` when no screen mapping applies (a touchpad, or a
    /// touchscreen without a screen: see ``ScreenMapper``).
    public var screenLocation: ScreenPoint?

    /// A contact; what is not given is what a device that does not report it gives
    /// (append it to a ``DigitizerFrame`` to make a multitouch event).
    public init(
        slot: Int16 = 0, trackingID: Int32 = -1, phase: Phase = .moved, x: Int32 = 0, y: Int32 = 0,
        normalizedX: Double = 0, normalizedY: Double = 0, millimetresX: Double? = nil, millimetresY: Double? = nil,
        pressure: Int32 = 0, size: Int32 = 0, minor: Int32 = 0, orientation: Int32 = 0, distance: Int32 = 0,
        toolType: Int32 = 0, screenLocation: ScreenPoint? = nil
    ) {
        self.slot = slot
        self.trackingID = trackingID
        self.phase = phase
        self.x = x
        self.y = y
        self.normalizedX = normalizedX
        self.normalizedY = normalizedY
        self.millimetresX = millimetresX
        self.millimetresY = millimetresY
        self.pressure = pressure
        self.size = size
        self.minor = minor
        self.orientation = orientation
        self.distance = distance
        self.toolType = toolType
        self.screenLocation = screenLocation
    }
}

/// All contacts of one multitouch frame.
///
/// The contacts live in a buffer the frame shares when copied (copy on write), so an
/// event carrying a frame is as cheap to queue and hand over as any other: 16 contacts
/// inline made every `HIDEvent` 1.5 KB, copied at each step of the chain. The decoder
/// reuses buffers no event holds any more, so decoding allocates nothing once warm.
public struct DigitizerFrame: Sendable {
    /// Contacts a frame holds; further slots of larger devices are not reported.
    public static let capacity = 16
    private var storage: ContactStorage
    /// Contacts in the frame.
    public private(set) var count = 0
    /// Fingers on the surface (BTN_TOOL_* counts on touchpads; contacts otherwise).
    public var fingerCount: Int = 0
    /// Whether the device is semi-multitouch: the contacts are the corners of a
    /// bounding box, not fingers.
    public var isBoundingBox = false
    /// Whether the physical button of a clickpad is down.
    public var buttonDown = false

    /// An empty frame (it takes a buffer of its own at its first contact).
    public init() { storage = ContactStorage.empty }

    /// An empty frame writing into `storage`, which the caller hands over unshared (the
    /// decoder's reused buffers).
    init(reusing storage: consuming ContactStorage) { self.storage = storage }

    /// The frame's buffer, for the decoder to take back once no event holds it.
    var buffer: ContactStorage { storage }

    /// Appends a contact (ignored past ``capacity``).
    public mutating func append(_ contact: Contact) {
        guard count < Self.capacity else { return }
        makeUnique()
        storage.items[count] = contact
        count += 1
    }

    public subscript(index: Int) -> Contact {
        precondition(index >= 0 && index < count, "contact index out of range")
        return storage.items[index]
    }

    /// Replaces the contact at `index`.
    mutating func replace(at index: Int, with contact: Contact) {
        precondition(index >= 0 && index < count, "contact index out of range")
        makeUnique()
        storage.items[index] = contact
    }

    /// Sets every contact's screen location through `mapping`, in place when the buffer
    /// is not shared.
    mutating func mapContacts(through mapping: ScreenMapping) {
        guard count > 0 else { return }
        makeUnique()
        for index in 0..<count {
            let contact = storage.items[index]
            storage.items[index].screenLocation = mapping.location(normalizedX: contact.normalizedX, normalizedY: contact.normalizedY)
        }
    }

    /// Removes the contact with `trackingID`, if there is one (order kept).
    mutating func remove(trackingID: Int32) {
        guard let index = (0..<count).first(where: { storage.items[$0].trackingID == trackingID }) else { return }
        makeUnique()
        for next in (index + 1)..<max(index + 1, count) { storage.items[next - 1] = storage.items[next] }
        count -= 1
    }

    /// The contacts as an array (allocates; for convenience outside hot paths).
    public var contacts: [Contact] { (0..<count).map { storage.items[$0] } }

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }
}

/// The contacts of a ``DigitizerFrame``.
typealias ContactStorage = FixedBuffer<Contact>

extension FixedBuffer where Element == Contact {
    /// A buffer of ``DigitizerFrame/capacity`` contacts.
    convenience init() { self.init(capacity: DigitizerFrame.capacity, repeating: Contact()) }

    /// The buffer of empty frames: always shared (this reference holds it), so the first
    /// contact appended copies it out and making an empty frame allocates nothing.
    static let empty = ContactStorage()
}

/// A pen (stylus or eraser) over or on a tablet.
public struct PenEvent: Sendable, Hashable {
    public enum Tool: String, Sendable, Hashable { case pen, eraser, brush, pencil, airbrush, mouse, lens }
    public var tool: Tool
    /// In proximity (hovering or touching).
    public var inProximity: Bool
    /// Tip touching the surface.
    public var touching: Bool
    public var x: Int32
    public var y: Int32
    public var normalizedX: Double
    public var normalizedY: Double
    /// Pressure normalized to 0…1.
    public var pressure: Double
    /// Distance (device units; 0 when touching or not reported).
    public var distance: Int32
    /// Tilt in degrees when the device gives a resolution, else device units.
    public var tiltX: Double
    public var tiltY: Double
    /// Barrel buttons held (1 = BTN_STYLUS, 2 = BTN_STYLUS2, 4 = BTN_STYLUS3).
    public var barrelButtons: UInt8
    /// The location in pixels of the screen the tablet maps to, after its calibration and
    /// the screen's rotation; `nil` when no screen mapping applies (see ``ScreenMapper``).
    public var screenLocation: ScreenPoint?

    /// A pen event; what is not given is what a pen that does not report it gives.
    public init(
        tool: Tool = .pen, inProximity: Bool, touching: Bool, x: Int32, y: Int32, normalizedX: Double,
        normalizedY: Double, pressure: Double = 0, distance: Int32 = 0, tiltX: Double = 0, tiltY: Double = 0,
        barrelButtons: UInt8 = 0, screenLocation: ScreenPoint? = nil
    ) {
        self.tool = tool
        self.inProximity = inProximity
        self.touching = touching
        self.x = x
        self.y = y
        self.normalizedX = normalizedX
        self.normalizedY = normalizedY
        self.pressure = pressure
        self.distance = distance
        self.tiltX = tiltX
        self.tiltY = tiltY
        self.barrelButtons = barrelButtons
        self.screenLocation = screenLocation
    }
}

/// A gamepad button.
public struct GamepadButtonEvent: Sendable, Hashable {
    public var code: UInt16
    public var isDown: Bool

    /// A gamepad button (`BTN_SOUTH`…) going down or up.
    public init(code: UInt16, isDown: Bool) {
        self.code = code
        self.isDown = isDown
    }
}

/// A gamepad axis (sticks, triggers, d-pad hat).
public struct GamepadAxisEvent: Sendable, Hashable {
    public var code: UInt16
    public var value: Int32
    /// −1…1 for centred axes, 0…1 for triggers.
    public var normalized: Double

    /// A gamepad axis's new `value` (device units) and the same over its range.
    public init(code: UInt16, value: Int32, normalized: Double) {
        self.code = code
        self.value = value
        self.normalized = normalized
    }
}

/// An axis that no other event describes, so that nothing a device reports is lost:
/// a tablet pad's touch ring (`ABS_WHEEL`) and strips (`ABS_RX`, `ABS_RY`), `ABS_MISC`,
/// a pen's rotation (`ABS_Z`) or airbrush wheel, throttle and rudder on a device that is
/// not a gamepad, the extra axes of a HID device, `REL_Z`, `REL_RX`… of a 3D mouse.
public struct AxisEvent: Sendable, Hashable {
    /// Whether the value is a position (`EV_ABS`) or a change (`EV_REL`).
    public enum Source: String, Sendable, Hashable { case absolute, relative }
    public var source: Source
    /// The Linux code (`ABS_WHEEL` is 0x08).
    public var code: UInt16
    /// The new value (absolute) or the change (relative).
    public var value: Int32
    /// The value over the axis range, 0…1, for absolute axes with a range; `nil` otherwise.
    public var normalized: Double?

    /// An axis's new value (``Source/absolute``) or change (``Source/relative``).
    public init(source: Source, code: UInt16, value: Int32, normalized: Double? = nil) {
        self.source = source
        self.code = code
        self.value = value
        self.normalized = normalized
    }
}

/// A switch (lid, tablet mode, headphone jack…).
public struct SwitchEvent: Sendable, Hashable {
    public var code: UInt16
    public var isOn: Bool

    /// A switch (`SW_LID`…) turning on or off.
    public init(code: UInt16, isOn: Bool) {
        self.code = code
        self.isOn = isOn
    }
}
