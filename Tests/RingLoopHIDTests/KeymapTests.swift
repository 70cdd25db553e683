import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The keymap core against libxkbcommon read by a program of its own (XKBReference) and
/// against the rules' list and xkbcommon's behaviour.
@Suite("Keymap")
struct KeymapTests {
    static let configurations: [KeyboardConfiguration] = [
        KeyboardConfiguration(layout: "us"), KeyboardConfiguration(layout: "de"), KeyboardConfiguration(layout: "fr"),
        KeyboardConfiguration(layout: "us,de", options: "grp:alt_shift_toggle"),
    ]

    /// Every bundled recording with keyboard keys (codes below `BTN_MISC`): its key events.
    static let keyboardRecordings: [(name: String, events: [(code: UInt16, value: Int32)])] = {
        var recordings: [(String, Recording)] = []
        if let folder = opendir(devicesFolder) {
            while let entry = readdir(folder) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                guard name.hasSuffix(".evemu") else { continue }
                if let recording = try? Recording.load(contentsOf: devicesFolder + "/" + name) { recordings.append((name, recording)) }
            }
            closedir(folder)
        }
        for real in RealRecording.all {
            for recording in (try? real.load()) ?? [] { recordings.append(("real/" + real.file, recording)) }
        }
        return recordings.compactMap { name, recording in
            let keys = recording.events.filter { $0.type == Evdev.EV_KEY && $0.code < 0x100 && (0...2).contains($0.value) }
            guard !keys.isEmpty else { return nil }
            return (name, keys.map { (code: $0.code, value: $0.value) })
        }.sorted { $0.0 < $1.0 }
    }()

    @Test("every keyboard recording gives libxkbcommon's keysyms, text and LEDs in us, de, fr and us,de")
    func recordingsMatchLibxkbcommon() throws {
        #expect(Self.keyboardRecordings.count >= 4, "keyboard recordings found: \(Self.keyboardRecordings.map(\.name))")
        let compose = try ComposeTable(locale: "en_US.UTF-8")
        for configuration in Self.configurations {
            let keymap = try Keymap(configuration: configuration)
            for (name, events) in Self.keyboardRecordings {
                let expected = try XKBReference.interpret(events, configuration: configuration, locale: "en_US.UTF-8")
                let state = KeyboardState(keymap: keymap, composeTable: compose)
                let got = XKBReference.interpretWithKeymap(events, state: state)
                #expect(got.count == expected.count)
                if let index = zip(got, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                    Issue.record("\(name) in \(configuration): event \(index): \(got[index]), libxkbcommon: \(expected[index])")
                }
                if name == "keyboard.evemu" {
                    // The bundled recording types "Hello a…" with Shift: its text differs by layout.
                    let text = XKBReference.text(of: expected)
                    #expect(
                        text.hasPrefix(configuration.layout == "fr" ? "Hello q" : "Hello a"), "\(configuration): \(text.debugDescription)")
                }
            }
        }
    }

    /// Key codes by name, for sequences written here.
    static func key(_ name: String) -> UInt16 { Evdev.code(named: "KEY_" + name)!.code }
    static func tap(_ names: String...) -> [(code: UInt16, value: Int32)] {
        names.flatMap { name -> [(code: UInt16, value: Int32)] in [(key(name), 1), (key(name), 0)] }
    }

    func compare(
        _ events: [(code: UInt16, value: Int32)], _ configuration: KeyboardConfiguration, locale: String? = "en_US.UTF-8"
    ) throws -> (lines: [XKBReference.Line], state: KeyboardState) {
        let expected = try XKBReference.interpret(events, configuration: configuration, locale: locale)
        let state = KeyboardState(
            keymap: try Keymap(configuration: configuration), composeTable: try locale.map { try ComposeTable(locale: $0) })
        let got = XKBReference.interpretWithKeymap(events, state: state)
        #expect(got == expected)
        return (expected, state)
    }

    @Test("two layouts: Alt+Shift switches us to de and back, as libxkbcommon says")
    func twoLayouts() throws {
        let switchLayout: [(code: UInt16, value: Int32)] = [
            (Self.key("LEFTALT"), 1), (Self.key("LEFTSHIFT"), 1), (Self.key("LEFTSHIFT"), 0), (Self.key("LEFTALT"), 0),
        ]
        let events = Self.tap("Z", "Y") + switchLayout + Self.tap("Z", "Y", "SEMICOLON") + switchLayout + Self.tap("Z")
        let (lines, state) = try compare(events, Self.configurations[3])
        #expect(XKBReference.text(of: lines) == "zyyzöz")
        #expect(state.modifiers.layout == 0)
        #expect(state.keymap.layoutNames.count == 2)
    }

    @Test("Caps Lock and Num Lock: locked modifiers, LEDs and text as libxkbcommon says")
    func locks() throws {
        let events =
            Self.tap("CAPSLOCK", "A") + [(Self.key("LEFTSHIFT"), 1)] + Self.tap("A") + [(Self.key("LEFTSHIFT"), 0)]
            + Self.tap("KP1", "NUMLOCK", "KP1", "CAPSLOCK", "A")
        let (lines, state) = try compare(events, KeyboardConfiguration(layout: "us"))
        #expect(XKBReference.text(of: lines) == "Aa1a")
        #expect(lines.contains { $0.leds == "caps" } && lines.contains { $0.leds == "caps,num" || $0.leds == "num,caps" })
        #expect(state.leds == .numLock)
        #expect(state.modifiers.locked == .numLock)

        // The interpretation says when LEDs change, and carries the locks.
        let fresh = KeyboardState(keymap: state.keymap)
        let caps = fresh.process(code: Self.key("CAPSLOCK"), state: .down)
        #expect(caps.ledsChanged && caps.leds == .capsLock && caps.modifiers.locked == .capsLock)
        #expect(!fresh.process(code: Self.key("CAPSLOCK"), state: .up).ledsChanged)
        var event = KeyEvent(usage: nil, code: Self.key("A"), state: .down)
        fresh.apply(to: &event)
        #expect(event.text.string == "A" && Keymap.keysymName(event.keysym) == "A")
        #expect(event.keymapModifiers.effective.contains(.capsLock))
    }

    @Test("repeat: a letter repeats its text, a modifier's repeat is ignored (xkb_keymap_key_repeats)")
    func repeats() throws {
        let events: [(code: UInt16, value: Int32)] = [
            (Self.key("A"), 1), (Self.key("A"), 2), (Self.key("A"), 0), (Self.key("LEFTSHIFT"), 1), (Self.key("LEFTSHIFT"), 2),
            (Self.key("LEFTSHIFT"), 0),
        ]
        let (lines, _) = try compare(events, KeyboardConfiguration(layout: "us"))
        #expect(XKBReference.text(of: lines) == "aa")
        #expect(lines[4].keysym == "ignored")
    }

    @Test("compose: dead_acute then e gives é on the e; a cancelled sequence swallows its key")
    func compose() throws {
        let intl = KeyboardConfiguration(layout: "us", variant: "intl")
        let events = Self.tap("APOSTROPHE", "E") + Self.tap("APOSTROPHE", "B") + Self.tap("A")
        let (lines, _) = try compare(events, intl)
        #expect(XKBReference.text(of: lines) == "éa")

        let state = KeyboardState(keymap: try Keymap(configuration: intl), composeTable: try ComposeTable(locale: "en_US.UTF-8"))
        let dead = state.process(code: Self.key("APOSTROPHE"), state: .down)
        #expect(dead.compose == .composing && dead.text.isEmpty && Keymap.keysymName(dead.keysym) == "dead_acute")
        _ = state.process(code: Self.key("APOSTROPHE"), state: .up)
        let composed = state.process(code: Self.key("E"), state: .down)
        #expect(composed.compose == .composed && composed.text.string == "é" && Keymap.keysymName(composed.keysym) == "eacute")
        _ = state.process(code: Self.key("APOSTROPHE"), state: .down)
        let cancelled = state.process(code: Self.key("B"), state: .down)
        #expect(cancelled.compose == .cancelled && cancelled.text.isEmpty)

        // The focus moving away ends a sequence.
        _ = state.process(code: Self.key("APOSTROPHE"), state: .down)
        state.cancelComposeAndLatches()
        #expect(state.process(code: Self.key("E"), state: .down).text.string == "e")
    }

    @Test("three-key compose (compose:ralt): Multi_key o c gives ©, Multi_key c o gives ǒ, as libxkbcommon and libx11-data's table say")
    func threeKeyCompose() throws {
        let multi = KeyboardConfiguration(layout: "us", options: "compose:ralt")
        let events = Self.tap("RIGHTALT", "O", "C") + Self.tap("RIGHTALT", "C", "O") + Self.tap("A")
        let (lines, _) = try compare(events, multi)
        #expect(XKBReference.text(of: lines) == "©ǒa")

        let state = KeyboardState(keymap: try Keymap(configuration: multi), composeTable: try ComposeTable(locale: "en_US.UTF-8"))
        let key = state.process(code: Self.key("RIGHTALT"), state: .down)
        #expect(key.compose == .composing && key.text.isEmpty && Keymap.keysymName(key.keysym) == "Multi_key")
        _ = state.process(code: Self.key("RIGHTALT"), state: .up)
        let second = state.process(code: Self.key("O"), state: .down)
        #expect(second.compose == .composing && second.text.isEmpty, "the middle key of a sequence types nothing")
        _ = state.process(code: Self.key("O"), state: .up)
        let third = state.process(code: Self.key("C"), state: .down)
        #expect(third.compose == .composed && third.text.string == "©" && Keymap.keysymName(third.keysym) == "copyright")
    }

    @Test("the C and POSIX locales load en_US.UTF-8's Compose table, as libxkbcommon's tools do")
    func cLocale() throws {
        let table = try ComposeTable.forLocale(environment: ["LANG": "C"])
        #expect(table.locale == "en_US.UTF-8")
        #expect(table.localeOrigin.contains("LANG") && table.localeOrigin.contains("en_US.UTF-8"))
        #expect(try ComposeTable.forLocale(environment: ["LC_ALL": "de_DE.UTF-8", "LANG": "C"]).locale == "de_DE.UTF-8")
        #expect(try ComposeTable.forLocale(environment: [:]).locale == "en_US.UTF-8")
    }

    @Test("an unknown layout, variant, model or option is an error naming the rules' list")
    func unknownNames() throws {
        let list = "/usr/share/X11/xkb/rules/evdev.lst"
        #expect(throws: KeymapError.unknownLayout("zz", listedIn: list)) { try Keymap(configuration: KeyboardConfiguration(layout: "zz")) }
        #expect(throws: KeymapError.unknownLayout("zz", listedIn: list)) {
            try Keymap(configuration: KeyboardConfiguration(layout: "us,zz"))
        }
        #expect(throws: KeymapError.unknownVariant("foo", layout: "us", listedIn: list)) {
            try Keymap(configuration: KeyboardConfiguration(layout: "us", variant: "foo"))
        }
        #expect(throws: KeymapError.unknownVariant("foo", layout: "de", listedIn: list)) {
            try Keymap(configuration: KeyboardConfiguration(layout: "us,de", variant: ",foo"))
        }
        #expect(throws: KeymapError.unknownOption("grp:nonsense", listedIn: list)) {
            try Keymap(configuration: KeyboardConfiguration(layout: "us", options: "grp:alt_shift_toggle,grp:nonsense"))
        }
        #expect(throws: KeymapError.unknownModel("nonsense", listedIn: list)) {
            try Keymap(configuration: KeyboardConfiguration(model: "nonsense", layout: "us"))
        }
        #expect(KeymapError.unknownLayout("zz", listedIn: list).description.contains(list))
        // What libxkbcommon does with each, so the checks above are needed where it fails not.
        for (arguments, fails) in [(["--layout", "zz"], true), (["--options", "grp:nonsense"], false), (["--model", "nonsense"], false)] {
            let child = try Spawned("/usr/bin/xkbcli", ["compile-keymap"] + arguments)
            #expect((child.finish() != 0) == fails, "xkbcli compile-keymap \(arguments)")
        }
    }

    @Test("RMLVO resolution: explicit, then /etc/default/keyboard, then XKB_DEFAULT_*, then us; each with its origin")
    func resolution() throws {
        let path = "/tmp/ringloop-keyboard-\(getpid())"
        defer { unlink(path) }
        _ = try Recording.write(
            "# KEYBOARD CONFIGURATION FILE\nXKBMODEL=\"pc105\"\nXKBLAYOUT=\"de\"\nXKBVARIANT=\"nodeadkeys\"\nXKBOPTIONS=\"\"\n\nBACKSPACE=\"guess\"\n",
            to: path)
        let environment = [
            "XKB_DEFAULT_LAYOUT": "fr", "XKB_DEFAULT_VARIANT": "azerty", "XKB_DEFAULT_OPTIONS": "compose:ralt",
            "XKB_DEFAULT_MODEL": "pc104",
        ]

        let fromFile = try KeyboardConfiguration.resolve(consoleConfiguration: path, environment: environment)
        #expect(fromFile.layout == "de" && fromFile.variant == "nodeadkeys" && fromFile.options == "" && fromFile.model == "pc105")
        #expect(fromFile.origins.layout == .consoleConfiguration(path: path, variable: "XKBLAYOUT"))
        #expect(fromFile.origins.rules == .builtInDefault)

        let explicit = try KeyboardConfiguration.resolve(.init(layout: "us"), consoleConfiguration: path, environment: environment)
        #expect(explicit.layout == "us" && explicit.variant == "" && explicit.origins.layout == .explicit)
        #expect(explicit.origins.options == .consoleConfiguration(path: path, variable: "XKBOPTIONS"))

        let fromEnvironment = try KeyboardConfiguration.resolve(consoleConfiguration: path + ".absent", environment: environment)
        #expect(fromEnvironment.layout == "fr" && fromEnvironment.variant == "azerty" && fromEnvironment.options == "compose:ralt")
        #expect(fromEnvironment.origins.model == .environment(variable: "XKB_DEFAULT_MODEL"))

        let defaults = try KeyboardConfiguration.resolve(consoleConfiguration: path + ".absent", environment: [:])
        #expect(
            defaults.layout == "us" && defaults.model == "pc105" && defaults.rules == "evdev" && defaults.origins.layout == .builtInDefault)

        _ = try Recording.write("XKBLAYOUT=\"de\"\nthis is not shell\n", to: path)
        #expect(
            throws: KeymapError.consoleConfiguration(path: path, line: 2, message: "expected NAME=value, a comment (#) or a blank line")
        ) {
            try KeyboardConfiguration.resolve(consoleConfiguration: path, environment: [:])
        }
    }

    @Test("KeyText keeps 15 bytes inline and cuts a longer text after its last whole character")
    func keyText() {
        #expect(KeyText("é").string == "é" && KeyText("é").count == 2 && !KeyText("é").isTruncated)
        let long = KeyText("ééééééééé")  // 18 bytes
        #expect(long.string == "ééééééé" && long.isTruncated && long.count == 14)
        #expect(KeyText().isEmpty)
    }
}

@Suite("Keymap on the event server's wire")
struct KeymapWireTests {
    @Test("a key event's keysym, text and keymap modifiers read back equal; bad text is refused by name")
    func keyFields() throws {
        let keymap = try Keymap(configuration: KeyboardConfiguration(layout: "fr"))
        let state = KeyboardState(keymap: keymap)
        var events: [HIDEvent] = []
        for code in [Evdev.KEY_2, Evdev.KEY_CAPSLOCK, Evdev.KEY_Q] {
            var key = KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .down)
            state.apply(to: &key)
            events.append(HIDEvent(device: HIDDeviceID(rawValue: 1), timestamp: .now, payload: .key(key)))
        }
        guard case .key(let first) = events[0].payload, case .key(let last) = events[2].payload else { return }
        #expect(first.text.string == "é" && last.text.string == "A" && last.keymapModifiers.locked == .capsLock)
        for event in events {
            var writer = WireWriter()
            ServerWire.encode(event, into: &writer)
            #expect(writer.bytes.count == ServerWire.encodedSize(event))
            var reader = WireReader(writer.bytes)
            #expect(try ServerWire.decodeEvent(from: &reader) == event)
        }
        // The text's bytes are checked: a lone continuation byte is not UTF-8.
        var writer = WireWriter()
        ServerWire.encode(events[0], into: &writer)
        var bytes = writer.bytes
        let textAt = bytes.count - 4 - 2  // "é" is 2 bytes, then the four modifier bytes
        bytes[textAt] = 0xA9
        var reader = WireReader(bytes)
        #expect(throws: ServerWire.Violation.notUTF8(field: "key text")) { try ServerWire.decodeEvent(from: &reader) }
    }
}
