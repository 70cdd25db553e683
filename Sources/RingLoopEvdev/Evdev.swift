/// The kernel's evdev interface by name: event types, codes and device properties as
/// `linux/input-event-codes.h` spells them (`Evdev.EV_KEY`, `Evdev.BTN_TOUCH`,
/// `Evdev.ABS_MT_POSITION_X`, `Evdev.INPUT_PROP_DIRECT`), the names codes are shown by,
/// and the limits of the kernel's bit masks.
///
/// The constants are generated from the kernel's headers by
/// `tools/generate-evdev-codes.swift`; a test checks them against the installed headers.
/// They keep the kernel's spelling so that a name found in a kernel, libevdev or libinput
/// source is found here too. Each is an inlinable `UInt16`, usable in `switch` patterns and
/// ranges (`case Evdev.BTN_0...Evdev.BTN_9:`).
public enum Evdev {
    /// The name of an event type (`"EV_KEY"`), or `nil` for a type the kernel does not define.
    public static func name(ofType type: UInt16) -> String? { typeNames[type] }

    /// The name a code is shown by (`"BTN_TOUCH"`, `"ABS_MT_SLOT"`), or `nil` for a code
    /// the kernel does not name. Of several names for one code, the one libevdev shows.
    public static func name(ofCode code: UInt16, type: UInt16) -> String? {
        type == EV_KEY ? keyNames[code] : otherCodeNames[type]?[code]
    }

    /// The name of a device property (`"INPUT_PROP_DIRECT"`), or `nil`.
    public static func name(ofProperty property: UInt16) -> String? { propertyNames[property] }

    /// The type and code of a name the headers define, aliases included (`"BTN_A"` is
    /// `BTN_SOUTH`); `nil` for any other string.
    public static func code(named name: String) -> (type: UInt16, code: UInt16)? { codesByName[name] }

    /// The event type a name (`"EV_ABS"`) stands for.
    public static func type(named name: String) -> UInt16? { typesByName[name] }

    /// The device property a name (`"INPUT_PROP_BUTTONPAD"`) stands for.
    public static func property(named name: String) -> UInt16? { propertiesByName[name] }

    /// The highest code of each event type the kernel reports bits for (`EVIOCGBIT`): the
    /// type's `_MAX`, and `EV_MAX` for `EV_SYN`, whose mask lists the types. `nil` for a type
    /// with no bit mask (`EV_REP`, `EV_PWR`, `EV_FF_STATUS`, undefined types).
    public static func maximumCode(ofType type: UInt16) -> UInt16? {
        switch type {
        case EV_SYN: EV_MAX
        case EV_KEY: KEY_MAX
        case EV_REL: REL_MAX
        case EV_ABS: ABS_MAX
        case EV_MSC: MSC_MAX
        case EV_SW: SW_MAX
        case EV_LED: LED_MAX
        case EV_SND: SND_MAX
        case EV_FF: FF_MAX
        default: nil
        }
    }

    /// Bytes of the kernel's bit mask for `type`, as `EVIOCGBIT` fills it: whole `long`s,
    /// 8 bytes each on 64-bit targets and 4 on 32-bit ones.
    public static func maskBytes(ofType type: UInt16) -> Int? {
        maximumCode(ofType: type).map { bytesOfLongs(holding: Int($0) + 1) }
    }

    /// Bytes of the property mask (`EVIOCGPROP`).
    public static var propertyMaskBytes: Int { bytesOfLongs(holding: Int(INPUT_PROP_MAX) + 1) }

    /// The types `EVIOCGBIT` answers with a bit mask, in order.
    public static let maskTypes: [UInt16] = [EV_SYN, EV_KEY, EV_REL, EV_ABS, EV_MSC, EV_SW, EV_LED, EV_SND, EV_FF]

    /// The most multitouch slots the kernel gives a device (`input_mt_init_slots`).
    public static let maximumSlotCount = 1024

    /// Whether `code` is a multitouch axis (`ABS_MT_SLOT` … `ABS_MT_TOOL_Y`).
    @inlinable
    public static func isMultitouchAxis(_ code: UInt16) -> Bool { code >= ABS_MT_SLOT && code <= ABS_MT_TOOL_Y }

    static func bytesOfLongs(holding bits: Int) -> Int {
        let longBits = MemoryLayout<CLong>.size * 8
        return (bits + longBits - 1) / longBits * MemoryLayout<CLong>.size
    }

    static let codesByName: [String: (type: UInt16, code: UInt16)] = {
        var table = aliases
        for (code, name) in keyNames { table[name] = (EV_KEY, code) }
        for (type, names) in otherCodeNames {
            for (code, name) in names { table[name] = (type, code) }
        }
        return table
    }()

    static let typesByName = Dictionary(uniqueKeysWithValues: typeNames.map { ($0.value, $0.key) })
    static let propertiesByName = Dictionary(uniqueKeysWithValues: propertyNames.map { ($0.value, $0.key) })
}

extension Evdev {
    /// The type's name, or its number in hexadecimal (`0x1e`) when it has none.
    public static func shownName(ofType type: UInt16) -> String { name(ofType: type) ?? hexadecimal(type) }

    /// The code's name, or its number in hexadecimal when it has none.
    public static func shownName(ofCode code: UInt16, type: UInt16) -> String {
        name(ofCode: code, type: type) ?? hexadecimal(code)
    }

    /// The property's name, or its number in hexadecimal when it has none.
    public static func shownName(ofProperty property: UInt16) -> String { name(ofProperty: property) ?? hexadecimal(property) }

    static func hexadecimal(_ value: UInt16) -> String { "0x" + String(value, radix: 16) }
}
