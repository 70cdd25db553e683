import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Text → key strokes, played back through libxkbcommon read by its own program.
@Suite("Keymap typing")
struct KeymapTypingTests {
    func roundTrip(_ text: String, _ configuration: KeyboardConfiguration) throws -> String {
        let keymap = try Keymap(configuration: configuration)
        let strokes = try keymap.keyStrokes(typing: text, composeTable: try ComposeTable(locale: "en_US.UTF-8"))
        let lines = try XKBReference.interpret(
            strokes.map { ($0.code, $0.isDown ? 1 : 0) }, configuration: configuration, locale: "en_US.UTF-8")
        return XKBReference.text(of: lines)
    }

    @Test(
        "text typed in a keymap reads back the same through libxkbcommon",
        arguments: [
            ("àéç@€ ù", "fr", "", ""),
            ("Grüße, Welt! @€ {ß}", "de", "", ""),
            ("Hello, World! ~`|", "us", "", ""),
            ("zäy Ölz", "us,de", "", "grp:alt_shift_toggle"),
            ("êâ ë", "fr", "", ""),
            ("é", "us", "intl", ""),
        ])
    func roundTrips(_ text: String, _ layout: String, _ variant: String, _ options: String) throws {
        #expect(try roundTrip(text, KeyboardConfiguration(layout: layout, variant: variant, options: options)) == text)
    }

    @Test("AltGr levels, dead keys and layout switches are the strokes xkbcli how-to-type names")
    func strokes() throws {
        let fr = try Keymap(configuration: KeyboardConfiguration(layout: "fr"))
        // xkbcli how-to-type --layout fr 0x20ac: keycode 26 (AD03, KEY_E), level 3, [ Mod5 ].
        let euro = try fr.keyStrokes(typing: "€")
        #expect(euro.map(\.description) == ["KEY_RIGHTALT down", "KEY_E down", "KEY_E up", "KEY_RIGHTALT up"])
        // ê: no key in fr; dead_circumflex (KEY_LEFTBRACE) then e.
        let circumflex = try fr.keyStrokes(typing: "ê", composeTable: try ComposeTable(locale: "en_US.UTF-8"))
        #expect(circumflex.map(\.description) == ["KEY_LEFTBRACE down", "KEY_LEFTBRACE up", "KEY_E down", "KEY_E up"])
        #expect(throws: UntypableCharacter.self) { try fr.keyStrokes(typing: "ê") }
    }

    @Test("an untypable character is refused with its name and position, nothing typed")
    func untypable() throws {
        let us = try Keymap(configuration: KeyboardConfiguration(layout: "us"))
        do {
            _ = try us.keyStrokes(typing: "ab中c", composeTable: try ComposeTable(locale: "en_US.UTF-8"))
            Issue.record("typed an untypable character")
        } catch let error as UntypableCharacter {
            #expect(error.position == 3 && error.character == "中")
            #expect(error.description.contains("U+4E2D CJK UNIFIED IDEOGRAPH-4E2D") && error.description.contains("position 3"))
        }
    }
}
