import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// The keymap stage on the kernel's own devices: lock LEDs written to a uinput keyboard
/// and read back with `EVIOCGLED`, and `ringloop type` through a uinput keyboard, read by
/// the chain, as `evtest` reads and by libinput.
extension KernelChecks {
    static func keymap(_ context: CheckContext) {
        keymapLEDs(context)
        keymapType(context)
    }

    /// Caps Lock on a uinput keyboard through the chain's keymap stage: the device is told
    /// `LED_CAPSL` 1 (as a keyboard's driver hears it), `EVIOCGLED` reads it on, and `a`
    /// types `A`; Caps Lock again turns it off and `a` types `a`.
    static func keymapLEDs(_ context: CheckContext) {
        guard context.report.wants("keymap-leds") else { return }
        do {
            context.chain.setKeymap(try Keymap(configuration: KeyboardConfiguration(layout: "us")))
            defer { context.chain.setKeymap(nil) }
            let mark = context.chain.mark()
            let device = try UInputDevice(keyboard)
            defer { device.remove() }
            guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else {
                return context.report.fail("keymap-leds", "the chain never attached it")
            }
            var told: [InputEvent] = []
            func tap(_ code: UInt16) throws {
                try device.send(frame([(Evdev.EV_KEY, code, 1)]))
                try device.send(frame([(Evdev.EV_KEY, code, 0)]))
            }
            func capsLED(_ on: Bool) -> (told: Bool, read: Bool) {
                let heard = waitUntil(.seconds(5)) {
                    told += device.receivedEvents()
                    return told.last { $0.type == Evdev.EV_LED && $0.code == Evdev.LED_CAPSL }?.value == (on ? 1 : 0)
                }
                let fd = open(device.nodePath, O_RDONLY | O_CLOEXEC)
                defer { close(fd) }
                let leds = (try? EvdevDevice(fileDescriptor: fd).ledsOn()) ?? []
                return (heard, leds.contains(Evdev.LED_CAPSL) == on)
            }
            func texts() -> [String] {
                context.chain.events(of: id).compactMap { event in
                    guard case .key(let key) = event.payload, key.state == .down, key.code == Evdev.KEY_A else { return nil }
                    return key.text.string
                }
            }
            try tap(Evdev.KEY_CAPSLOCK)
            let lit = capsLED(true)
            try tap(Evdev.KEY_A)
            waitUntil(.seconds(5)) { texts().count == 1 }
            try tap(Evdev.KEY_CAPSLOCK)
            let dark = capsLED(false)
            try tap(Evdev.KEY_A)
            waitUntil(.seconds(5)) { texts().count == 2 }
            let typed = texts()
            context.report.check(
                "keymap-leds", lit.told && lit.read && dark.told && dark.read && typed == ["A", "a"],
                "Caps Lock through the keymap stage: the device was told LED_CAPSL on \(lit.told), EVIOCGLED on \(lit.read);"
                    + " again: told off \(dark.told), EVIOCGLED off \(dark.read); KEY_A typed \(typed) ([\"A\", \"a\"] expected)")
        } catch {
            context.report.fail("keymap-leds", "\(error)")
        }
    }

    /// `ringloop type --backend uinput --layout fr TEXT` makes a uinput keyboard and types
    /// into it; the node is read three ways at once, and each gives the same text: the
    /// chain with fr; a reader of the raw events as `evtest` reads them (``NodeCapture``),
    /// the keys fed to libxkbcommon with fr (``KeyboardState``); and libinput 1.22
    /// (`libinput debug-events --show-keycodes`, the node's udev entry saying it is a
    /// keyboard), its `KEYBOARD_KEY` codes fed to libxkbcommon with fr the same way.
    static func keymapType(_ context: CheckContext) {
        let name = "keymap-type"
        guard context.report.wants(name) else { return }
        let text = "àéç@€ où est l'été ? 5 € @ Paris!"
        let keymap: Keymap
        do {
            keymap = try Keymap(configuration: KeyboardConfiguration(layout: "fr"))
        } catch {
            return context.report.fail(name, "\(error)")
        }
        context.chain.setKeymap(keymap)
        defer { context.chain.setKeymap(nil) }
        let mark = context.chain.mark()
        let out = "/tmp/type-\(getpid()).out"
        defer { unlink(out) }
        // Long enough for libinput to start on the node (under emulation: 0.4 s measured).
        let started = MonotonicInstant.now
        guard let child = ChildCommand(["type", "--backend", "uinput", "--layout", "fr", "--wait", "2", text], output: out) else {
            return context.report.fail(name, "cannot start ringloop type")
        }
        var node: String?
        waitUntil(.seconds(20)) {
            node = fileText(out)?.split(separator: "\n").first.map(String.init)
            return node != nil || !child.isRunning
        }
        let capture = node.flatMap { NodeCapture(path: $0) }
        var libinput: Result<LibinputDebugEvents, LibinputFailure> = .failure(LibinputFailure("no node"))
        var entry: UdevDatabaseEntry?
        if let node {
            do {
                let properties = ["ID_INPUT": "1", "ID_INPUT_KEY": "1", "ID_INPUT_KEYBOARD": "1"]
                entry = try UdevDatabaseEntry(node: node, properties: properties)
                libinput = .success(try LibinputDebugEvents(node: node))
            } catch {
                libinput = .failure(error)
            }
        }
        defer { entry?.remove() }
        let libinputReady = milliseconds(MonotonicInstant.now - started)
        let id = node.flatMap { context.chain.waitForDevice(atPath: $0, after: mark) }
        func typed() -> String {
            guard let id else { return "" }
            return context.chain.events(of: id).compactMap { event -> String? in
                guard case .key(let key) = event.payload else { return nil }
                return key.text.string
            }.joined()
        }
        waitUntil(.seconds(30)) { typed() == text || !child.isRunning && (id.map(context.chain.wasRemoved) ?? true) }
        let status = child.wait()
        capture?.finish()
        let raw = (capture?.captured ?? []).filter { $0.type == Evdev.EV_KEY }.map { (code: $0.code, pressed: $0.value != 0) }
        var libinputText = ""
        var libinputSummary = ""
        switch libinput {
        case .success(let session):
            let reading = session.finish(expectedEvents: capture?.captured.count ?? 0)
            let keys = reading.events.compactMap { $0.type == "KEYBOARD_KEY" ? $0.press : nil }
            libinputText = Self.text(of: keys, keymap: keymap)
            libinputSummary = reading.summary
        case .failure(let failure):
            libinputSummary = failure.description
        }
        let rawText = Self.text(of: raw, keymap: keymap)
        let chainText = typed()
        context.report.check(
            name, status == 0 && chainText == text && rawText == text && libinputText == text,
            "ringloop type --backend uinput --layout fr \(text.debugDescription): exit \(status), node \(node ?? "none");"
                + " the chain read with fr \(chainText.debugDescription); the node's \(raw.count) key events through"
                + " xkbcommon with fr \(rawText.debugDescription); libinput's keys through xkbcommon with fr"
                + " \(libinputText.debugDescription) (libinput showed the device after \(Int(libinputReady)) ms;"
                + " \(libinputSummary))")
    }

    /// The text key presses and releases type in `keymap`, read as libxkbcommon's users
    /// read it (a fresh keyboard state: no lock, no modifier).
    static func text(of keys: [(code: UInt16, pressed: Bool)], keymap: Keymap) -> String {
        let state = KeyboardState(keymap: keymap)
        return keys.map { key in state.process(code: key.code, state: key.pressed ? .down : .up).text.string }.joined()
    }
}
