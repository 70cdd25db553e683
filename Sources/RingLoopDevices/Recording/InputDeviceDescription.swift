import CLibEvdev

/// One evdev event as recorded or replayed: time, type, code and value, as in
/// `struct input_event`.
public struct RecordedEvent: Hashable, Sendable, CustomStringConvertible {
    /// Whole seconds of the timestamp.
    public var seconds: Int64
    /// Microseconds of the timestamp (0–999,999).
    public var microseconds: Int32
    /// The event type (`EV_KEY`…).
    public var type: UInt16
    /// The event code (`KEY_A`…).
    public var code: UInt16
    /// The value (decimal, may be negative).
    public var value: Int32

    public init(seconds: Int64, microseconds: Int32, type: UInt16, code: UInt16, value: Int32) {
        self.seconds = seconds
        self.microseconds = microseconds
        self.type = type
        self.code = code
        self.value = value
    }

    /// The timestamp in microseconds.
    public var timeMicroseconds: Int64 { seconds * 1_000_000 + Int64(microseconds) }

    /// Whether this is the `SYN_REPORT` that ends a frame.
    public var isSynReport: Bool { type == 0 && code == 0 }

    public var description: String {
        "\(EventNames.type(type)) / \(EventNames.code(type: type, code: code)) \(value)"
    }
}

/// The `struct input_absinfo` of one absolute axis.
public struct AbsoluteAxis: Hashable, Sendable {
    public var value: Int32
    public var minimum: Int32
    public var maximum: Int32
    public var fuzz: Int32
    public var flat: Int32
    /// Units per millimetre (per radian for rotation axes); 0 when unknown.
    public var resolution: Int32

    public init(value: Int32 = 0, minimum: Int32, maximum: Int32, fuzz: Int32 = 0, flat: Int32 = 0, resolution: Int32 = 0) {
        self.value = value
        self.minimum = minimum
        self.maximum = maximum
        self.fuzz = fuzz
        self.flat = flat
        self.resolution = resolution
    }
}

/// What an evdev device says about itself: name, ids, properties, the codes it can send,
/// absolute axis ranges and its current LED, switch and key state — everything
/// `libevdev_new_from_fd` asks the kernel for.
///
/// Built from a recording, from a live device (``init(fileDescriptor:)``), or in code.
public struct InputDeviceDescription: Hashable, Sendable {
    public var name: String
    public var busType: UInt16
    public var vendor: UInt16
    public var product: UInt16
    public var version: UInt16
    public var physicalLocation: String
    public var uniqueIdentifier: String
    /// `INPUT_PROP_*` bits.
    public var properties: Set<UInt16>
    /// Supported codes per event type (`EV_KEY` → key codes…). `EV_SYN` lists the types.
    public var codes: [UInt16: Set<UInt16>]
    /// Absolute axes by code.
    public var absoluteAxes: [UInt16: AbsoluteAxis]
    /// LEDs that are on, and switches that are set (`L:` and `S:` lines), by code.
    public var ledStates: [UInt16: Int32]
    public var switchStates: [UInt16: Int32]
    /// Keys held down when the description was taken.
    public var keysDown: Set<UInt16>
    /// Kernel key repeat (delay, period) in milliseconds, when the device has `EV_REP`.
    public var keyRepeat: (delay: Int32, period: Int32)?

    public init(
        name: String, busType: UInt16 = 0x03, vendor: UInt16 = 0, product: UInt16 = 0, version: UInt16 = 0,
        physicalLocation: String = "", uniqueIdentifier: String = "", properties: Set<UInt16> = [],
        codes: [UInt16: Set<UInt16>] = [:], absoluteAxes: [UInt16: AbsoluteAxis] = [:],
        ledStates: [UInt16: Int32] = [:], switchStates: [UInt16: Int32] = [:], keysDown: Set<UInt16> = [],
        keyRepeat: (delay: Int32, period: Int32)? = nil
    ) {
        self.name = name
        self.busType = busType
        self.vendor = vendor
        self.product = product
        self.version = version
        self.physicalLocation = physicalLocation
        self.uniqueIdentifier = uniqueIdentifier
        self.properties = properties
        self.codes = codes
        self.absoluteAxes = absoluteAxes
        self.ledStates = ledStates
        self.switchStates = switchStates
        self.keysDown = keysDown
        self.keyRepeat = keyRepeat
        normalizeTypes()
    }

    /// Makes `codes[EV_SYN]` list every type that has codes, as the kernel's type mask does.
    mutating func normalizeTypes() {
        codes = codes.filter { !$0.value.isEmpty }
        var types = codes[0] ?? []
        types.insert(0)
        for (type, set) in codes where type != 0 && !set.isEmpty { types.insert(type) }
        if keyRepeat != nil { types.insert(0x14) }
        codes[0] = types
        if codes[0x03]?.isEmpty == false {
            for code in codes[0x03]! where absoluteAxes[code] == nil {
                // No range given: libevdev's (and so evemu's) placeholder range.
                absoluteAxes[code] = AbsoluteAxis(minimum: 0, maximum: 1)
            }
        }
    }

    /// The kernel's key repeat for a new device with `EV_REP` (`input_register_device`:
    /// 250 ms delay, 33 ms period). Recordings do not carry repeat settings, so a
    /// recorded device with `EV_REP` gets these, as it did when it was plugged in.
    public static let kernelDefaultKeyRepeat: (delay: Int32, period: Int32) = (250, 33)

    /// The most multitouch slots the kernel allows a device (`input_mt_init_slots`).
    public static let maximumSlotCount = 1024

    /// Why a kernel would not accept this description, or `nil`: counts that size memory
    /// (slots) are bounded as the kernel bounds them.
    public var problem: String? {
        if isMultitouch, let slot = absoluteAxes[0x2f] {
            if slot.minimum != 0 || slot.maximum < 0 || Int(slot.maximum) >= Self.maximumSlotCount {
                return "ABS_MT_SLOT range \(slot.minimum)…\(slot.maximum): slots count from 0 and the kernel allows"
                    + " at most \(Self.maximumSlotCount) (maximum 0…\(Self.maximumSlotCount - 1))"
            }
        }
        return nil
    }

    /// Whether the device reports multitouch slots: it has `ABS_MT_SLOT` and not the axis
    /// below it (`ABS_RESERVED`, 0x2e). Devices whose HID descriptor has more axes than
    /// the kernel has names fill codes up to and past 0x2e ("fake MT", as udev and
    /// libevdev call it); their 0x2f is an ordinary axis.
    public var isMultitouch: Bool { has(type: 0x03, code: 0x2f) && !has(type: 0x03, code: 0x2e) }

    /// Whether the device can send `code` of `type`.
    public func has(type: UInt16, code: UInt16) -> Bool { codes[type]?.contains(code) ?? false }

    /// The number of multitouch slots (`ABS_MT_SLOT` maximum + 1), or 0.
    public var slotCount: Int {
        guard isMultitouch, let slot = absoluteAxes[0x2f], problem == nil else { return 0 }
        return Int(slot.maximum) + 1
    }

    public static func == (lhs: InputDeviceDescription, rhs: InputDeviceDescription) -> Bool {
        lhs.name == rhs.name && lhs.busType == rhs.busType && lhs.vendor == rhs.vendor && lhs.product == rhs.product
            && lhs.version == rhs.version && lhs.physicalLocation == rhs.physicalLocation
            && lhs.uniqueIdentifier == rhs.uniqueIdentifier && lhs.properties == rhs.properties
            && lhs.codes == rhs.codes && lhs.absoluteAxes == rhs.absoluteAxes && lhs.ledStates == rhs.ledStates
            && lhs.switchStates == rhs.switchStates && lhs.keysDown == rhs.keysDown
            && lhs.keyRepeat?.delay == rhs.keyRepeat?.delay && lhs.keyRepeat?.period == rhs.keyRepeat?.period
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(vendor)
        hasher.combine(product)
        hasher.combine(codes)
    }
}

/// Limits of the kernel's evdev interface, as `linux/input-event-codes.h` defines them.
public enum EvdevLimits {
    /// The highest code of each event type the kernel reports bits for (`EVIOCGBIT`).
    public static func maximumCode(type: UInt16) -> UInt16? {
        switch type {
        case 0x00: 0x1f  // EV_MAX (the type mask)
        case 0x01: 0x2ff  // KEY_MAX
        case 0x02: 0x0f  // REL_MAX
        case 0x03: 0x3f  // ABS_MAX
        case 0x04: 0x07  // MSC_MAX
        case 0x05: 0x10  // SW_MAX
        case 0x11: 0x0f  // LED_MAX
        case 0x12: 0x07  // SND_MAX
        case 0x15: 0x7f  // FF_MAX
        default: nil
        }
    }

    /// Bytes of the kernel's bit mask for `type`: whole longs, as `EVIOCGBIT` returns.
    public static func maskBytes(type: UInt16) -> Int? {
        maximumCode(type: type).map { ((Int($0) + 1 + 63) / 64) * 8 }
    }

    /// The highest `INPUT_PROP_*` bit; the property mask is 8 bytes.
    public static let maximumProperty: UInt16 = 0x1f
    public static let propertyMaskBytes = 8
    /// The type codes `EVIOCGBIT` answers, in order.
    public static let maskTypes: [UInt16] = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x11, 0x12, 0x15]
}

/// Names of types and codes, from libevdev's tables.
public enum EventNames {
    public static func type(_ type: UInt16) -> String {
        libevdev_event_type_get_name(UInt32(type)).map { String(cString: $0) } ?? String(format2: type)
    }

    public static func code(type: UInt16, code: UInt16) -> String {
        libevdev_event_code_get_name(UInt32(type), UInt32(code)).map { String(cString: $0) } ?? String(format2: code)
    }

    public static func property(_ property: UInt16) -> String {
        libevdev_property_get_name(UInt32(property)).map { String(cString: $0) } ?? String(format2: property)
    }
}

extension String {
    /// `0x` and hexadecimal digits.
    init(format2 value: UInt16) { self = "0x" + String(value, radix: 16) }
}
