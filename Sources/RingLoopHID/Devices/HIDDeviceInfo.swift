import CLibEvdev

#if canImport(Glibc)
import Glibc
import RingLoopEvdev
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
    /// Keys or buttons only (a power button, a remote).
    case buttons
    /// Anything else (a rotary encoder…).
    case other
}

/// An attached device: where it is, what it says about itself, and its class.
public struct HIDDeviceInfo: Sendable, Hashable {
    public var id: HIDDeviceID
    /// The device node (`/dev/input/event3`).
    public var path: String
    public var name: String
    public var busType: UInt16
    public var vendor: UInt16
    public var product: UInt16
    public var version: UInt16
    public var deviceClass: HIDDeviceClass
    /// Every role its capabilities give it (``deviceClass`` among them): a keyboard with a
    /// touchpad on one node is `[.keyboard, .pointer]`. Handlers filtering by class match
    /// any role.
    public var roles: Set<HIDDeviceClass> = []
    /// Absolute axes by code.
    public var axes: [UInt16: AbsoluteAxis]
    /// Multitouch slots (0 for none).
    public var slotCount: Int
    /// Reports multitouch without slots (protocol A).
    public var isProtocolA: Bool
    /// Has `ABS_MT_SLOT` and `ABS_RESERVED` (0x2e): a HID device whose many axes spill
    /// into the multitouch codes. udev and libevdev treat it as having no multitouch, and
    /// so does the decoder: its codes from 0x2f on are ordinary axes.
    public var isFakeMultitouch: Bool {
        has(type: 3, code: 0x2e) && has(type: 3, code: 0x2f)
    }
    /// `INPUT_PROP_SEMI_MT`: the slots are a bounding box.
    public var isSemiMultitouch: Bool
    /// Has `REL_WHEEL_HI_RES`.
    public var hasHighResolutionWheel: Bool
    /// Has `REL_HWHEEL_HI_RES`.
    public var hasHighResolutionHorizontalWheel: Bool
    /// LEDs the device has (`LED_NUML`…).
    public var leds: Set<UInt16>
    /// Codes per event type.
    public var codes: [UInt16: Set<UInt16>]
    /// `INPUT_PROP_*` bits.
    public var properties: Set<UInt16>

    public func has(type: UInt16, code: UInt16) -> Bool { codes[type]?.contains(code) ?? false }

    /// Reads the description through libevdev from an open node.
    static func read(fd: Int32, id: HIDDeviceID, path: String) -> Result<HIDDeviceInfo, HIDError> {
        var handle: OpaquePointer?
        let result = libevdev_new_from_fd(fd, &handle)
        guard result == 0, let device = handle else {
            return .failure(.describe(path: path, errno: -result))
        }
        defer { libevdev_free(device) }
        let maxima: [UInt16: UInt16] = [1: 0x2ff, 2: 0x0f, 3: 0x3f, 4: 0x07, 5: 0x10, 0x11: 0x0f, 0x12: 0x07]
        var codes: [UInt16: Set<UInt16>] = [:]
        var axes: [UInt16: AbsoluteAxis] = [:]
        for (type, maximum) in maxima where libevdev_has_event_type(device, UInt32(type)) == 1 {
            var set = Set<UInt16>()
            for code in 0...maximum where libevdev_has_event_code(device, UInt32(type), UInt32(code)) == 1 {
                set.insert(code)
                if type == 3, let info = libevdev_get_abs_info(device, UInt32(code))?.pointee {
                    axes[code] = AbsoluteAxis(minimum: info.minimum, maximum: info.maximum, resolution: info.resolution)
                }
            }
            codes[type] = set
        }
        var properties = Set<UInt16>()
        for property in UInt16(0)...0x1f where libevdev_has_property(device, UInt32(property)) == 1 {
            properties.insert(property)
        }
        let name = libevdev_get_name(device).map { String(cString: $0) } ?? ""
        let fakeMultitouch = codes[3]?.contains(0x2e) == true && codes[3]?.contains(0x2f) == true
        // libevdev reports -1 slots for a device with ABS_RESERVED; never more than the
        // decoder keeps per frame is used, but the count is the device's.
        let slots = fakeMultitouch || codes[3]?.contains(0x2f) != true ? 0 : max(0, Int(libevdev_get_num_slots(device)))
        var info = HIDDeviceInfo(
            id: id, path: path, name: name, busType: UInt16(truncatingIfNeeded: libevdev_get_id_bustype(device)),
            vendor: UInt16(truncatingIfNeeded: libevdev_get_id_vendor(device)),
            product: UInt16(truncatingIfNeeded: libevdev_get_id_product(device)),
            version: UInt16(truncatingIfNeeded: libevdev_get_id_version(device)), deviceClass: .other, axes: axes,
            slotCount: slots,
            isProtocolA: slots == 0 && !fakeMultitouch && codes[3]?.contains(0x35) == true && codes[3]?.contains(0x36) == true,
            isSemiMultitouch: properties.contains(3),
            hasHighResolutionWheel: codes[2]?.contains(0x0b) == true,
            hasHighResolutionHorizontalWheel: codes[2]?.contains(0x0c) == true,
            leds: codes[0x11] ?? [], codes: codes, properties: properties)
        info.deviceClass = classify(info)
        info.roles = roles(codes: codes, properties: properties)
        return .success(info)
    }

    /// A device described in code rather than read from a node: for decoders fed from
    /// memory (benchmarks, fuzzing, tests). Classified, and its multitouch kind worked
    /// out, as for a node (`ABS_MT_SLOT`'s range gives the slots unless `ABS_RESERVED`
    /// makes it "fake MT"; at most 1024, as the kernel allows).
    public static func describing(
        id: HIDDeviceID = HIDDeviceID(rawValue: 1), path: String = "(memory)", name: String,
        busType: UInt16 = 0, vendor: UInt16 = 0, product: UInt16 = 0, version: UInt16 = 0,
        codes: [UInt16: Set<UInt16>], axes: [UInt16: AbsoluteAxis], properties: Set<UInt16>
    ) -> HIDDeviceInfo {
        let absolute = codes[3] ?? []
        let fakeMultitouch = absolute.contains(0x2e) && absolute.contains(0x2f)
        var slots = 0
        if !fakeMultitouch, absolute.contains(0x2f), let range = axes[0x2f], range.minimum == 0, range.maximum >= 0,
            range.maximum < 1024
        {
            slots = Int(range.maximum) + 1
        }
        var info = HIDDeviceInfo(
            id: id, path: path, name: name, busType: busType, vendor: vendor, product: product, version: version,
            deviceClass: .other, axes: axes, slotCount: slots,
            isProtocolA: slots == 0 && !fakeMultitouch && absolute.contains(0x35) && absolute.contains(0x36),
            isSemiMultitouch: properties.contains(3), hasHighResolutionWheel: codes[2]?.contains(0x0b) == true,
            hasHighResolutionHorizontalWheel: codes[2]?.contains(0x0c) == true, leds: codes[0x11] ?? [], codes: codes,
            properties: properties)
        info.deviceClass = classify(codes: codes, properties: properties)
        info.roles = roles(codes: codes, properties: properties)
        return info
    }

    /// Classifies like udev's `input_id` builtin (and so libinput): tablets have a pen
    /// or stylus, tablet pads a tablet's buttons (`BTN_0`) and stylus bit but no pen,
    /// touchpads indirect finger surfaces, touchscreens direct or touch surfaces, pointers
    /// relative motion with mouse buttons (or absolute axes with mouse buttons and no touch,
    /// as virtual machines' tablets), then gamepads, joysticks, keyboards, switches.
    static func classify(_ info: HIDDeviceInfo) -> HIDDeviceClass {
        classify(codes: info.codes, properties: info.properties)
    }

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

    init(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) {
        let keyCodes = codes[1] ?? []
        let absolute = codes[3] ?? []
        let relative = codes[2] ?? []
        let hasAbsoluteCoordinates = absolute.contains(0x00) && absolute.contains(0x01)
        // A device with ABS_MT_SLOT and the code below it claims every axis; its
        // multitouch codes are not multitouch.
        let hasMultitouchCoordinates =
            absolute.contains(0x35) && absolute.contains(0x36) && !(absolute.contains(0x2f) && absolute.contains(0x2e))
        let hasStylus = keyCodes.contains(0x14b)  // BTN_STYLUS
        let hasPen = keyCodes.contains(0x140)  // BTN_TOOL_PEN
        let fingerButNoPen = keyCodes.contains(0x145) && !hasPen  // BTN_TOOL_FINGER
        let hasMouseButton = (0x110..<0x120).contains { keyCodes.contains(UInt16($0)) }  // BTN_MOUSE…
        let hasRelativeCoordinates = relative.contains(0x00) && relative.contains(0x01)
        let isDirect = properties.contains(1)  // INPUT_PROP_DIRECT
        let hasTouch = keyCodes.contains(0x14a)  // BTN_TOUCH
        let hasPadButtons = keyCodes.contains(0x100) && hasStylus && !hasPen  // BTN_0
        var hasJoystickControls = false
        if !keyCodes.contains(0x11f) {  // a mouse with more than 16 buttons reaches BTN_JOYSTICK
            hasJoystickControls =
                (0x120..<0x140).contains { keyCodes.contains(UInt16($0)) }  // BTN_JOYSTICK … BTN_DIGI
                || (0x2c0...0x2e7).contains { keyCodes.contains(UInt16($0)) }  // BTN_TRIGGER_HAPPY
                || (0x220...0x223).contains { keyCodes.contains(UInt16($0)) }  // BTN_DPAD_*
        }
        hasJoystickControls = hasJoystickControls || (0x03..<0x18).contains { absolute.contains(UInt16($0)) }  // ABS_RX…

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
        gamepad = joystick && (keyCodes.contains(0x130) || keyCodes.contains(0x131))  // BTN_SOUTH, BTN_EAST
        // A full keyboard has ESC, the digits and Q to D (the first 32 codes).
        keyboard = (1..<32).allSatisfy { keyCodes.contains(UInt16($0)) }
        switches = !(codes[5] ?? []).isEmpty
        keys = !keyCodes.isEmpty
    }

    /// The main role, most specific first.
    var primary: HIDDeviceClass {
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

/// Why a device could not be used.
public enum HIDError: Error, Hashable, Sendable, CustomStringConvertible {
    case open(path: String, errno: Int32)
    case describe(path: String, errno: Int32)
    case directory(path: String, errno: Int32)
    case ring(String)
    /// A setting of the event system that cannot be honoured, and why.
    case configuration(String)

    public var description: String {
        switch self {
        case .open(let path, let errno):
            let hint = errno == EACCES || errno == EPERM
                ? " (add the user to group 'input', or run as root)" : ""
            return "\(path): cannot open: \(String(cString: strerror(errno)))\(hint)"
        case .describe(let path, let errno): return "\(path): not an evdev device: \(String(cString: strerror(errno)))"
        case .directory(let path, let errno): return "\(path): cannot watch: \(String(cString: strerror(errno)))"
        case .ring(let message): return message
        case .configuration(let message): return message
        }
    }
}
