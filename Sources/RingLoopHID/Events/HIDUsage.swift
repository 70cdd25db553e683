import RingLoopEvdev

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
        if Int(code) < byLinuxKey.count {
            let packed = byLinuxKey[Int(code)]
            return packed == 0 ? nil : HIDUsage(page: UInt16(packed >> 16), usage: UInt16(truncatingIfNeeded: packed))
        }
        return lookUp(code)
    }

    /// The tables below folded into one array by key code (page << 16 | usage, 0: none):
    /// one load per key event instead of up to three hashed lookups.
    private static let byLinuxKey: [UInt32] = (0..<768).map { code in
        lookUp(UInt16(code)).map { UInt32($0.page) << 16 | UInt32($0.usage) } ?? 0
    }

    private static func lookUp(_ code: UInt16) -> HIDUsage? {
        if let usage = consumer[code] { return HIDUsage(page: consumerPage, usage: usage) }
        if let usage = system[code] { return HIDUsage(page: genericDesktopPage, usage: usage) }
        if let usage = keyboard[code] { return HIDUsage(page: keyboardPage, usage: usage) }
        return nil
    }

    /// Linux key code → keyboard-page usage.
    static let keyboard: [UInt16: UInt16] = {
        // The kernel's hid_keyboard[] (hid-input.c), usages 0x00–0xA7: index = usage, value =
        // Linux code (KEY_RESERVED: none).
        let table: [UInt16] = [
            Evdev.KEY_RESERVED, Evdev.KEY_RESERVED, Evdev.KEY_RESERVED, Evdev.KEY_RESERVED, Evdev.KEY_A, Evdev.KEY_B,
            Evdev.KEY_C, Evdev.KEY_D, Evdev.KEY_E, Evdev.KEY_F, Evdev.KEY_G, Evdev.KEY_H, Evdev.KEY_I, Evdev.KEY_J,
            Evdev.KEY_K, Evdev.KEY_L, Evdev.KEY_M, Evdev.KEY_N, Evdev.KEY_O, Evdev.KEY_P, Evdev.KEY_Q, Evdev.KEY_R,
            Evdev.KEY_S, Evdev.KEY_T, Evdev.KEY_U, Evdev.KEY_V, Evdev.KEY_W, Evdev.KEY_X, Evdev.KEY_Y, Evdev.KEY_Z,
            Evdev.KEY_1, Evdev.KEY_2, Evdev.KEY_3, Evdev.KEY_4, Evdev.KEY_5, Evdev.KEY_6, Evdev.KEY_7, Evdev.KEY_8,
            Evdev.KEY_9, Evdev.KEY_0, Evdev.KEY_ENTER, Evdev.KEY_ESC, Evdev.KEY_BACKSPACE, Evdev.KEY_TAB,
            Evdev.KEY_SPACE, Evdev.KEY_MINUS, Evdev.KEY_EQUAL, Evdev.KEY_LEFTBRACE, Evdev.KEY_RIGHTBRACE,
            Evdev.KEY_BACKSLASH, Evdev.KEY_BACKSLASH, Evdev.KEY_SEMICOLON, Evdev.KEY_APOSTROPHE, Evdev.KEY_GRAVE,
            Evdev.KEY_COMMA, Evdev.KEY_DOT, Evdev.KEY_SLASH, Evdev.KEY_CAPSLOCK, Evdev.KEY_F1, Evdev.KEY_F2,
            Evdev.KEY_F3, Evdev.KEY_F4, Evdev.KEY_F5, Evdev.KEY_F6, Evdev.KEY_F7, Evdev.KEY_F8, Evdev.KEY_F9,
            Evdev.KEY_F10, Evdev.KEY_F11, Evdev.KEY_F12, Evdev.KEY_SYSRQ, Evdev.KEY_SCROLLLOCK, Evdev.KEY_PAUSE,
            Evdev.KEY_INSERT, Evdev.KEY_HOME, Evdev.KEY_PAGEUP, Evdev.KEY_DELETE, Evdev.KEY_END, Evdev.KEY_PAGEDOWN,
            Evdev.KEY_RIGHT, Evdev.KEY_LEFT, Evdev.KEY_DOWN, Evdev.KEY_UP, Evdev.KEY_NUMLOCK, Evdev.KEY_KPSLASH,
            Evdev.KEY_KPASTERISK, Evdev.KEY_KPMINUS, Evdev.KEY_KPPLUS, Evdev.KEY_KPENTER, Evdev.KEY_KP1,
            Evdev.KEY_KP2, Evdev.KEY_KP3, Evdev.KEY_KP4, Evdev.KEY_KP5, Evdev.KEY_KP6, Evdev.KEY_KP7, Evdev.KEY_KP8,
            Evdev.KEY_KP9, Evdev.KEY_KP0, Evdev.KEY_KPDOT, Evdev.KEY_102ND, Evdev.KEY_COMPOSE, Evdev.KEY_POWER,
            Evdev.KEY_KPEQUAL, Evdev.KEY_F13, Evdev.KEY_F14, Evdev.KEY_F15, Evdev.KEY_F16, Evdev.KEY_F17,
            Evdev.KEY_F18, Evdev.KEY_F19, Evdev.KEY_F20, Evdev.KEY_F21, Evdev.KEY_F22, Evdev.KEY_F23, Evdev.KEY_F24,
            Evdev.KEY_OPEN, Evdev.KEY_HELP, Evdev.KEY_PROPS, Evdev.KEY_FRONT, Evdev.KEY_STOP, Evdev.KEY_AGAIN,
            Evdev.KEY_UNDO, Evdev.KEY_CUT, Evdev.KEY_COPY, Evdev.KEY_PASTE, Evdev.KEY_FIND, Evdev.KEY_MUTE,
            Evdev.KEY_VOLUMEUP, Evdev.KEY_VOLUMEDOWN, Evdev.KEY_RESERVED, Evdev.KEY_RESERVED, Evdev.KEY_RESERVED,
            Evdev.KEY_KPCOMMA, Evdev.KEY_RESERVED, Evdev.KEY_RO, Evdev.KEY_KATAKANAHIRAGANA, Evdev.KEY_YEN,
            Evdev.KEY_HENKAN, Evdev.KEY_MUHENKAN, Evdev.KEY_KPJPCOMMA, Evdev.KEY_RESERVED, Evdev.KEY_RESERVED,
            Evdev.KEY_RESERVED, Evdev.KEY_HANGEUL, Evdev.KEY_HANJA, Evdev.KEY_KATAKANA, Evdev.KEY_HIRAGANA,
            Evdev.KEY_ZENKAKUHANKAKU,
        ]
        var map: [UInt16: UInt16] = [:]
        for (usage, code) in table.enumerated() where code != Evdev.KEY_RESERVED && map[code] == nil {
            map[code] = UInt16(usage)
        }
        // Usages 0xE0…0xE7.
        let modifiers: [UInt16] = [
            Evdev.KEY_LEFTCTRL, Evdev.KEY_LEFTSHIFT, Evdev.KEY_LEFTALT, Evdev.KEY_LEFTMETA, Evdev.KEY_RIGHTCTRL,
            Evdev.KEY_RIGHTSHIFT, Evdev.KEY_RIGHTALT, Evdev.KEY_RIGHTMETA,
        ]
        for (offset, code) in modifiers.enumerated() { map[code] = 0xE0 + UInt16(offset) }
        return map
    }()

    /// Linux key code → consumer-page usage.
    static let consumer: [UInt16: UInt16] = [
        Evdev.KEY_MUTE: 0xE2,
        Evdev.KEY_VOLUMEDOWN: 0xEA,
        Evdev.KEY_VOLUMEUP: 0xE9,
        Evdev.KEY_NEXTSONG: 0xB5,
        Evdev.KEY_PREVIOUSSONG: 0xB6,
        Evdev.KEY_STOPCD: 0xB7,
        Evdev.KEY_PLAYPAUSE: 0xCD,
        Evdev.KEY_EJECTCD: 0xB8,
        Evdev.KEY_BRIGHTNESSUP: 0x6F,
        Evdev.KEY_BRIGHTNESSDOWN: 0x70,
        Evdev.KEY_MENU: 0x40,
        Evdev.KEY_CALC: 0x192,
        Evdev.KEY_MAIL: 0x18A,
        Evdev.KEY_HOMEPAGE: 0x223,
        Evdev.KEY_BACK: 0x224,
        Evdev.KEY_FORWARD: 0x225,
        Evdev.KEY_SEARCH: 0x221,
        Evdev.KEY_PLAY: 0xB0,
        Evdev.KEY_PAUSECD: 0xB1,
        Evdev.KEY_RECORD: 0xB2,
        Evdev.KEY_FASTFORWARD: 0xB3,
        Evdev.KEY_REWIND: 0xB4,
    ]

    /// Linux key code → generic-desktop system controls.
    static let system: [UInt16: UInt16] = [
        Evdev.KEY_POWER: 0x81,  // System Power Down
        Evdev.KEY_SLEEP: 0x82,  // System Sleep
        Evdev.KEY_WAKEUP: 0x83,  // System Wake Up
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
        case Evdev.KEY_LEFTCTRL: .leftControl
        case Evdev.KEY_LEFTSHIFT: .leftShift
        case Evdev.KEY_LEFTALT: .leftAlt
        case Evdev.KEY_LEFTMETA: .leftMeta
        case Evdev.KEY_RIGHTCTRL: .rightControl
        case Evdev.KEY_RIGHTSHIFT: .rightShift
        case Evdev.KEY_RIGHTALT: .rightAlt
        case Evdev.KEY_RIGHTMETA: .rightMeta
        default: nil
        }
    }
}
