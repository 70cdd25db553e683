import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// Rumble through the kernel's own hid-playstation: the DualSense's report descriptor
/// played through `/dev/uhid`, a rumble uploaded to and played on the gamepad node the
/// driver made (`EVIOCSFF`, an `EV_FF` write), and the output report the driver sends the
/// device read back from uhid: its motor bytes are the effect's magnitudes over 256
/// (`struct dualsense_output_report_common`: after the report id 0x02 and two flag bytes,
/// the right (weak) motor, then the left (strong) one). When the effect's length has passed
/// the kernel's memoryless force feedback turns both motors off again.
extension UHIDChecks {
    static func rumble(_ context: CheckContext) {
        dualsenseRumble(context)
        uinputRumble(context)
    }

    static func dualsenseRumble(_ context: CheckContext) {
        let name = "uhid/dualsense-rumble"
        guard context.report.wants(name) else { return }
        let hid: HIDFile
        do { hid = try HIDFile(contentsOfFile: "\(context.devices)/kernel/hid/dualsense-usb.hid") } catch {
            return context.report.fail(name, "\(error)")
        }
        let uhid: UHIDDevice
        do {
            let format = try HIDReportFormat(hid.descriptor)
            uhid = try UHIDDevice(
                name: hid.name, bus: hid.bus, vendor: hid.vendor, product: hid.product, uniq: "12:34:56:78:9a:bd",
                descriptor: hid.descriptor, features: format.featureAnswers().merging(hid.features) { _, file in file })
        } catch {
            return context.report.fail(name, "\(error)")
        }
        defer { uhid.destroy() }
        var nodes: [(name: String, node: String)] = []
        guard
            waitUntil(
                .seconds(30),
                {
                    nodes = uhidNodes(bus: hid.bus, vendor: hid.vendor, product: hid.product)
                    return nodes.contains { $0.name.hasSuffix("Wireless Controller") }
                }), let pad = nodes.first(where: { $0.name.hasSuffix("Wireless Controller") })
        else { return context.report.fail(name, "the driver made \(nodes.map(\.name)), no gamepad") }
        // The node appears in /dev a moment after the driver registers it.
        var opened: Result<EvdevDevice, EvdevError> = .failure(EvdevError(request: .open(path: pad.node), errno: .noSuchFileOrDirectory))
        waitUntil(.seconds(10)) {
            opened = Result { () throws(EvdevError) in try EvdevDevice.open(path: pad.node, writable: true) }
            if case .success = opened { return true }
            return false
        }
        let device: EvdevDevice
        switch opened {
        case .success(let open): device = open
        case .failure(let error): return context.report.fail(name, "\(pad.node): \(error)")
        }
        defer { device.close() }
        do {
            let effects = try device.codes(ofType: Evdev.EV_FF)
            guard effects.contains(Evdev.FF_RUMBLE) else {
                return context.report.fail(name, "\(pad.node) has no FF_RUMBLE (force feedback: \(effects.sorted()))")
            }
            let capacity = try device.forceFeedbackEffectCapacity()
            let before = uhid.outputs.count
            let id = try device.uploadRumble(RumbleEffect(strong: 0xc000, weak: 0x4000, milliseconds: 300))
            try device.playEffect(id)
            func motors(_ report: [UInt8]) -> (weak: UInt8, strong: UInt8)? {
                report.count >= 5 && report[0] == 0x02 ? (report[3], report[4]) : nil
            }
            var reports: [[UInt8]] = []
            let on = waitUntil(.seconds(10)) {
                reports = Array(uhid.outputs.dropFirst(before))
                return reports.contains { motors($0).map { $0.weak == 0x40 && $0.strong == 0xc0 } ?? false }
            }
            let off =
                on
                && waitUntil(.seconds(10)) {
                    reports = Array(uhid.outputs.dropFirst(before))
                    guard let first = reports.firstIndex(where: { motors($0).map { $0.strong == 0xc0 } ?? false }) else { return false }
                    return reports[(first + 1)...].contains { motors($0).map { $0.weak == 0 && $0.strong == 0 } ?? false }
                }
            try device.eraseEffect(id)
            let shown = reports.prefix(4).map { report in
                report.prefix(6).map { String($0, radix: 16) }.joined(separator: " ")
            }
            context.report.check(
                name, on && off,
                on && off
                    ? "effect \(id) of \(capacity) on \(pad.node): hid-playstation sent output report 0x02 with motors 0x40 (weak) 0xc0 (strong), then 0 0 after 300 ms"
                    : "after EVIOCSFF and EV_FF the driver's output reports were \(shown) (motors on: \(on), off: \(off))")
        } catch {
            context.report.fail(name, "\(pad.node): \(error)")
        }
    }

    /// Rumble through uinput: a real pad's description (a Mad Catz Wired Xbox 360
    /// Controller: `FF_RUMBLE`, the periodic effects and `FF_GAIN`, as xpad gives them) made
    /// a uinput device, which answers the kernel's upload and erase handshake
    /// (`UI_BEGIN_FF_UPLOAD`…) as a driver does. `ringloop rumble NODE --strong 0.75 --weak
    /// 0.25 --duration 100 --gain 0.5` (a separate process, through the kernel's
    /// force-feedback core) must end well, and the device must have been asked, in order:
    /// the gain, the upload of that rumble (the id the kernel chose), its play, its stop,
    /// its erasure (the force-feedback core may stop it once more before erasing it).
    static func uinputRumble(_ context: CheckContext) {
        let name = "uinput/rumble"
        guard context.report.wants(name) else { return }
        let file = "\(context.devices)/real/evemu-devices/joysticks/Mad Catz Wired Xbox 360 Controller.events"
        let device: UInputDevice
        do {
            guard let description = try Recording.loadAll(contentsOf: file).compactMap(\.description).first else {
                return context.report.fail(name, "\(file) describes no device")
            }
            device = try UInputDevice(description)
        } catch {
            return context.report.fail(name, "\(error)")
        }
        defer { device.remove() }
        let out = "/tmp/rumble-\(getpid()).out"
        let errors = out + ".err"
        defer {
            unlink(out)
            unlink(errors)
        }
        let started = MonotonicInstant.now
        let arguments = ["rumble", device.nodePath, "--strong", "0.75", "--weak", "0.25", "--duration", "100", "--gain", "0.5"]
        guard let child = ChildCommand(arguments, output: out, errors: errors) else {
            return context.report.fail(name, "cannot start ringloop rumble")
        }
        // Each request blocks the command until the device answers (30 s, then ETIMEDOUT).
        let ended = waitUntil(.seconds(40)) { !child.isRunning }
        if !ended { child.forceEnd() }
        let status = child.wait()
        let took = milliseconds(MonotonicInstant.now - started)
        let said = ((fileText(out) ?? "") + (fileText(errors) ?? "")).trimmed
        // The erasure comes when the command erases the effect; a moment later at most.
        var requests: [ForceFeedbackRequest] = []
        waitUntil(.seconds(5)) {
            requests = device.forceFeedbackRequests
            return requests.contains { if case .erase = $0 { true } else { false } }
        }
        let effect = RumbleEffect(strong: 49151, weak: 16384, milliseconds: 100)
        var expected: [ForceFeedbackRequest] = [.gain(32768)]
        if case .upload(let id, _) = requests.dropFirst().first {
            expected += [.upload(id: id, effect), .play(id: id, count: 1), .stop(id: id)]
            if requests.count == expected.count + 2 { expected.append(.stop(id: id)) }
            expected.append(.erase(id: id))
        }
        context.report.check(
            name, status == 0 && requests == expected,
            "ringloop rumble \(device.nodePath) (\(device.deviceDescription.name) through uinput): exit \(status) in"
                + " \(Int(took)) ms, said \(said.debugDescription); the device answered the kernel's handshake and was asked:"
                + " \(requests.map(\.description).joined(separator: "; "))"
                + (requests == expected ? "" : " (expected \(expected.map(\.description).joined(separator: "; ")))"))
    }
}
