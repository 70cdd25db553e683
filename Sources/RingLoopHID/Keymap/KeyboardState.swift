import CXKBCommon

/// The keyboard state of a seat (libxkbcommon's `xkb_state` and compose state): held,
/// latched and locked modifiers, the layout in effect, the LEDs, and the progress of a
/// compose sequence, shared by every keyboard of the seat as compositors keep it (Shift on
/// one keyboard shifts another's keys; a scanner and a keyboard agree on Caps Lock).
///
/// Feed it every key event of the seat's keyboards in order with ``process(code:state:)``
/// (or ``apply(to:)``, which fills a ``KeyEvent``'s ``KeyEvent/keysym``, ``KeyEvent/text``
/// and ``KeyEvent/keymapModifiers``). Neither allocates once the state exists: the text is
/// an inline ``KeyText``.
///
/// Lives on one thread (the loop that delivers the seat's key events); not `Sendable`.
public final class KeyboardState {
    /// The keymap the state follows.
    public let keymap: Keymap
    /// The Compose table sequences are looked up in, or `nil` for none.
    public let composeTable: ComposeTable?
    /// The modifiers after the last event.
    public private(set) var modifiers = KeymapModifierState()
    /// The lock LEDs after the last event.
    public private(set) var leds: KeyboardLEDs = []
    /// The last composed text in full (``KeyText`` holds 15 bytes; a user's Compose file
    /// may name longer results), or `nil` when the last result fitted.
    public private(set) var lastLongComposedText: String?

    private var xkbState: OpaquePointer
    private let composeState: OpaquePointer?
    private let scratch: UnsafeMutablePointer<CChar>
    private static let scratchCapacity = 256
    private let ledIndices: [(index: UInt32, led: KeyboardLEDs)]

    /// A fresh state of `keymap`: nothing held, no locks, the first layout.
    ///
    /// - Parameters:
    ///   - keymap: The keymap.
    ///   - composeTable: The Compose table for dead keys and compose sequences
    ///     (``ComposeTable/forLocale(environment:)``), or `nil` for none.
    public init(keymap: Keymap, composeTable: ComposeTable? = nil) {
        self.keymap = keymap
        self.composeTable = composeTable
        xkbState = keymap.makeState()
        composeState = composeTable?.makeState()
        scratch = .allocate(capacity: Self.scratchCapacity)
        let names: [(String, KeyboardLEDs)] = [
            (XKB_LED_NAME_NUM, .numLock), (XKB_LED_NAME_CAPS, .capsLock), (XKB_LED_NAME_SCROLL, .scrollLock),
            ("Compose", .compose), ("Kana", .kana),
        ]
        ledIndices = names.compactMap { name, led in
            let index = xkb_keymap_led_get_index(keymap.keymap, name)
            return index == XKB_LED_INVALID ? nil : (index, led)
        }
    }

    deinit {
        keymap.freeState(xkbState)
        if let composeState, let composeTable { composeTable.freeState(composeState) }
        scratch.deallocate()
    }

    /// Interprets a key event and updates the state: the keysym and text come from the
    /// state before the event (as libxkbcommon's users read them), then the event changes
    /// the modifiers, locks and LEDs.
    ///
    /// A press and a repeat of a repeating key feed the compose sequence; a repeat of a key
    /// that does not repeat (``Keymap/repeats(code:)``) changes nothing and is marked
    /// ``KeyInterpretation/isIgnoredRepeat``. A release carries the keysym and no text.
    ///
    /// - Parameters:
    ///   - code: The Linux key code (`KEY_A` is 30).
    ///   - state: Down, up or repeat.
    /// - Returns: The keysym, text, modifiers and LEDs.
    public func process(code: UInt16, state: KeyEvent.State) -> KeyInterpretation {
        let keyState = state
        let keycode = UInt32(code) + 8
        var result = KeyInterpretation(keysym: xkb_state_key_get_one_sym(xkbState, keycode), modifiers: modifiers, leds: leds)
        if keyState == .repeat && xkb_keymap_key_repeats(keymap.keymap, keycode) == 0 {
            result.isIgnoredRepeat = true
            return result
        }
        if keyState != .up {
            var keyText = true
            if let composeState, xkb_compose_state_feed(composeState, result.keysym) == XKB_COMPOSE_FEED_ACCEPTED {
                switch xkb_compose_state_get_status(composeState) {
                case XKB_COMPOSE_COMPOSING:
                    result.compose = .composing
                    keyText = false
                case XKB_COMPOSE_COMPOSED:
                    result.compose = .composed
                    keyText = false
                    let composed = xkb_compose_state_get_one_sym(composeState)
                    if composed != 0 { result.keysym = composed }
                    let count = Int(xkb_compose_state_get_utf8(composeState, scratch, Self.scratchCapacity))
                    result.text = text(count: count)
                    lastLongComposedText = count > KeyText.capacity ? String(cString: scratch) : nil
                    xkb_compose_state_reset(composeState)
                case XKB_COMPOSE_CANCELLED:
                    result.compose = .cancelled
                    keyText = false
                    xkb_compose_state_reset(composeState)
                default:
                    break
                }
            }
            if keyText {
                result.text = text(count: Int(xkb_state_key_get_utf8(xkbState, keycode, scratch, Self.scratchCapacity)))
            }
        }
        if keyState != .repeat {
            let changed = xkb_state_update_key(xkbState, keycode, keyState == .up ? XKB_KEY_UP : XKB_KEY_DOWN)
            if changed.rawValue != 0 { refresh(changed) }
            result.modifiers = modifiers
            if leds != result.leds {
                result.leds = leds
                result.ledsChanged = true
            }
        }
        return result
    }

    /// Interprets `event` (``process(code:state:)``) and writes its keysym, text and
    /// modifiers into it.
    ///
    /// - Parameter event: A key event of one of the seat's keyboards.
    /// - Returns: The whole interpretation (LEDs, compose, an ignored repeat).
    @discardableResult
    public func apply(to event: inout KeyEvent) -> KeyInterpretation {
        let result = process(code: event.code, state: event.state)
        event.keysym = result.keysym
        event.text = result.text
        event.keymapModifiers = result.modifiers
        return result
    }

    /// Ends a compose sequence in progress and clears latched modifiers: what the focus
    /// moving away does (held keys and locks stay).
    public func cancelComposeAndLatches() {
        if let composeState { xkb_compose_state_reset(composeState) }
        let depressed = xkb_state_serialize_mods(xkbState, XKB_STATE_MODS_DEPRESSED)
        let locked = xkb_state_serialize_mods(xkbState, XKB_STATE_MODS_LOCKED)
        let depressedLayout = xkb_state_serialize_layout(xkbState, XKB_STATE_LAYOUT_DEPRESSED)
        let lockedLayout = xkb_state_serialize_layout(xkbState, XKB_STATE_LAYOUT_LOCKED)
        let changed = xkb_state_update_mask(xkbState, depressed, 0, locked, depressedLayout, 0, lockedLayout)
        if changed.rawValue != 0 { refresh(changed) }
    }

    /// Back to a fresh state: nothing held, latched or locked, the first layout, no
    /// sequence (the LEDs go dark; write ``leds`` to the keyboards).
    public func reset() {
        keymap.freeState(xkbState)
        xkbState = keymap.makeState()
        if let composeState { xkb_compose_state_reset(composeState) }
        refresh(xkb_state_component(rawValue: ~0))
    }

    private func text(count: Int) -> KeyText {
        guard count > 0 else { return KeyText() }
        return scratch.withMemoryRebound(to: UInt8.self, capacity: Self.scratchCapacity) {
            KeyText(utf8: UnsafeBufferPointer(start: $0, count: min(count, Self.scratchCapacity - 1)))
        }
    }

    private func refresh(_ changed: xkb_state_component) {
        func mods(_ component: xkb_state_component) -> KeymapModifiers {
            KeymapModifiers(rawValue: UInt8(truncatingIfNeeded: xkb_state_serialize_mods(xkbState, component)))
        }
        modifiers = KeymapModifierState(
            effective: mods(XKB_STATE_MODS_EFFECTIVE), latched: mods(XKB_STATE_MODS_LATCHED),
            locked: mods(XKB_STATE_MODS_LOCKED),
            layout: UInt8(truncatingIfNeeded: xkb_state_serialize_layout(xkbState, XKB_STATE_LAYOUT_EFFECTIVE)))
        if changed.rawValue & XKB_STATE_LEDS.rawValue != 0 {
            var lit: KeyboardLEDs = []
            for (index, led) in ledIndices where xkb_state_led_index_is_active(xkbState, index) > 0 { lit.insert(led) }
            leds = lit
        }
    }
}
