/// What a key event means in a keymap: its keysym, its text, and the keyboard's modifiers
/// and LEDs after it (``KeyboardState/process(code:state:)``).
public struct KeyInterpretation: Sendable, Hashable {
    /// The keysym (0 for none); a composed sequence's result on its last key.
    public var keysym: UInt32
    /// The text typed: a press's or a repeat's character(s), a composed sequence's result on
    /// its last key; empty for a release, a key with no text, a dead key and a key inside
    /// or cancelling a sequence.
    public var text: KeyText
    /// The modifiers after the event.
    public var modifiers: KeymapModifierState
    /// The lock LEDs after the event.
    public var leds: KeyboardLEDs
    /// Whether the event changed ``leds`` (write them to the seat's keyboards).
    public var ledsChanged: Bool
    /// What the event did to a compose sequence.
    public var compose: ComposeProgress
    /// Whether the event is a repeat of a key the keymap says does not repeat (a modifier,
    /// a lock): it should not be delivered.
    public var isIgnoredRepeat: Bool

    /// An interpretation (for tests of an app's handlers).
    public init(
        keysym: UInt32 = 0, text: KeyText = KeyText(), modifiers: KeymapModifierState = KeymapModifierState(),
        leds: KeyboardLEDs = [], ledsChanged: Bool = false, compose: ComposeProgress = .none, isIgnoredRepeat: Bool = false
    ) {
        self.keysym = keysym
        self.text = text
        self.modifiers = modifiers
        self.leds = leds
        self.ledsChanged = ledsChanged
        self.compose = compose
        self.isIgnoredRepeat = isIgnoredRepeat
    }
}

/// What a key press did to a compose (dead-key) sequence.
public enum ComposeProgress: String, Sendable, Hashable {
    /// Nothing: no sequence, or a key a sequence ignores (a modifier).
    case none
    /// Started or advanced a sequence (a dead key): no text yet.
    case composing
    /// Ended a sequence: the event carries its result.
    case composed
    /// Broke a sequence: the key is swallowed (no text), as libX11 and libxkbcommon's tools do.
    case cancelled
}
