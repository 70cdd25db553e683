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

    /// Rumble through uinput: a real pad's recording (a Mad Catz Wired Xbox 360
    /// Controller: `FF_RUMBLE`, the periodic effects and `FF_GAIN`, as xpad gives them)
    /// hosted by `ringloop replay --backend uinput --keep`, whose uinput device answers the
    /// kernel's upload and erase handshake (`UI_BEGIN_FF_UPLOAD`…) as a driver does.
    /// `ringloop rumble NODE --strong 0.75 --weak 0.25 --duration 100 --gain 0.5` (through
    /// the kernel's force-feedback core) must end well, and the replay, interrupted, must
    /// say the device was asked, in order: the gain, the upload of that rumble (the id the
    /// kernel chose), its play, its stop, its erasure (the force-feedback core may stop it
    /// once more before erasing it).
    static func uinputRumble(_ context: CheckContext) {
        let name = "uinput/rumble"
        guard context.report.wants(name) else { return }
        let file = "\(context.devices)/real/evemu-devices/joysticks/Mad Catz Wired Xbox 360 Controller.events"
        let files = [
            "/tmp/replay-\(getpid()).out", "/tmp/replay-\(getpid()).err", "/tmp/rumble-\(getpid()).out", "/tmp/rumble-\(getpid()).err",
        ]
        defer { files.forEach { unlink($0) } }
        guard let host = ChildCommand(["replay", "--backend", "uinput", "--asap", "--keep", file], output: files[0], errors: files[1])
        else { return context.report.fail(name, "cannot start ringloop replay") }
        var node: String?
        waitUntil(.seconds(20)) {
            node = fileText(files[0])?.split(separator: "\n").first.map(String.init)
            return node != nil || !host.isRunning
        }
        guard let node else {
            _ = host.wait()
            return context.report.fail(name, "ringloop replay made no device: \((fileText(files[1]) ?? "").trimmed)")
        }
        let started = MonotonicInstant.now
        let arguments = ["rumble", node, "--strong", "0.75", "--weak", "0.25", "--duration", "100", "--gain", "0.5"]
        guard let child = ChildCommand(arguments, output: files[2], errors: files[3]) else {
            host.interrupt()
            _ = host.wait()
            return context.report.fail(name, "cannot start ringloop rumble")
        }
        // Each request blocks the command until the device answers (30 s, then ETIMEDOUT).
        if !waitUntil(.seconds(40), { !child.isRunning }) { child.forceEnd() }
        let status = child.wait()
        let took = milliseconds(MonotonicInstant.now - started)
        let said = ((fileText(files[2]) ?? "") + (fileText(files[3]) ?? "")).trimmed
        // Interrupted once its replay has ended (it then keeps the device until Ctrl-C and
        // exits 0; before, Ctrl-C cuts the replay short: 130).
        waitUntil(.seconds(30)) { (fileText(files[1]) ?? "").contains("frames replayed") || !host.isRunning }
        host.interrupt()
        if !waitUntil(.seconds(20), { !host.isRunning }) { host.forceEnd() }
        let hostStatus = host.wait()
        let prefix = "ringloop replay: \(node) force feedback: "
        let line = (fileText(files[1]) ?? "").split(separator: "\n").first { $0.hasPrefix(prefix) }.map {
            String($0.dropFirst(prefix.count))
        }
        let effect = RumbleEffect(strong: 49151, weak: 16384, milliseconds: 100)
        let requests = line?.split(separator: ";").map(\.trimmed) ?? []
        var expected: [ForceFeedbackRequest] = [.gain(32768)]
        if requests.count > 1, requests[1].hasPrefix("upload "), let id = Int16(requests[1].dropFirst(7).prefix { $0 != ":" }) {
            expected += [.upload(id: id, effect), .play(id: id, count: 1), .stop(id: id)]
            if requests.count == expected.count + 2 { expected.append(.stop(id: id)) }
            expected.append(.erase(id: id))
        }
        let agree = requests == expected.map(\.description)
        context.report.check(
            name, status == 0 && hostStatus == 0 && agree,
            "ringloop rumble \(node) (a Mad Catz Wired Xbox 360 Controller replayed through uinput): exit \(status) in"
                + " \(Int(took)) ms, said \(said.debugDescription); ringloop replay (exit \(hostStatus)) says the device was asked:"
                + " \(line ?? "nothing")" + (agree ? "" : " (expected \(expected.map(\.description).joined(separator: "; ")))"))
    }
}
