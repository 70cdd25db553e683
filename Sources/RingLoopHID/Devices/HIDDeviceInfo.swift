import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// What kind of device it is, classified from its capabilities as udev and libinput do.
///
/// The class is the device's main role; the events a device yields follow its
/// capabilities, not its class alone (a touch mouse is a pointer whose touches arrive as
/// digitizer frames; a keyboard with a pointing stick yields keys and motion).
public enum HIDDeviceClass: String, Sendable, Hashable, CaseIterable {
    case keyboard, pointer, touchpad, touchscreen, tablet
    /// The buttons, rings, strips and dials of a tablet (`BTN_0`… with a tablet's axes
    /// and no pen).
    case tabletPad
    case gamepad, joystick
    /// Lid, tablet-mode and other switches.
    case `switch`
    /// Accelerometers and gyroscopes (udev's `ID_INPUT_ACCELEROMETER`): a node with
    /// `INPUT_PROP_ACCELEROMETER` (a DualSense's or DualShock 4's "Motion Sensors", a
    /// Joy-Con's IMU), or with `ABS_X`, `ABS_Y` and `ABS_Z` and no keys at all (older
    /// laptop and tablet accelerometers). Its axes yield ``MotionEvent``s.
    case motion
    /// Keys or buttons only (a power button, a remote).
    case buttons
    /// Anything else (a rotary encoder…).
    case other
}

/// An attached device: where it is, its `InputDeviceDescription` (RingLoopEvdev: what it
/// says about itself, the one description type of the package), and what the chain derives from
/// that: its class and roles, and its multitouch kind.
///
/// The description is kept for its identity and capabilities; the state it was taken with
/// (keys down, LEDs lit, switches set, key repeat) is cleared, because the chain tracks
/// state itself (the decoder, at attach and after a loss) and two descriptions of one
/// device must compare equal whenever they were taken.
public struct HIDDeviceInfo: Sendable, Hashable {
    /// The id the event system gave the device (unique while it runs).
    public internal(set) var id: HIDDeviceID
    /// The device node (`/dev/input/event3`).
    public internal(set) var path: String
    /// What the device says about itself: name, ids, `phys` and `uniq`, properties, codes
    /// and absolute axes (without the state it was taken with).
    public private(set) var description: InputDeviceDescription
    /// The device's main role, classified from its capabilities.
    public private(set) var deviceClass: HIDDeviceClass
    /// Every role its capabilities give it (``deviceClass`` among them): a keyboard with a
    /// touchpad on one node is `[.keyboard, .pointer]`. Handlers filtering by class match
    /// any role.
    public private(set) var roles: Set<HIDDeviceClass>
    /// Multitouch slots (0 for none).
    public private(set) var slotCount: Int
    /// Reports multitouch without slots (protocol A).
    public private(set) var isProtocolA: Bool
    /// `INPUT_PROP_SEMI_MT`: the slots are a bounding box.
    public private(set) var isSemiMultitouch: Bool
    /// Has `REL_WHEEL_HI_RES`.
    public private(set) var hasHighResolutionWheel: Bool
    /// Has `REL_HWHEEL_HI_RES`.
    public private(set) var hasHighResolutionHorizontalWheel: Bool

    /// Describes a device for the chain: classified, and its multitouch kind worked out
    /// (`ABS_MT_SLOT`'s range gives the slots, from 0 and at most 1024 as the kernel
    /// allows, unless `ABS_RESERVED` makes it "fake MT"; protocol A is multitouch
    /// positions without slots). For a node, for a recording's device, or for decoders fed
    /// from memory (benchmarks, fuzzing, tests).
    public init(description: InputDeviceDescription, id: HIDDeviceID = HIDDeviceID(rawValue: 1), path: String = "(memory)") {
        var slots = 0
        if let range = description.absoluteAxes[Evdev.ABS_MT_SLOT], range.minimum == 0, range.maximum >= 0,
            Int(range.maximum) < Evdev.maximumSlotCount
        {
            slots = Int(range.maximum) + 1
        }
        self.init(description: description, id: id, path: path, slots: slots)
    }

    /// The one place the derived fields are worked out. `slots` is the count for a device
    /// with `ABS_MT_SLOT`; it counts only without "fake MT".
    init(description: InputDeviceDescription, id: HIDDeviceID, path: String, slots: Int) {
        var description = description
        description.ledStates = [:]
        description.switchStates = [:]
        description.keysDown = []
        description.keyRepeat = nil
        let codes = description.codes
        let absolute = codes[Evdev.EV_ABS] ?? []
        let fakeMultitouch = absolute.contains(Evdev.ABS_RESERVED) && absolute.contains(Evdev.ABS_MT_SLOT)
        let slotCount = fakeMultitouch || !absolute.contains(Evdev.ABS_MT_SLOT) ? 0 : slots
        self.id = id
        self.path = path
        self.description = description
        self.slotCount = slotCount
        self.isProtocolA =
            slotCount == 0 && !fakeMultitouch && absolute.contains(Evdev.ABS_MT_POSITION_X)
            && absolute.contains(Evdev.ABS_MT_POSITION_Y)
        // Stored, not computed from the description: the decoder asks for these per frame.
        self.isSemiMultitouch = description.properties.contains(Evdev.INPUT_PROP_SEMI_MT)
        let relative = codes[Evdev.EV_REL] ?? []
        self.hasHighResolutionWheel = relative.contains(Evdev.REL_WHEEL_HI_RES)
        self.hasHighResolutionHorizontalWheel = relative.contains(Evdev.REL_HWHEEL_HI_RES)
        let roles = DeviceRoles(codes: codes, properties: description.properties)
        self.deviceClass = roles.primary
        self.roles = roles.all
    }
}

extension HIDDeviceInfo {
    /// The device's name.
    public internal(set) var name: String {
        get { description.name }
        set { description.name = newValue }
    }
    /// The bus (`BUS_USB`…).
    public internal(set) var busType: UInt16 {
        get { description.busType }
        set { description.busType = newValue }
    }
    /// The vendor id.
    public internal(set) var vendor: UInt16 {
        get { description.vendor }
        set { description.vendor = newValue }
    }
    /// The product id.
    public internal(set) var product: UInt16 {
        get { description.product }
        set { description.product = newValue }
    }
    /// The product's version.
    public internal(set) var version: UInt16 {
        get { description.version }
        set { description.version = newValue }
    }
    /// Where the device is attached, as the kernel says (`phys`: `usb-0000:00:14.0-2/input3`,
    /// a Bluetooth adapter's address); empty when it says nothing.
    public internal(set) var physicalLocation: String {
        get { description.physicalLocation }
        set { description.physicalLocation = newValue }
    }
    /// The device's own identifier (`uniq`: a serial number, a Bluetooth controller's
    /// address); empty when it has none.
    public internal(set) var uniqueIdentifier: String {
        get { description.uniqueIdentifier }
        set { description.uniqueIdentifier = newValue }
    }
    /// Absolute axes by code.
    public var axes: [UInt16: AbsoluteAxis] { description.absoluteAxes }
    /// Codes per event type (`EV_SYN` lists the types).
    public var codes: [UInt16: Set<UInt16>] { description.codes }
    /// `INPUT_PROP_*` bits.
    public var properties: Set<UInt16> { description.properties }
    /// LEDs the device has (`LED_NUML`…).
    public var leds: Set<UInt16> { description.codes[Evdev.EV_LED] ?? [] }
    /// Has `ABS_MT_SLOT` and `ABS_RESERVED` (0x2e): a HID device whose many axes spill
    /// into the multitouch codes. udev and libevdev treat it as having no multitouch, and
    /// so does the decoder: its codes from 0x2f on are ordinary axes.
    public var isFakeMultitouch: Bool {
        has(type: Evdev.EV_ABS, code: Evdev.ABS_RESERVED) && has(type: Evdev.EV_ABS, code: Evdev.ABS_MT_SLOT)
    }

    /// The physical device the node belongs to, as libinput groups nodes: nodes with the
    /// same bus, vendor and product and the same `uniq` (or, without one, the same
    /// `phys` up to its last `/inputN` part) are one device — a DualSense's gamepad,
    /// motion sensors and touchpad, a tablet's pen and pad. `nil` when the kernel gives
    /// neither. See ``HIDEventSystem/siblings(of:)``.
    public var physicalDevice: String? {
        func hex(_ value: UInt16) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
        let prefix = hex(busType) + ":" + hex(vendor) + ":" + hex(product) + ":"
        if !uniqueIdentifier.isEmpty { return prefix + "uniq=" + uniqueIdentifier }
        guard !physicalLocation.isEmpty else { return nil }
        var location = Substring(physicalLocation)
        if let slash = location.lastIndex(of: "/"), location[location.index(after: slash)...].hasPrefix("input") {
            location = location[..<slash]
        }
        return prefix + "phys=" + location
    }

    /// The device as `deviceClass` (a settings file's `class`, udev's `ID_INPUT_*`
    /// override): its main class is `deviceClass` and its roles are `deviceClass` alone, as
    /// libinput takes udev's tags as the truth about what a device is. Every stage sees
    /// it so: the decoder, the recognizers, coalescing, class filters, the screen mapping.
    func treated(as deviceClass: HIDDeviceClass) -> HIDDeviceInfo {
        var info = self
        info.deviceClass = deviceClass
        info.roles = [deviceClass]
        return info
    }

    /// Whether the device can send `code` of `type`.
    public func has(type: UInt16, code: UInt16) -> Bool { description.has(type: type, code: code) }

    /// Reads the description through libevdev from an open node. The slot count is
    /// libevdev's (-1, so none, for a device with `ABS_RESERVED`, "fake MT").
    static func read(fd: Int32, id: HIDDeviceID, path: String) -> Result<HIDDeviceInfo, HIDError> {
        do throws(EvdevError) {
            let (description, slots) = try InputDeviceDescription.readWithSlots(fileDescriptor: fd)
            return .success(HIDDeviceInfo(description: description, id: id, path: path, slots: max(0, Int(slots))))
        } catch {
            return .failure(.describe(path: path, errno: error.errno))
        }
    }

    /// A device described in code: the description made of these fields, as
    /// ``init(description:id:path:)`` takes it.
    public static func describing(
        id: HIDDeviceID = HIDDeviceID(rawValue: 1), path: String = "(memory)", name: String,
        busType: UInt16 = 0, vendor: UInt16 = 0, product: UInt16 = 0, version: UInt16 = 0,
        codes: [UInt16: Set<UInt16>], axes: [UInt16: AbsoluteAxis], properties: Set<UInt16>,
        physicalLocation: String = "", uniqueIdentifier: String = ""
    ) -> HIDDeviceInfo {
        let description = InputDeviceDescription(
            name: name, busType: busType, vendor: vendor, product: product, version: version,
            physicalLocation: physicalLocation, uniqueIdentifier: uniqueIdentifier, properties: properties, codes: codes,
            absoluteAxes: axes)
        return HIDDeviceInfo(description: description, id: id, path: path)
    }

    /// Classifies like udev's `input_id` builtin (and so libinput): tablets have a pen
    /// or stylus, tablet pads a tablet's buttons (`BTN_0`) and stylus bit but no pen,
    /// touchpads indirect finger surfaces, touchscreens direct or touch surfaces, pointers
    /// relative motion with mouse buttons (or absolute axes with mouse buttons and no touch,
    /// as virtual machines' tablets), then gamepads, joysticks, keyboards, switches.
    /// Classifies from capabilities alone (codes per type and properties).
    public static func classify(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) -> HIDDeviceClass {
        DeviceRoles(codes: codes, properties: properties).primary
    }

    /// Every role the capabilities give a device, as udev sets several `ID_INPUT_*`
    /// properties for one node: a wireless keyboard with a touchpad on one node is a
    /// keyboard and a pointer. The primary class is one of them.
    public static func roles(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) -> Set<HIDDeviceClass> {
        DeviceRoles(codes: codes, properties: properties).all
    }
}

/// udev's `input_id` tests, once: which roles a node's capabilities give it.
struct DeviceRoles {
    var tablet = false
    var tabletPad = false
    var touchpad = false
    var touchscreen = false
    var pointer = false
    var joystick = false
    var gamepad = false
    var keyboard = false
    var switches = false
    var keys = false
    var motion = false

    init(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) {
        let keyCodes = codes[Evdev.EV_KEY] ?? []
        let absolute = codes[Evdev.EV_ABS] ?? []
        let hasAbsoluteCoordinates = absolute.contains(Evdev.ABS_X) && absolute.contains(Evdev.ABS_Y)
        // udev's first test: the property, or three absolute axes on a node without the
        // key type, make an accelerometer, and no pointer role is tested further.
        motion =
            properties.contains(Evdev.INPUT_PROP_ACCELEROMETER)
            || (codes[Evdev.EV_KEY] == nil && hasAbsoluteCoordinates && absolute.contains(Evdev.ABS_Z))
        // A full keyboard has ESC, the digits and Q to S (the first 32 codes, as udev tests).
        keyboard = (Evdev.KEY_ESC..<Evdev.KEY_D).allSatisfy { keyCodes.contains($0) }
        switches = !(codes[Evdev.EV_SW] ?? []).isEmpty
        keys = !keyCodes.isEmpty
        if !motion { testPointers(codes: codes, properties: properties) }
    }

    /// udev's `test_pointers`, for a node that is not an accelerometer.
    private mutating func testPointers(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) {
        let keyCodes = codes[Evdev.EV_KEY] ?? []
        let absolute = codes[Evdev.EV_ABS] ?? []
        let relative = codes[Evdev.EV_REL] ?? []
        let hasAbsoluteCoordinates = absolute.contains(Evdev.ABS_X) && absolute.contains(Evdev.ABS_Y)
        // A device with ABS_MT_SLOT and the code below it claims every axis; its
        // multitouch codes are not multitouch.
        let hasMultitouchCoordinates =
            absolute.contains(Evdev.ABS_MT_POSITION_X) && absolute.contains(Evdev.ABS_MT_POSITION_Y)
            && !(absolute.contains(Evdev.ABS_MT_SLOT) && absolute.contains(Evdev.ABS_RESERVED))
        let hasStylus = keyCodes.contains(Evdev.BTN_STYLUS)
        let hasPen = keyCodes.contains(Evdev.BTN_TOOL_PEN)
        let fingerButNoPen = keyCodes.contains(Evdev.BTN_TOOL_FINGER) && !hasPen
        let hasMouseButton = (Evdev.BTN_MOUSE..<Evdev.BTN_JOYSTICK).contains { keyCodes.contains($0) }
        let hasRelativeCoordinates = relative.contains(Evdev.REL_X) && relative.contains(Evdev.REL_Y)
        let isDirect = properties.contains(Evdev.INPUT_PROP_DIRECT)
        let hasTouch = keyCodes.contains(Evdev.BTN_TOUCH)
        let hasPadButtons = keyCodes.contains(Evdev.BTN_0) && hasStylus && !hasPen
        var hasJoystickControls = false
        // A mouse with more than 16 buttons reaches BTN_JOYSTICK; its last button tells.
        if !keyCodes.contains(Evdev.BTN_JOYSTICK - 1) {
            hasJoystickControls =
                (Evdev.BTN_JOYSTICK..<Evdev.BTN_DIGI).contains { keyCodes.contains($0) }
                || (Evdev.BTN_TRIGGER_HAPPY1...Evdev.BTN_TRIGGER_HAPPY40).contains { keyCodes.contains($0) }
                || (Evdev.BTN_DPAD_UP...Evdev.BTN_DPAD_RIGHT).contains { keyCodes.contains($0) }
        }
        // ABS_RX … ABS_BRAKE and the rest below ABS_PRESSURE: sticks, throttles, pedals.
        hasJoystickControls = hasJoystickControls || (Evdev.ABS_RX..<Evdev.ABS_PRESSURE).contains { absolute.contains($0) }

        if hasAbsoluteCoordinates {
            if hasStylus || hasPen {
                tablet = true
            } else if fingerButNoPen && !isDirect {
                touchpad = true
            } else if hasMouseButton {
                pointer = true  // virtual machines' absolute mice
            } else if hasTouch || isDirect {
                touchscreen = true
            } else if hasJoystickControls {
                joystick = true
            }
        } else if hasJoystickControls {
            joystick = true
        }
        if hasMultitouchCoordinates {
            if hasStylus || hasPen {
                tablet = true
            } else if fingerButNoPen && !isDirect {
                touchpad = true
            } else if hasTouch || isDirect {
                touchscreen = true
            }
        }
        if tablet && hasPadButtons { tabletPad = true }
        if !tablet && !touchpad && !joystick && hasMouseButton && (hasRelativeCoordinates || !hasAbsoluteCoordinates) {
            pointer = true
        }
        gamepad = joystick && (keyCodes.contains(Evdev.BTN_SOUTH) || keyCodes.contains(Evdev.BTN_EAST))
    }

    /// The main role, most specific first.
    var primary: HIDDeviceClass {
        if motion { return .motion }
        if tabletPad { return .tabletPad }
        if tablet { return .tablet }
        if touchpad { return .touchpad }
        if touchscreen { return .touchscreen }
        if keyboard { return .keyboard }  // a combo receiver's keyboard comes first
        if pointer { return .pointer }
        if gamepad { return .gamepad }
        if joystick { return .joystick }
        if switches && !keys { return .switch }
        if keys { return .buttons }
        if switches { return .switch }
        return .other
    }

    var all: Set<HIDDeviceClass> {
        var roles: Set<HIDDeviceClass> = [primary]
        if motion { roles.insert(.motion) }
        if tabletPad { roles.insert(.tabletPad) } else if tablet { roles.insert(.tablet) }
        if touchpad { roles.insert(.touchpad) }
        if touchscreen { roles.insert(.touchscreen) }
        if pointer { roles.insert(.pointer) }
        if gamepad { roles.insert(.gamepad) } else if joystick { roles.insert(.joystick) }
        if keyboard { roles.insert(.keyboard) }
        if switches { roles.insert(.switch) }
        if keys && roles.isDisjoint(with: [.keyboard, .pointer, .gamepad, .joystick, .tabletPad, .tablet]) {
            roles.insert(.buttons)
        }
        return roles
    }
}
