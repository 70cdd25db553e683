import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// The keymap stage on the kernel's own devices: lock LEDs written to a uinput keyboard
/// and read back with `EVIOCGLED`, and `ringloop type` through a uinput keyboard.
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

    /// `ringloop type --backend uinput --layout fr "àéç@€"` makes a uinput keyboard and types
    /// into it; the chain reads it with fr and gets the same text.
    static func keymapType(_ context: CheckContext) {
        guard context.report.wants("keymap-type") else { return }
        let text = "àéç@€"
        do {
            context.chain.setKeymap(try Keymap(configuration: KeyboardConfiguration(layout: "fr")))
        } catch {
            return context.report.fail("keymap-type", "\(error)")
        }
        defer { context.chain.setKeymap(nil) }
        let mark = context.chain.mark()
        let out = "/tmp/type-\(getpid()).out"
        defer { unlink(out) }
        guard let child = ChildCommand(["type", "--backend", "uinput", "--layout", "fr", "--wait", "2", text], output: out) else {
            return context.report.fail("keymap-type", "cannot start ringloop type")
        }
        var node: String?
        waitUntil(.seconds(20)) {
            node = fileText(out)?.split(separator: "\n").first.map(String.init)
            return node != nil || !child.isRunning
        }
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
        context.report.check(
            "keymap-type", status == 0 && typed() == text,
            "ringloop type --backend uinput --layout fr \(text.debugDescription): exit \(status), node \(node ?? "none"),"
                + " the chain read with fr: \(typed().debugDescription)")
    }
}
