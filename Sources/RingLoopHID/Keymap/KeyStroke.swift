import CXKBCommon
import RingLoopEvdev

/// One key going down or up, of a sequence that types text in a keymap
/// (``Keymap/keyStrokes(typing:composeTable:)``).
public struct KeyStroke: Sendable, Hashable, CustomStringConvertible {
    /// The Linux key code (`KEY_A` is 30).
    public var code: UInt16
    /// Whether the key goes down (else up).
    public var isDown: Bool

    /// A stroke of `code`.
    ///
    /// - Parameters:
    ///   - code: The Linux key code.
    ///   - isDown: Down, else up.
    public init(code: UInt16, isDown: Bool) {
        self.code = code
        self.isDown = isDown
    }

    public var description: String { "\(Evdev.shownName(ofCode: code, type: Evdev.EV_KEY)) \(isDown ? "down" : "up")" }
}

/// A character that a keymap cannot type: on no key at any level or layout the keymap's
/// modifiers reach, and through no dead key of the keymap that the Compose table names.
public struct UntypableCharacter: Error, Equatable, CustomStringConvertible {
    /// The character.
    public var character: Unicode.Scalar
    /// Its position in the text, counting Unicode scalars from 1.
    public var position: Int
    /// The keymap's configuration.
    public var configuration: KeyboardConfiguration

    public var description: String {
        let hex = String(character.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        let name = character.properties.name ?? character.properties.nameAlias ?? "unnamed"
        let shown = character.properties.generalCategory == .control ? "" : "\"\(character)\" "
        return "\(shown)(\(code) \(name)) at position \(position) cannot be typed with the keymap \(configuration): "
            + "no key, level or layout gives it, nor a dead key followed by a key (Compose table); nothing was typed"
    }
}
