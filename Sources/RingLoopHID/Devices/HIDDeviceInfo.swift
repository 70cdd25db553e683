import CLibEvdev

#if canImport(Glibc)
import Glibc
#endif

/// What kind of device it is, classified from its capabilities as udev and libinput do.
public enum HIDDeviceClass: String, Sendable, Hashable, CaseIterable {
    case keyboard, pointer, touchpad, touchscreen, tablet, gamepad, joystick
    /// Lid, tablet-mode and other switches.
    case `switch`
    /// Keys or buttons only (a power button, a remote).
    case buttons
    /// Anything else (a rotary encoder…).
    case other
}

/// An axis range with its resolution.
public struct AxisRange: Sendable, Hashable {
    public var minimum: Int32
    public var maximum: Int32
    /// Units per millimetre (per radian for rotation), 0 when unknown.
    public var resolution: Int32

    public init(minimum: Int32, maximum: Int32, resolution: Int32) {
        self.minimum = minimum
        self.maximum = maximum
        self.resolution = resolution
    }

    /// `value` scaled to 0…1 over the range.
    @inline(__always)
    public func normalized(_ value: Int32) -> Double {
        maximum > minimum ? Double(Int64(value) - Int64(minimum)) / Double(Int64(maximum) - Int64(minimum)) : 0
    }

    /// `value` in millimetres from the minimum, when the resolution is known.
    @inline(__always)
    public func millimetres(_ value: Int32) -> Double? {
        resolution > 0 ? Double(Int64(value) - Int64(minimum)) / Double(resolution) : nil
    }
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
    /// Absolute axes by code.
    public var axes: [UInt16: AxisRange]
    /// Multitouch slots (0 for none).
    public var slotCount: Int
    /// Reports multitouch without slots (protocol A).
    public var isProtocolA: Bool
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
        var axes: [UInt16: AxisRange] = [:]
        for (type, maximum) in maxima where libevdev_has_event_type(device, UInt32(type)) == 1 {
            var set = Set<UInt16>()
            for code in 0...maximum where libevdev_has_event_code(device, UInt32(type), UInt32(code)) == 1 {
                set.insert(code)
                if type == 3, let info = libevdev_get_abs_info(device, UInt32(code))?.pointee {
                    axes[code] = AxisRange(minimum: info.minimum, maximum: info.maximum, resolution: info.resolution)
                }
            }
            codes[type] = set
        }
        var properties = Set<UInt16>()
        for property in UInt16(0)...0x1f where libevdev_has_property(device, UInt32(property)) == 1 {
            properties.insert(property)
        }
        let name = libevdev_get_name(device).map { String(cString: $0) } ?? ""
        let hasSlots = codes[3]?.contains(0x2f) == true
        var info = HIDDeviceInfo(
            id: id, path: path, name: name, busType: UInt16(truncatingIfNeeded: libevdev_get_id_bustype(device)),
            vendor: UInt16(truncatingIfNeeded: libevdev_get_id_vendor(device)),
            product: UInt16(truncatingIfNeeded: libevdev_get_id_product(device)),
            version: UInt16(truncatingIfNeeded: libevdev_get_id_version(device)), deviceClass: .other, axes: axes,
            slotCount: hasSlots ? Int(libevdev_get_num_slots(device)) : 0,
            isProtocolA: !hasSlots && codes[3]?.contains(0x35) == true,
            isSemiMultitouch: properties.contains(3),
            hasHighResolutionWheel: codes[2]?.contains(0x0b) == true,
            hasHighResolutionHorizontalWheel: codes[2]?.contains(0x0c) == true,
            leds: codes[0x11] ?? [], codes: codes, properties: properties)
        info.deviceClass = classify(info)
        return .success(info)
    }

    /// Classifies like udev's input_id builtin and libinput: touchscreens are direct
    /// multitouch or touch surfaces, touchpads are indirect ones with finger tools,
    /// tablets have pen tools, pointers relative motion with buttons, and so on.
    static func classify(_ info: HIDDeviceInfo) -> HIDDeviceClass {
        classify(codes: info.codes, properties: info.properties)
    }

    /// Classifies from capabilities alone (codes per type and properties).
    public static func classify(codes: [UInt16: Set<UInt16>], properties: Set<UInt16>) -> HIDDeviceClass {
        let keys = codes[1] ?? []
        let absolute = codes[3] ?? []
        let relative = codes[2] ?? []
        let hasAbsolutePosition = absolute.contains(0) || absolute.contains(0x35)
        if keys.contains(0x140) || keys.contains(0x14b) { return .tablet }  // BTN_TOOL_PEN, BTN_STYLUS
        if hasAbsolutePosition && (keys.contains(0x14a) || keys.contains(0x145) || absolute.contains(0x35)) {
            if properties.contains(1) { return .touchscreen }  // INPUT_PROP_DIRECT
            if keys.contains(0x145) || properties.contains(0) { return .touchpad }  // BTN_TOOL_FINGER, POINTER
            if keys.contains(0x14a) { return .touchscreen }
        }
        if keys.contains(0x130) || keys.contains(0x131) { return .gamepad }  // BTN_SOUTH, BTN_EAST
        if keys.contains(0x120) { return .joystick }  // BTN_TRIGGER
        if relative.contains(0) && relative.contains(1) && keys.contains(0x110) { return .pointer }
        let letters: [UInt16] = [16, 30, 44, 57]  // Q, A, Z, Space
        if letters.allSatisfy(keys.contains) { return .keyboard }
        if !(codes[5] ?? []).isEmpty { return .switch }
        if !keys.isEmpty { return .buttons }
        return .other
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
