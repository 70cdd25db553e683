import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The keymap stage in a running chain: two FUSE keyboards on one seat, their LEDs, a
/// device going away, compose; the text compared with libxkbcommon's for the same keys.
@Suite("Keymap stage", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct KeymapStageTests {
    static func key(_ name: String) -> UInt16 { Evdev.code(named: "KEY_" + name)!.code }

    @Test("one state for the seat: Shift on one keyboard shifts the other's keys, Caps Lock lights both; text as libxkbcommon gives")
    func twoKeyboards() throws {
        let recording = try loadRecording("keyboard")
        let configuration = KeyboardConfiguration(layout: "de")
        try withChain { folder, system, loop, events in
            system.setKeymap(try Keymap(configuration: configuration), composeTable: try ComposeTable(locale: "en_US.UTF-8"))
            #expect(system.stageOrder.first == "keymap")
            let first = try folder.addDevice(recording.description!)
            let second = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            func keys() -> [KeyEvent] { events().compactMap { if case .key(let key) = $0.payload { key } else { nil } } }
            var sent: [(code: UInt16, value: Int32)] = []
            func press(_ node: FUSEEvdevNode, _ names: [(String, Int32)]) throws {
                for (name, value) in names {
                    let before = keys().count
                    try node.send([(1, Self.key(name), value), (0, 0, 0)])
                    sent.append((Self.key(name), value))
                    // A repeat of a key that does not repeat is consumed: nothing arrives.
                    if value == 2 && name.hasSuffix("SHIFT") {
                        loop.run(mode: .default, for: .milliseconds(50))
                        #expect(keys().count == before, "a Shift repeat is consumed")
                    } else {
                        #expect(runUntil(loop) { keys().count > before })
                    }
                }
            }
            try press(first, [("LEFTSHIFT", 1), ("LEFTSHIFT", 2)])
            try press(second, [("Z", 1), ("Z", 0)])
            try press(first, [("LEFTSHIFT", 0), ("CAPSLOCK", 1), ("CAPSLOCK", 0)])
            #expect(first.ledsOn == [Evdev.LED_CAPSL] && second.ledsOn == [Evdev.LED_CAPSL])
            try press(second, [("A", 1), ("A", 2), ("A", 0), ("CAPSLOCK", 1), ("CAPSLOCK", 0)])
            #expect(first.ledsOn.isEmpty && second.ledsOn.isEmpty)
            // de's dead acute (the key right of ß) then e.
            try press(first, [("EQUAL", 1), ("EQUAL", 0), ("E", 1), ("E", 0)])
            let text = keys().map(\.text.string).joined()
            #expect(text == "YAAé")
            let reference = try XKBReference.interpret(sent, configuration: configuration, locale: "en_US.UTF-8")
            #expect(text == XKBReference.text(of: reference))
            #expect(keys().filter { $0.state != .up }.allSatisfy { $0.keysym != 0 })
        }
    }

    @Test("a keyboard that goes away with Shift held leaves the seat unshifted; the focus-free reset ends a compose sequence")
    func removal() throws {
        let recording = try loadRecording("keyboard")
        try withChain { folder, system, loop, events in
            system.setKeymap(
                try Keymap(configuration: KeyboardConfiguration(layout: "us", variant: "intl")),
                composeTable: try ComposeTable(locale: "en_US.UTF-8"))
            let first = try folder.addDevice(recording.description!)
            let second = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { events().filter { $0.kind == .deviceAdded }.count == 2 })
            func texts() -> [String] {
                events().compactMap { if case .key(let key) = $0.payload, key.state == .down { key.text.string } else { nil } }
            }
            try first.send([(1, Self.key("LEFTSHIFT"), 1), (0, 0, 0)])
            #expect(runUntil(loop) { system.keyboardState?.modifiers.effective.contains(.shift) == true })
            first.remove()
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceRemoved } })
            #expect(system.keyboardState?.modifiers.effective.contains(.shift) == false)
            try second.send([(1, Self.key("A"), 1), (0, 0, 0), (1, Self.key("A"), 0), (0, 0, 0)])
            #expect(runUntil(loop) { texts().last == "a" })
            // A dead key, then the state's reset (what the focus going away does), then e.
            try second.send([(1, Self.key("APOSTROPHE"), 1), (0, 0, 0), (1, Self.key("APOSTROPHE"), 0), (0, 0, 0)])
            #expect(runUntil(loop) { texts().count == 3 && texts().last == "" })
            system.keyboardState?.cancelComposeAndLatches()
            try second.send([(1, Self.key("E"), 1), (0, 0, 0)])
            #expect(runUntil(loop) { texts().count == 4 })
            #expect(texts().last == "e")
            // A keymap that does not control the LEDs (a monitor's) leaves them alone.
            system.setKeymap(try Keymap(configuration: KeyboardConfiguration(layout: "us")), controlsLEDs: false)
            try second.send([(1, Self.key("CAPSLOCK"), 1), (0, 0, 0), (1, Self.key("CAPSLOCK"), 0), (0, 0, 0)])
            #expect(runUntil(loop) { system.keyboardState?.leds == .capsLock })
            #expect(second.ledsOn.isEmpty)
            system.setKeymap(nil)
            #expect(!system.stageOrder.contains("keymap"))
        }
    }
}

@Suite("Keymap held by the event server")
struct ServerKeymapTests {
    @Test("clients receive keysym and text from the server's keymap; the focus moving mid-compose ends the sequence")
    func focusMovesMidCompose() throws {
        let name = "test.server.keymap.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let keymap = try Keymap(configuration: KeyboardConfiguration(layout: "us", variant: "intl"))
        let compose = try ComposeTable(locale: "en_US.UTF-8")
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()],
            prepare: { server in server.setKeymap(keymap, composeTable: compose) })
        defer { server.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let first = try RecordingClient(server: name, name: "first")
            let second = try RecordingClient(server: name, name: "second")
            #expect(runUntil(loop) { first.count(.deviceAdded) == 1 && second.count(.deviceAdded) == 1 })
            func typed(_ client: RecordingClient) -> [String] {
                client.events.compactMap { if case .key(let key) = $0.payload, key.state == .down { key.text.string } else { nil } }
            }
            func tap(_ code: UInt16) {
                server.write([TestFrames.key(code, down: true), TestFrames.key(code, down: false)], device: 0)
            }
            // dead_acute then e, with the focus staying: é, from the server's keymap.
            tap(Evdev.KEY_APOSTROPHE)
            tap(Evdev.KEY_E)
            #expect(runUntil(loop) { typed(first) == ["", "é"] }, "\(typed(first))")
            guard case .key(let dead)? = first.events.first(where: { if case .key = $0.payload { true } else { false } })?.payload else {
                return
            }
            #expect(Keymap.keysymName(dead.keysym) == "dead_acute")
            // dead_acute for the first client, then the focus moves: the second's e is an e.
            tap(Evdev.KEY_APOSTROPHE)
            #expect(runUntil(loop) { typed(first).count == 3 })
            let ids = try server.sync { server in server.clients.map(\.id) }
            try server.sync { server in server.focus(ids[1]) }
            #expect(runUntil(loop) { second.system.isFocused })
            tap(Evdev.KEY_E)
            #expect(runUntil(loop) { typed(second) == ["e"] }, "\(typed(second))")
            first.system.stop()
            second.system.stop()
        }
    }

    @Test("the welcome names the server keymap's layouts, as libxkbcommon names them, so a client can show the layout")
    func layoutNamesInTheWelcome() throws {
        let name = "test.server.layouts.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let keymap = try Keymap(configuration: KeyboardConfiguration(layout: "us,de", options: "grp:alt_shift_toggle"))
        // xkb_keymap_layout_get_name, through the keymap.
        #expect(keymap.layoutNames == ["English (US)", "German"])
        let server = try ServerOnThread(
            name: name, devices: [try ServerTestDevices.keyboard()], prepare: { server in server.setKeymap(keymap) })
        defer { server.stop() }
        let plainName = name + ".plain"
        let plain = try ServerOnThread(name: plainName, devices: [try ServerTestDevices.keyboard()], prepare: { _ in })
        defer { plain.stop() }
        try onFreshThread {
            let loop = RingRunLoop.current
            let client = try RecordingClient(server: name, name: "layouts")
            #expect(runUntil(loop) { client.system.isAttachedToServer })
            #expect(client.system.serverLayoutNames == ["English (US)", "German"])
            let without = try RecordingClient(server: plainName, name: "no keymap")
            #expect(runUntil(loop) { without.system.isAttachedToServer })
            #expect(without.system.serverLayoutNames.isEmpty)
            client.system.stop()
            without.system.stop()
        }
    }
}

@Suite("Text posted into the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct PostTextTests {
    @Test("post(text:device:) types through the keymap stage: handlers get the text, as libxkbcommon reads the same keys")
    func postText() throws {
        try withChain { _, system, loop, events in
            #expect(throws: HIDError.self) { try system.post(text: "a", device: HIDDeviceID(rawValue: 900)) }
            let configuration = KeyboardConfiguration(layout: "fr")
            system.setKeymap(try Keymap(configuration: configuration), composeTable: try ComposeTable(locale: "en_US.UTF-8"))
            let text = "àéç@€ ê!"
            let posted = try system.post(text: text, device: HIDDeviceID(rawValue: 900))
            func keys() -> [KeyEvent] { events().compactMap { if case .key(let key) = $0.payload { key } else { nil } } }
            #expect(runUntil(loop) { keys().count == posted })
            #expect(keys().map(\.text.string).joined() == text)
            let reference = try XKBReference.interpret(
                keys().map { (code: $0.code, value: $0.state == .down ? 1 : 0) }, configuration: configuration, locale: "en_US.UTF-8")
            #expect(XKBReference.text(of: reference) == text)
            #expect(throws: UntypableCharacter.self) { try system.post(text: "中", device: HIDDeviceID(rawValue: 900)) }
        }
    }
}

@Suite("Keymap stage with the chain's key repeat", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct KeymapRepeatTests {
    @Test("the chain's repeats get their text from the state when they fire; Caps Lock held does not repeat")
    func repeatsCarryText() throws {
        let recording = try loadRecording("keyboard")
        try onFreshThreadWithDeviceFolder { path, folder, loop in
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: path, keyRepeat: (.milliseconds(30), .milliseconds(10))), loop: loop)
            system.setKeymap(try Keymap(configuration: KeyboardConfiguration(layout: "us")))
            var keys: [KeyEvent] = []
            system.addHandler { event in
                if case .key(let key) = event.payload { keys.append(key) }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            #expect(Array(system.stageOrder.prefix(2)) == ["key repeat", "keymap"])
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { !system.devices.isEmpty })
            // a held: repeats type a; Shift pressed while it repeats: the later ones type A.
            try node.send([(1, 30, 1), (0, 0, 0)])
            #expect(runUntil(loop) { keys.filter { $0.state == .repeat }.count >= 2 })
            try node.send([(1, 42, 1), (0, 0, 0)])
            // Counted from Shift's arrival, not its sending: repeats of a that come before it
            // reaches the loop type a.
            #expect(runUntil(loop) { keys.contains { $0.code == 42 && $0.state == .down } })
            let before = keys.count
            #expect(runUntil(loop) { keys[before...].filter { $0.state == .repeat }.count >= 2 })
            try node.send([(1, 30, 0), (0, 0, 0), (1, 42, 0), (0, 0, 0)])
            #expect(runUntil(loop) { keys.last?.code == 42 && keys.last?.state == .up })
            let repeats = keys.filter { $0.state == .repeat }.map(\.text.string)
            #expect(repeats.first == "a" && repeats.last == "A", "\(repeats)")
            // Caps Lock held past the delay: no repeats reach the handlers.
            try node.send([(1, 58, 1), (0, 0, 0)])
            #expect(runUntil(loop) { keys.last?.code == 58 && keys.last?.state == .down })
            loop.run(mode: .default, for: .milliseconds(120))
            try node.send([(1, 58, 0), (0, 0, 0)])
            #expect(runUntil(loop) { keys.last?.code == 58 && keys.last?.state == .up })
            #expect(!keys.contains { $0.code == 58 && $0.state == .repeat })
        }
    }
}

@Suite("Key repeat without a keymap stage", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct KeyRepeatWithoutKeymapTests {
    @Test("Caps Lock and Num Lock held start no repeat (xkb_keymap_key_repeats of the system's keymap); a letter does")
    func locksDoNotRepeat() throws {
        let recording = try loadRecording("keyboard")
        // What libxkbcommon itself says of the keys, in the keymap the stage compiles.
        let keymap = try Keymap(configuration: KeyboardConfiguration.resolve())
        #expect(!keymap.repeats(code: 58) && !keymap.repeats(code: 69) && keymap.repeats(code: 30))
        try onFreshThreadWithDeviceFolder { path, folder, loop in
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: path, keyRepeat: (.milliseconds(30), .milliseconds(10))), loop: loop)
            var keys: [KeyEvent] = []
            system.addHandler { event in
                if case .key(let key) = event.payload { keys.append(key) }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            #expect(system.stageOrder == ["key repeat", "handlers"])
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { !system.devices.isEmpty })
            for code: UInt16 in [58, 69] {
                try node.send([(1, code, 1), (0, 0, 0)])
                #expect(runUntil(loop) { keys.last?.code == code && keys.last?.state == .down })
                #expect(system.pipeline.keyRepeat?.repeating == nil, "no repeat started for \(code)")
                try node.send([(1, code, 0), (0, 0, 0)])
                #expect(runUntil(loop) { keys.last?.code == code && keys.last?.state == .up })
            }
            try node.send([(1, 30, 1), (0, 0, 0)])
            #expect(runUntil(loop) { keys.filter { $0.code == 30 && $0.state == .repeat }.count >= 2 })
            try node.send([(1, 30, 0), (0, 0, 0)])
            #expect(runUntil(loop) { keys.last?.code == 30 && keys.last?.state == .up })
            #expect(!keys.contains { ($0.code == 58 || $0.code == 69) && $0.state == .repeat })
        }
    }
}
