import CXKBCommon
import RingLoopEvdev

extension Keymap {
    /// The key strokes that type `text` in this keymap, from a fresh keyboard state (nothing
    /// held or locked, the first layout): for each character a key at the level whose
    /// modifiers (Shift, AltGr…) are held around it, in the layout it is on (switched to by
    /// the keymap's own group keys, such as `grp:alt_shift_toggle`'s), else a dead key
    /// followed by a key that the Compose table composes into it.
    ///
    /// Every choice is checked by playing it on a libxkbcommon state of the keymap (and the
    /// Compose table) before it is kept. A line feed is typed as Return, a tab as Tab.
    ///
    /// - Parameters:
    ///   - text: The text.
    ///   - composeTable: The Compose table for dead-key sequences, or `nil` for direct keys only.
    /// - Returns: The strokes, every key released at the end.
    /// - Throws: ``UntypableCharacter`` for the first character that cannot be typed; then
    ///   nothing is typed.
    public func keyStrokes(typing text: String, composeTable: ComposeTable? = nil) throws(UntypableCharacter) -> [KeyStroke] {
        let typist = KeyTypist(keymap: self, composeTable: composeTable)
        defer { typist.close() }
        var strokes: [KeyStroke] = []
        for (index, scalar) in text.unicodeScalars.enumerated() {
            guard let plan = typist.plan(scalar) else {
                throw UntypableCharacter(character: scalar, position: index + 1, configuration: configuration)
            }
            strokes += plan
            typist.play(plan)
        }
        return strokes
    }
}

/// Works out key strokes for characters on scratch libxkbcommon states of a keymap. After
/// each character every key is up again, so the state between characters is its locked
/// layout (and modifiers, which it never locks).
private final class KeyTypist {
    let keymap: Keymap
    let composeTable: ComposeTable?
    /// The state between characters (every key up).
    let state: OpaquePointer
    let trial: OpaquePointer
    let composeState: OpaquePointer?
    /// For each of the eight modifiers, a key whose press alone sets it, if any.
    var modifierKeys: [UInt16?] = Array(repeating: nil, count: 8)
    let layoutCount: UInt32

    init(keymap: Keymap, composeTable: ComposeTable?) {
        self.keymap = keymap
        self.composeTable = composeTable
        state = keymap.makeState()
        trial = keymap.makeState()
        composeState = composeTable?.makeState()
        layoutCount = xkb_keymap_num_layouts(keymap.keymap)
        // A modifier's key: the preferred key whose press alone sets exactly that modifier
        // (held, not locked) and whose release leaves the state as it was.
        for code in Self.candidateCodes(keymap) {
            let keycode = UInt32(code) + 8
            reset(trial, to: state)
            xkb_state_update_key(trial, keycode, XKB_KEY_DOWN)
            let held = xkb_state_serialize_mods(trial, XKB_STATE_MODS_DEPRESSED)
            let locked = xkb_state_serialize_mods(trial, XKB_STATE_MODS_LOCKED)
            let layout = xkb_state_serialize_layout(trial, XKB_STATE_LAYOUT_EFFECTIVE)
            xkb_state_update_key(trial, keycode, XKB_KEY_UP)
            let after = xkb_state_serialize_mods(trial, XKB_STATE_MODS_EFFECTIVE)
            guard locked == 0, layout == 0, after == 0, held != 0, held & (held - 1) == 0, held < 256 else { continue }
            let bit = held.trailingZeroBitCount
            if modifierKeys[bit] == nil { modifierKeys[bit] = code }
        }
    }

    func close() {
        keymap.freeState(state)
        keymap.freeState(trial)
        if let composeState, let composeTable { composeTable.freeState(composeState) }
    }

    /// Linux key codes with a name (keys a keyboard has), the main block before the keypad.
    static func candidateCodes(_ keymap: Keymap) -> [UInt16] {
        let keypad: Set<UInt16> = [55, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 96, 98, 117, 118, 121]
        let codes = keymap.keycodes.compactMap { keycode -> UInt16? in
            guard keycode >= 8, keycode - 8 <= UInt32(Evdev.KEY_MAX) else { return nil }
            let code = UInt16(keycode - 8)
            return Evdev.name(ofCode: code, type: Evdev.EV_KEY) == nil ? nil : code
        }
        return codes.filter { !keypad.contains($0) } + codes.filter { keypad.contains($0) }
    }

    /// Sets `target` to `source`'s locked modifiers and layout, nothing held.
    func reset(_ target: OpaquePointer, to source: OpaquePointer) {
        let lockedMods = xkb_state_serialize_mods(source, XKB_STATE_MODS_LOCKED)
        let lockedLayout = xkb_state_serialize_layout(source, XKB_STATE_LAYOUT_LOCKED)
        xkb_state_update_mask(target, 0, 0, lockedMods, 0, 0, lockedLayout)
    }

    /// Plays strokes on the state between characters.
    func play(_ strokes: [KeyStroke]) {
        for stroke in strokes { xkb_state_update_key(state, UInt32(stroke.code) + 8, stroke.isDown ? XKB_KEY_DOWN : XKB_KEY_UP) }
    }

    /// The strokes that type `scalar` from the current state, or `nil`.
    func plan(_ scalar: Unicode.Scalar) -> [KeyStroke]? {
        let keysym: UInt32
        switch scalar {
        case "\n", "\r": keysym = UInt32(XKB_KEY_Return)
        case "\t": keysym = UInt32(XKB_KEY_Tab)
        default: keysym = xkb_utf32_to_keysym(scalar.value)
        }
        if keysym != 0, let direct = strokes(for: keysym, text: scalar) { return direct }
        return composed(scalar)
    }

    /// Strokes that give `keysym` (and, where `text` is given, that text) on one key.
    func strokes(for keysym: UInt32, text: Unicode.Scalar?) -> [KeyStroke]? {
        let current = xkb_state_serialize_layout(state, XKB_STATE_LAYOUT_EFFECTIVE)
        var best: (cost: Int, strokes: [KeyStroke])?
        let layouts = [current] + (0..<layoutCount).filter { $0 != current }
        for layout in layouts {
            guard let switching = layoutSwitch(to: layout) else { continue }
            for code in Self.candidateCodes(keymap) {
                let keycode = UInt32(code) + 8
                let levels = xkb_keymap_num_levels_for_key(keymap.keymap, keycode, layout)
                for level in 0..<levels {
                    var syms: UnsafePointer<xkb_keysym_t>?
                    let count = xkb_keymap_key_get_syms_by_level(keymap.keymap, keycode, layout, level, &syms)
                    guard count == 1, let syms, syms[0] == keysym else { continue }
                    var masks = [xkb_mod_mask_t](repeating: 0, count: 16)
                    let maskCount = xkb_keymap_key_get_mods_for_level(keymap.keymap, keycode, layout, level, &masks, 16)
                    for mask in masks.prefix(Int(maskCount)).sorted(by: { $0.nonzeroBitCount < $1.nonzeroBitCount }) {
                        // Never Caps Lock or Num Lock: typing locks nothing.
                        guard mask & 0b1_0010 == 0 else { continue }
                        guard let held = heldKeys(for: mask) else { continue }
                        let plan =
                            switching + held.map { KeyStroke(code: $0, isDown: true) } + [
                                KeyStroke(code: code, isDown: true), KeyStroke(code: code, isDown: false),
                            ] + held.reversed().map { KeyStroke(code: $0, isDown: false) }
                        guard verify(plan, key: code, keysym: keysym, text: text) else { continue }
                        // Keys of a 105-key keyboard (codes to 127) before extra ones (KEY_EURO).
                        let cost = switching.count * 100 + held.count * 10 + (code > 127 ? 50 : 0)
                        if best == nil || cost < best!.cost { best = (cost, plan) }
                        break
                    }
                }
            }
            if best != nil && layout == current { break }
        }
        return best?.strokes
    }

    /// The keys that hold exactly `mask`, one per modifier, or `nil`.
    func heldKeys(for mask: UInt32) -> [UInt16]? {
        var keys: [UInt16] = []
        for bit in 0..<8 where mask & (1 << bit) != 0 {
            guard let key = modifierKeys[bit] else { return nil }
            keys.append(key)
        }
        return keys
    }

    /// Plays `plan` on the trial state and checks that `key`, when it goes down, gives
    /// `keysym` (and `text`), and that every key is up at the end.
    func verify(_ plan: [KeyStroke], key: UInt16, keysym: UInt32, text: Unicode.Scalar?) -> Bool {
        reset(trial, to: state)
        for stroke in plan {
            let keycode = UInt32(stroke.code) + 8
            if stroke.isDown && stroke.code == key {
                guard xkb_state_key_get_one_sym(trial, keycode) == keysym else { return false }
                if let text {
                    var buffer = [CChar](repeating: 0, count: 16)
                    let count = xkb_state_key_get_utf8(trial, keycode, &buffer, 16)
                    let typed = String(decoding: buffer.prefix(Int(max(0, count))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    let expected = text == "\n" ? "\r" : String(text)
                    guard typed == expected else { return false }
                }
            }
            xkb_state_update_key(trial, keycode, stroke.isDown ? XKB_KEY_DOWN : XKB_KEY_UP)
        }
        return true
    }

    /// Strokes that lock `layout` from the current state through the keymap's own group
    /// keys (`ISO_Next_Group`…), at most one press per layout; `[]` when already there.
    func layoutSwitch(to layout: UInt32) -> [KeyStroke]? {
        let current = xkb_state_serialize_layout(state, XKB_STATE_LAYOUT_EFFECTIVE)
        if current == layout { return [] }
        let groupKeysyms: Set<UInt32> = [
            UInt32(XKB_KEY_ISO_Next_Group), UInt32(XKB_KEY_ISO_Prev_Group), UInt32(XKB_KEY_ISO_First_Group),
            UInt32(XKB_KEY_ISO_Last_Group),
        ]
        // One press of a group key (with its level's modifiers), repeated until the layout
        // is reached; each press checked on the trial state.
        for code in Self.candidateCodes(keymap) {
            let keycode = UInt32(code) + 8
            for level in 0..<xkb_keymap_num_levels_for_key(keymap.keymap, keycode, current) {
                var syms: UnsafePointer<xkb_keysym_t>?
                let count = xkb_keymap_key_get_syms_by_level(keymap.keymap, keycode, current, level, &syms)
                guard count == 1, let syms, groupKeysyms.contains(syms[0]) else { continue }
                var masks = [xkb_mod_mask_t](repeating: 0, count: 16)
                let maskCount = xkb_keymap_key_get_mods_for_level(keymap.keymap, keycode, current, level, &masks, 16)
                for mask in masks.prefix(Int(maskCount)) where mask & 0b1_0010 == 0 {
                    guard let held = heldKeys(for: mask) else { continue }
                    let press =
                        held.map { KeyStroke(code: $0, isDown: true) } + [
                            KeyStroke(code: code, isDown: true), KeyStroke(code: code, isDown: false),
                        ] + held.reversed().map { KeyStroke(code: $0, isDown: false) }
                    var plan: [KeyStroke] = []
                    reset(trial, to: state)
                    for _ in 0..<layoutCount {
                        for stroke in press {
                            xkb_state_update_key(trial, UInt32(stroke.code) + 8, stroke.isDown ? XKB_KEY_DOWN : XKB_KEY_UP)
                        }
                        plan += press
                        if xkb_state_serialize_layout(trial, XKB_STATE_LAYOUT_EFFECTIVE) == layout
                            && xkb_state_serialize_mods(trial, XKB_STATE_MODS_LOCKED) == 0
                        {
                            return plan
                        }
                    }
                }
            }
        }
        return nil
    }

    /// A dead key (or `Multi_key`) then a key, that the Compose table composes into `scalar`.
    func composed(_ scalar: Unicode.Scalar) -> [KeyStroke]? {
        guard let composeState else { return nil }
        let wanted = Array(String(scalar).utf8)
        // The keysyms the keymap types directly, in the current layout first.
        var starters: [UInt32] = []
        var others: [UInt32] = []
        var seen = Set<UInt32>()
        for layout in 0..<layoutCount {
            for code in Self.candidateCodes(keymap) {
                let keycode = UInt32(code) + 8
                for level in 0..<xkb_keymap_num_levels_for_key(keymap.keymap, keycode, layout) {
                    var syms: UnsafePointer<xkb_keysym_t>?
                    guard xkb_keymap_key_get_syms_by_level(keymap.keymap, keycode, layout, level, &syms) == 1, let syms else { continue }
                    let keysym = syms[0]
                    guard seen.insert(keysym).inserted else { continue }
                    let isDead = (UInt32(XKB_KEY_dead_grave)...UInt32(XKB_KEY_dead_greek)).contains(keysym)
                    if isDead || keysym == UInt32(XKB_KEY_Multi_key) { starters.append(keysym) } else { others.append(keysym) }
                }
            }
        }
        var buffer = [CChar](repeating: 0, count: 64)
        for starter in starters {
            for second in starters + others {
                xkb_compose_state_reset(composeState)
                xkb_compose_state_feed(composeState, starter)
                guard xkb_compose_state_get_status(composeState) == XKB_COMPOSE_COMPOSING else { break }
                xkb_compose_state_feed(composeState, second)
                guard xkb_compose_state_get_status(composeState) == XKB_COMPOSE_COMPOSED else { continue }
                let count = Int(xkb_compose_state_get_utf8(composeState, &buffer, 64))
                guard count == wanted.count, zip(buffer, wanted).allSatisfy({ UInt8(bitPattern: $0) == $1 }) else { continue }
                // Both keys typed one after the other, each checked on the state.
                guard let first = strokes(for: starter, text: nil) else { continue }
                let saved = (
                    xkb_state_serialize_mods(state, XKB_STATE_MODS_LOCKED), xkb_state_serialize_layout(state, XKB_STATE_LAYOUT_LOCKED)
                )
                play(first)
                let then = strokes(for: second, text: nil)
                xkb_state_update_mask(state, 0, 0, saved.0, 0, 0, saved.1)
                if let then { return first + then }
            }
        }
        xkb_compose_state_reset(composeState)
        return nil
    }
}
