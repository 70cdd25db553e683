/// The eight modifiers of an XKB keymap, as libxkbcommon reports them (its real modifiers,
/// in their fixed order), named by what xkeyboard-config's layouts make them.
public struct KeymapModifiers: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `Shift`.
    public static let shift = KeymapModifiers(rawValue: 1 << 0)
    /// `Lock`: Caps Lock.
    public static let capsLock = KeymapModifiers(rawValue: 1 << 1)
    /// `Control`.
    public static let control = KeymapModifiers(rawValue: 1 << 2)
    /// `Mod1`: Alt.
    public static let alt = KeymapModifiers(rawValue: 1 << 3)
    /// `Mod2`: Num Lock.
    public static let numLock = KeymapModifiers(rawValue: 1 << 4)
    /// `Mod3` (unused by most layouts).
    public static let mod3 = KeymapModifiers(rawValue: 1 << 5)
    /// `Mod4`: the logo (Super) key.
    public static let logo = KeymapModifiers(rawValue: 1 << 6)
    /// `Mod5`: AltGr (`ISO_Level3_Shift`).
    public static let altGr = KeymapModifiers(rawValue: 1 << 7)
}

/// The keyboard's modifier state after a key event, as libxkbcommon keeps it for the seat:
/// what is in effect, what is latched (applies to the next key) and locked (Caps Lock,
/// Num Lock), and the layout (group) in effect.
public struct KeymapModifierState: Sendable, Hashable {
    /// Every modifier in effect: held, latched or locked.
    public var effective: KeymapModifiers
    /// Modifiers latched for the next key (a sticky Shift).
    public var latched: KeymapModifiers
    /// Locked modifiers: ``KeymapModifiers/capsLock``, ``KeymapModifiers/numLock``.
    public var locked: KeymapModifiers
    /// The index of the layout in effect (0 for the first of the configuration's layouts).
    public var layout: UInt8

    /// A state; all empty and the first layout by default (a key event no keymap saw).
    public init(effective: KeymapModifiers = [], latched: KeymapModifiers = [], locked: KeymapModifiers = [], layout: UInt8 = 0) {
        self.effective = effective
        self.latched = latched
        self.locked = locked
        self.layout = layout
    }
}

/// A keyboard's lock LEDs, bit for bit as the kernel numbers them (`LED_NUML` is bit 0), so
/// the value writes to an evdev node as it is.
public struct KeyboardLEDs: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `LED_NUML`.
    public static let numLock = KeyboardLEDs(rawValue: 1 << 0)
    /// `LED_CAPSL`.
    public static let capsLock = KeyboardLEDs(rawValue: 1 << 1)
    /// `LED_SCROLLL`.
    public static let scrollLock = KeyboardLEDs(rawValue: 1 << 2)
    /// `LED_COMPOSE`.
    public static let compose = KeyboardLEDs(rawValue: 1 << 3)
    /// `LED_KANA`.
    public static let kana = KeyboardLEDs(rawValue: 1 << 4)
}
