import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// The kernel behaviours a FUSE node only models, checked on the kernel's own.
enum KernelChecks {
    static let keyboard = InputDeviceDescription(
        name: "ringloop check keyboard", busType: Evdev.BUS_VIRTUAL, vendor: 1, product: 1,
        codes: [
            Evdev.EV_KEY: [Evdev.KEY_LEFTSHIFT, Evdev.KEY_H, Evdev.KEY_A, Evdev.KEY_B, Evdev.KEY_CAPSLOCK],
            Evdev.EV_LED: [Evdev.LED_CAPSL, Evdev.LED_NUML], Evdev.EV_MSC: [Evdev.MSC_SCAN],
        ], keyRepeat: (250, 33))
    static let lid = InputDeviceDescription(
        name: "ringloop check lid", busType: Evdev.BUS_VIRTUAL, vendor: 1, product: 2, codes: [Evdev.EV_SW: [Evdev.SW_LID]])
    static let touchscreen = InputDeviceDescription(
        name: "ringloop check touchscreen", busType: Evdev.BUS_VIRTUAL, vendor: 1, product: 3,
        properties: [Evdev.INPUT_PROP_DIRECT],
        codes: [
            Evdev.EV_KEY: [Evdev.BTN_TOUCH],
            Evdev.EV_ABS: [
                Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_MT_SLOT, Evdev.ABS_MT_POSITION_X, Evdev.ABS_MT_POSITION_Y,
                Evdev.ABS_MT_TRACKING_ID,
            ],
        ],
        absoluteAxes: [
            Evdev.ABS_X: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 10),
            Evdev.ABS_Y: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 10),
            Evdev.ABS_MT_SLOT: AbsoluteAxis(minimum: 0, maximum: 1, resolution: 0),
            Evdev.ABS_MT_POSITION_X: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 10),
            Evdev.ABS_MT_POSITION_Y: AbsoluteAxis(minimum: 0, maximum: 4095, resolution: 10),
            Evdev.ABS_MT_TRACKING_ID: AbsoluteAxis(minimum: 0, maximum: 65535, resolution: 0),
        ])

    static func frame(_ events: [(UInt16, UInt16, Int32)]) -> [(type: UInt16, code: UInt16, value: Int32)] {
        events.map { ($0.0, $0.1, $0.2) } + [(Evdev.EV_SYN, Evdev.SYN_REPORT, 0)]
    }

    /// The chain's read path on a kernel node: the ring's multishot read from 6.7, poll
    /// then read before (the ring answers `EINVAL` and the reader falls back).
    static func readPath(_ context: CheckContext) {
        guard context.report.wants("read-path") else { return }
        let release = kernelRelease()
        let parts = release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        let ringExpected = parts.count == 2 && (parts[0], parts[1]) >= (6, 7)
        do {
            let mark = context.chain.mark()
            let device = try UInputDevice(keyboard)
            guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else {
                return context.report.fail("read-path", "the chain never attached \(device.nodePath)")
            }
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_A, 1)]) + frame([(Evdev.EV_KEY, Evdev.KEY_A, 0)]))
            let read = waitUntil(.seconds(5)) { chainTexts(context.chain.events(of: id)).count >= 2 }
            let path = context.chain.readPath(of: id)
            device.remove()
            let expected: DeviceReadPath = ringExpected ? .ring : .poll
            context.report.check(
                "read-path", path == expected && read,
                "Linux \(release): evdev nodes read by \(path?.rawValue ?? "nothing")"
                    + (path == .ring ? " (a multishot read in the ring)" : " (poll then read: the ring's multishot read refused)")
                    + (read ? ", events delivered" : ", NO events delivered"))
        } catch {
            context.report.fail("read-path", "\(error)")
        }
    }

    /// uinput devices appearing and going in devtmpfs, seen by the chain through inotify.
    static func hotplug(_ context: CheckContext) {
        guard context.report.wants("hotplug") else { return }
        do {
            var seen = 0
            for round in 0..<5 {
                let mark = context.chain.mark()
                let device = try UInputDevice(round % 2 == 0 ? keyboard : lid)
                guard let id = context.chain.waitForDevice(atPath: device.nodePath, after: mark) else { break }
                device.remove()
                if waitUntil(
                    .seconds(5), { context.chain.wasRemoved(id) })
                {
                    seen += 1
                }
            }
            context.report.check("hotplug", seen == 5, "\(seen) of 5 uinput devices added and removed, seen by inotify on devtmpfs")
        } catch {
            context.report.fail("hotplug", "\(error)")
        }
    }

    /// No software repeat on a replayed keyboard; EVIOCGREP's answer; EVIOCSREP by a
    /// reader reaches the device and turns the kernel's repeat on, as on any keyboard.
    static func keyRepeat(_ context: CheckContext) {
        guard context.report.wants("key-repeat") else { return }
        do {
            let device = try UInputDevice(keyboard)
            guard let capture = NodeCapture(path: device.nodePath) else { return context.report.fail("key-repeat", "cannot open") }
            let fd = open(device.nodePath, O_RDWR | O_CLOEXEC)
            defer { close(fd) }
            let evdev = EvdevDevice(fileDescriptor: fd)
            // As the kernel's two unsigned ints, as the report prints them.
            func repeatSettings() -> [UInt32] {
                guard let (delay, period) = try? evdev.keyRepeat() else { return [0, 0] }
                return [UInt32(bitPattern: delay), UInt32(bitPattern: period)]
            }
            let settings = repeatSettings()
            // Held for 600 ms: more than the delay and ten periods of the kernel's repeat.
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_A, 1)]))
            usleep(600_000)
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_A, 0)]))
            waitUntil(.seconds(2)) { capture.count >= 4 }
            let plain = capture.count
            // A reader sets repeat settings: the device hears of it, and the kernel repeats.
            _ = try? evdev.setKeyRepeat(delay: 100, period: 20)
            let after = repeatSettings()
            var told: [InputEvent] = []
            waitUntil(.seconds(2)) {
                told += device.receivedEvents()
                return told.filter { $0.type == Evdev.EV_REP }.count >= 2
            }
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_B, 1)]))
            usleep(400_000)
            try device.send(frame([(Evdev.EV_KEY, Evdev.KEY_B, 0)]))
            device.remove()
            capture.finish()
            let repeats = capture.captured.filter { $0.type == Evdev.EV_KEY && $0.value == 2 }.count
            let ok = settings == [250, 0] && plain == 4 && after == [100, 20] && told.count >= 2 && repeats > 3
            context.report.check(
                "key-repeat", ok,
                "EVIOCGREP \(settings) (delay as described, period 0: the kernel's software repeat off); a key held 600 ms gave"
                    + " \(plain) events (4 expected: no repeats added); after a reader's EVIOCSREP [100, 20]: EVIOCGREP \(after),"
                    + " the device was told (\(told.filter { $0.type == Evdev.EV_REP }.count) EV_REP), and the kernel repeated"
                    + " a held key \(repeats) times")
        } catch {
            context.report.fail("key-repeat", "\(error)")
        }
    }
}
