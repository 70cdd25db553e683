import Dispatch
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

extension KernelChecks {
    /// A chain that attaches while Shift is held, the lid closed and a finger down (in
    /// slot 1, the device's current slot) sees them from its first events: Shift down,
    /// then KEY_H with Shift in its modifiers, the lid on, the touch began, and a move of
    /// that finger sent without a slot number (the input core leaves it out, the slot
    /// being current) lands on it.
    static func stateAtAttach(_ context: CheckContext) {
        guard context.report.wants("state-at-attach") else { return }
        let folder = "/tmp/attach-\(getpid())"
        mkdir(folder, 0o755)
        defer { rmdir(folder) }
        do throws(any Error) {
            let keys = try UInputDevice(keyboard)
            let lidDevice = try UInputDevice(lid)
            let screen = try UInputDevice(touchscreen)
            try keys.send(frame([(Evdev.EV_KEY, Evdev.KEY_LEFTSHIFT, 1)]))
            try lidDevice.send(frame([(Evdev.EV_SW, Evdev.SW_LID, 1)]))
            try screen.send(
                frame([
                    (Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 1), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, 7),
                    (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 100), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 200),
                    (Evdev.EV_KEY, Evdev.BTN_TOUCH, 1), (Evdev.EV_ABS, Evdev.ABS_X, 100), (Evdev.EV_ABS, Evdev.ABS_Y, 200),
                ]))
            // The same devices in a folder of their own, for a chain that starts now.
            var links: [String] = []
            for (index, device) in [keys, lidDevice, screen].enumerated() {
                var info = stat()
                stat(device.nodePath, &info)
                let link = "\(folder)/event\(index)"
                mknod(link, S_IFCHR | 0o600, info.st_rdev)
                links.append(link)
            }
            defer { for link in links { unlink(link) } }
            let chain = try ChainWatch(directory: folder)
            defer { chain.stop() }
            let ids = links.map { chain.waitForDevice(atPath: $0, after: 0) }
            guard let keysID = ids[0], let lidID = ids[1], let screenID = ids[2] else {
                return context.report.fail("state-at-attach", "the chain attached \(ids)")
            }
            try keys.send(frame([(Evdev.EV_KEY, Evdev.KEY_H, 1)]) + frame([(Evdev.EV_KEY, Evdev.KEY_H, 0)]))
            try keys.send(frame([(Evdev.EV_KEY, Evdev.KEY_LEFTSHIFT, 0)]))
            try screen.send(frame([(Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 150), (Evdev.EV_ABS, Evdev.ABS_X, 150)]))
            try screen.send(frame([(Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, -1), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 0)]))
            waitUntil(.seconds(5)) { chainTexts(chain.events(of: keysID)).count >= 4 && chainTexts(chain.events(of: screenID)).count >= 3 }
            let keyEvents = chain.events(of: keysID).compactMap { event -> String? in
                guard case .key(let key) = event.payload else { return nil }
                return "\(Evdev.shownName(ofCode: key.code, type: Evdev.EV_KEY)) \(key.state) \(key.modifiers.rawValue)"
            }
            let lidEvents = chain.events(of: lidID).compactMap { event -> String? in
                guard case .switchChanged(let change) = event.payload else { return nil }
                return "\(Evdev.shownName(ofCode: change.code, type: Evdev.EV_SW)) \(change.isOn)"
            }
            let touches = chain.events(of: screenID).compactMap { event -> String? in
                guard case .digitizer(let frame) = event.payload else { return nil }
                return frame.contacts.map { "#\($0.trackingID)@\($0.slot) \($0.phase) \($0.x),\($0.y)" }.joined(separator: "; ")
            }
            let shift = KeyModifiers.leftShift.rawValue
            let keysWanted = ["KEY_LEFTSHIFT down \(shift)", "KEY_H down \(shift)", "KEY_H up \(shift)", "KEY_LEFTSHIFT up 0"]
            let touchesWanted = ["#7@1 began 100,200", "#7@1 moved 150,200", "#7@1 ended 150,200"]
            var problems: [String] = []
            if let difference = firstDifference(keyEvents, keysWanted) { problems.append("keys \(difference)") }
            if lidEvents != ["SW_LID true"] { problems.append("lid \(lidEvents)") }
            if let difference = firstDifference(touches, touchesWanted) { problems.append("touches \(difference)") }
            context.report.check(
                "state-at-attach", problems.isEmpty,
                problems.isEmpty
                    ? "attached with Shift held, the lid closed and a finger down in the current slot: \(keyEvents), \(lidEvents), \(touches)"
                    : problems.joined(separator: "; "))
        } catch {
            context.report.fail("state-at-attach", "\(error)")
        }
    }

    /// The kernel's own `SYN_DROPPED`: the chain's loop is held while a keyboard sends
    /// more than its reader's buffer holds; the chain then reports the loss and resyncs
    /// from the device (A held, B up), with no key left held that is up.
    static func droppedAndResynced(_ context: CheckContext) {
        guard context.report.wants("syn-dropped") else { return }
        do {
            let mark = context.chain.mark()
            let device = try UInputDevice(keyboard)
            guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else {
                return context.report.fail("syn-dropped", "the chain never attached it")
            }
            let release = DispatchSemaphore(value: 0)
            let held = DispatchSemaphore(value: 0)
            context.chain.thread.perform {
                held.signal()
                release.wait()
            }
            held.wait()
            for _ in 0..<200 {
                try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_B, 1)]) + frame([(Evdev.EV_KEY, Evdev.KEY_B, 0)]))
            }
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_A, 1)]))
            release.signal()
            let dropped = waitUntil(.seconds(10)) {
                context.chain.events(of: id).contains { if case .eventsDropped = $0.payload { true } else { false } }
            }
            var downs = Set<UInt16>()
            waitUntil(.seconds(5)) {
                downs = []
                for event in context.chain.events(of: id) {
                    if case .key(let key) = event.payload, key.state != .repeat {
                        if key.state == .down { downs.insert(key.code) } else { downs.remove(key.code) }
                    }
                }
                return downs == [Evdev.KEY_A]
            }
            device.remove()
            context.report.check(
                "syn-dropped", dropped && downs == [Evdev.KEY_A],
                "800 events sent while the chain's loop was held: the kernel's SYN_DROPPED "
                    + (dropped ? "reported" : "NOT reported") + ", keys held after the resync \(downs.sorted()) ([30] expected: KEY_A)")
        } catch {
            context.report.fail("syn-dropped", "\(error)")
        }
    }

    /// `EVIOCGRAB` by another reader keeps the chain from a device's events until it lets
    /// go; the chain's timestamps are on the monotonic clock (`EVIOCSCLOCKID`).
    static func grabAndClock(_ context: CheckContext) {
        guard context.report.wants("grab-and-clock") else { return }
        do {
            let mark = context.chain.mark()
            let device = try UInputDevice(keyboard)
            guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else {
                return context.report.fail("grab-and-clock", "the chain never attached it")
            }
            let grabber = open(device.nodePath, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            let grabbed = (try? EvdevDevice(fileDescriptor: grabber).grab()) != nil
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_H, 1)]) + frame([(Evdev.EV_KEY, Evdev.KEY_H, 0)]))
            var buffer = [UInt8](repeating: 0, count: 64 * InputEvent.size)
            var grabberRead = 0
            waitUntil(.seconds(2)) {
                let count = buffer.withUnsafeMutableBytes { read(grabber, $0.baseAddress, $0.count) }
                if count > 0 { grabberRead += count / InputEvent.size }
                return grabberRead >= 4
            }
            let whileGrabbed = chainTexts(context.chain.events(of: id)).count
            close(grabber)
            let sent = MonotonicInstant.now
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_A, 1)]))
            waitUntil(.seconds(5)) { chainTexts(context.chain.events(of: id)).count >= 1 }
            let first = context.chain.events(of: id).first { if case .key = $0.payload { true } else { false } }
            let stampedAfterSend = first.map { $0.timestamp >= sent && $0.timestamp <= MonotonicInstant.now } ?? false
            device.remove()
            context.report.check(
                "grab-and-clock", grabbed && grabberRead == 4 && whileGrabbed == 0 && first != nil && stampedAfterSend,
                "grabbed: \(grabbed), the grabber read \(grabberRead) events and the chain \(whileGrabbed) while grabbed;"
                    + " after release the chain got the key, stamped on the monotonic clock: \(stampedAfterSend)")
        } catch {
            context.report.fail("grab-and-clock", "\(error)")
        }
    }

    /// An LED set through the chain reaches the uinput device (as a keyboard's driver
    /// hears it) and the node's LED state.
    static func ledOutput(_ context: CheckContext) {
        guard context.report.wants("led-output") else { return }
        do {
            let mark = context.chain.mark()
            let device = try UInputDevice(keyboard)
            guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else {
                return context.report.fail("led-output", "the chain never attached it")
            }
            let failure = context.chain.setLED(Evdev.LED_CAPSL, on: true, device: id)
            var told: [InputEvent] = []
            waitUntil(.seconds(5)) {
                told += device.receivedEvents()
                return told.contains { $0.type == Evdev.EV_LED }
            }
            let fd = open(device.nodePath, O_RDONLY | O_CLOEXEC)
            let leds = (try? EvdevDevice(fileDescriptor: fd).ledsOn()) ?? []
            close(fd)
            device.remove()
            let ledOn = leds.contains(Evdev.LED_CAPSL)
            context.report.check(
                "led-output",
                failure == nil && told.contains { $0.type == Evdev.EV_LED && $0.code == Evdev.LED_CAPSL && $0.value == 1 } && ledOn,
                "setLED(LED_CAPSL) \(failure.map { "failed: \($0)" } ?? "written"); the device was told \(told.map(\.description));"
                    + " EVIOCGLED says on: \(ledOn)")
        } catch {
            context.report.fail("led-output", "\(error)")
        }
    }
}

extension KernelChecks {
    /// `ringloop demo` on the recordings through uinput, and on the guest's real AT
    /// keyboard, whose keys the stage types through QEMU's monitor when it sees the line
    /// `kernel-check: type on the AT keyboard`.
    static func demo(_ context: CheckContext) {
        guard context.report.wants("demo") else { return }
        let out = "/tmp/demo-\(getpid()).out"
        defer { unlink(out) }
        func run(_ arguments: [String], until: (String) -> Bool, timeout: Duration) -> (String, Int32) {
            guard let child = ChildCommand(arguments, output: out) else { return ("cannot start", -1) }
            waitUntil(timeout) { until(fileText(out) ?? "") || !child.isRunning }
            child.interrupt()
            let status = child.wait()
            return (fileText(out) ?? "", status)
        }
        let (recorded, status) = run(
            ["demo", "--recorded", "--quiet", "--speed", "0.5", "--recordings", context.devices], until: { _ in false },
            timeout: .seconds(120))
        // The demo plays in real time (here at half speed): under emulation on a busy host
        // the guest can stall long enough for a reader's buffer to overflow, which the demo
        // reports as a drop (and resyncs). It must run, host and remove every device and
        // deliver most of the events; event-for-event equality is the replays' business,
        // which pace themselves by their readers.
        let added = recorded.contains("devices: 11 added, 11 removed")
        let delivered =
            recorded.split(separator: "\n").first { $0.contains("events:") }
            .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        context.report.check(
            "demo/recordings", status == 0 && added && delivered >= 243 && recorded.contains("uinput"),
            "ringloop demo --recorded --speed 0.5 through uinput (486 events when nothing drops): exit \(status), "
                + (recorded.split(separator: "\n").filter {
                    $0.contains("events:") || $0.contains("drops:") || $0.contains("virtual devices")
                }
                .joined(separator: " / ")))
        say("kernel-check: type on the AT keyboard")
        let (typed, _) = run(
            ["demo", "--duration", "60"],
            until: { $0.contains("AT Translated Set 2 keyboard [keyboard]: key KEY_H") && $0.contains("KEY_I") },
            timeout: .seconds(60))
        let keyLines = typed.split(separator: "\n").filter { $0.contains("AT Translated Set 2 keyboard [keyboard]: key") }
        context.report.check(
            "demo/at-keyboard", keyLines.contains { $0.contains("KEY_H") } && keyLines.contains { $0.contains("KEY_I") },
            "ringloop demo on the guest's i8042 keyboard, keys typed through QEMU: \(keyLines.count) key events"
                + (keyLines.first.map { " (first: \($0.trimmed))" } ?? ""))
    }
}
