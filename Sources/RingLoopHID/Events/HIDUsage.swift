/// A HID usage: a page and a usage on it, as USB HID names keys and controls.
public struct HIDUsage: Hashable, Sendable, CustomStringConvertible {
    /// The usage page (0x07 keyboard, 0x0C consumer, 0x01 generic desktop…).
    public var page: UInt16
    /// The usage on that page.
    public var usage: UInt16

    public init(page: UInt16, usage: UInt16) {
        self.page = page
        self.usage = usage
    }

    public static let keyboardPage: UInt16 = 0x07
    public static let consumerPage: UInt16 = 0x0C
    public static let genericDesktopPage: UInt16 = 0x01

    public var description: String { "0x\(String(page, radix: 16)):0x\(String(usage, radix: 16))" }

    /// The usage of a Linux key code, or `nil` for codes with no HID usage (buttons,
    /// tools, codes the HID tables do not name).
    ///
    /// Facts, not policy: the keyboard page is the inverse of the kernel's
    /// `hid_keyboard[]` table (drivers/hid/hid-input.c), media and application keys use
    /// the consumer page as USB keyboards send them, and power, sleep and wake use the
    /// generic desktop page's system controls.
    public static func forLinuxKey(_ code: UInt16) -> HIDUsage? {
        if let usage = consumer[code] { return HIDUsage(page: consumerPage, usage: usage) }
        if let usage = system[code] { return HIDUsage(page: genericDesktopPage, usage: usage) }
        if let usage = keyboard[code] { return HIDUsage(page: keyboardPage, usage: usage) }
        return nil
    }

    /// Linux key code → keyboard-page usage.
    static let keyboard: [UInt16: UInt16] = {
        // hid_keyboard[] rows 0x00–0xA7 and 0xE0–0xE7: index = usage, value = Linux code.
        let table: [UInt16] = [
            0, 0, 0, 0, 30, 48, 46, 32, 18, 33, 34, 35, 23, 36, 37, 38,
            50, 49, 24, 25, 16, 19, 31, 20, 22, 47, 17, 45, 21, 44, 2, 3,
            4, 5, 6, 7, 8, 9, 10, 11, 28, 1, 14, 15, 57, 12, 13, 26,
            27, 43, 43, 39, 40, 41, 51, 52, 53, 58, 59, 60, 61, 62, 63, 64,
            65, 66, 67, 68, 87, 88, 99, 70, 119, 110, 102, 104, 111, 107, 109, 106,
            105, 108, 103, 69, 98, 55, 74, 78, 96, 79, 80, 81, 75, 76, 77, 71,
            72, 73, 82, 83, 86, 127, 116, 117, 183, 184, 185, 186, 187, 188, 189, 190,
            191, 192, 193, 194, 134, 138, 130, 132, 128, 129, 131, 137, 133, 135, 136, 113,
            115, 114, 0, 0, 0, 121, 0, 89, 93, 124, 92, 94, 95, 0, 0, 0,
            122, 123, 90, 91, 85,
        ]
        var map: [UInt16: UInt16] = [:]
        for (usage, code) in table.enumerated() where code != 0 && map[code] == nil {
            map[code] = UInt16(usage)
        }
        let modifiers: [UInt16] = [29, 42, 56, 125, 97, 54, 100, 126]  // 0xE0…0xE7
        for (offset, code) in modifiers.enumerated() { map[code] = 0xE0 + UInt16(offset) }
        return map
    }()

    /// Linux key code → consumer-page usage.
    static let consumer: [UInt16: UInt16] = [
        113: 0xE2,  // KEY_MUTE
        114: 0xEA,  // KEY_VOLUMEDOWN
        115: 0xE9,  // KEY_VOLUMEUP
        163: 0xB5,  // KEY_NEXTSONG
        165: 0xB6,  // KEY_PREVIOUSSONG
        166: 0xB7,  // KEY_STOPCD
        164: 0xCD,  // KEY_PLAYPAUSE
        161: 0xB8,  // KEY_EJECTCD
        225: 0x6F,  // KEY_BRIGHTNESSUP
        224: 0x70,  // KEY_BRIGHTNESSDOWN
        139: 0x40,  // KEY_MENU
        140: 0x192,  // KEY_CALC
        155: 0x18A,  // KEY_MAIL
        172: 0x223,  // KEY_HOMEPAGE
        158: 0x224,  // KEY_BACK
        159: 0x225,  // KEY_FORWARD
        217: 0x221,  // KEY_SEARCH
        207: 0xB0,  // KEY_PLAY
        201: 0xB1,  // KEY_PAUSECD
        167: 0xB2,  // KEY_RECORD
        208: 0xB3,  // KEY_FASTFORWARD
        168: 0xB4,  // KEY_REWIND
    ]

    /// Linux key code → generic-desktop system controls.
    static let system: [UInt16: UInt16] = [
        116: 0x81,  // KEY_POWER: System Power Down
        142: 0x82,  // KEY_SLEEP: System Sleep
        143: 0x83,  // KEY_WAKEUP: System Wake Up
    ]
}

/// Modifier keys held, as bits of the keyboard page's 0xE0–0xE7 usages.
public struct KeyModifiers: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let leftControl = KeyModifiers(rawValue: 1 << 0)
    public static let leftShift = KeyModifiers(rawValue: 1 << 1)
    public static let leftAlt = KeyModifiers(rawValue: 1 << 2)
    public static let leftMeta = KeyModifiers(rawValue: 1 << 3)
    public static let rightControl = KeyModifiers(rawValue: 1 << 4)
    public static let rightShift = KeyModifiers(rawValue: 1 << 5)
    public static let rightAlt = KeyModifiers(rawValue: 1 << 6)
    public static let rightMeta = KeyModifiers(rawValue: 1 << 7)

    public static let shift: KeyModifiers = [.leftShift, .rightShift]
    public static let control: KeyModifiers = [.leftControl, .rightControl]
    public static let alt: KeyModifiers = [.leftAlt, .rightAlt]
    public static let meta: KeyModifiers = [.leftMeta, .rightMeta]

    /// The modifier a Linux key code is, if any.
    static func forLinuxKey(_ code: UInt16) -> KeyModifiers? {
        switch code {
        case 29: .leftControl
        case 42: .leftShift
        case 56: .leftAlt
        case 125: .leftMeta
        case 97: .rightControl
        case 54: .rightShift
        case 100: .rightAlt
        case 126: .rightMeta
        default: nil
        }
    }
}
