import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport

#if canImport(Glibc)
import Glibc
#endif

/// Kernel HID drivers fed through `/dev/uhid`: real devices' report descriptors (and the
/// feature reports their drivers ask for) from `devices/kernel/hid/`, and input reports:
/// the file's own when it has them (`E:` lines recorded on hardware), else built to the
/// descriptor's format from a model of what the hand does (synthetic, and said so in the
/// recordings). The kernel's own drivers (hid-playstation, hid-generic) make the
/// evdev nodes; the chain reads them; what they gave is written as evemu recordings, and
/// compared with those bundled in `devices/kernel/`.
enum UHIDChecks {
    /// One device: its `.hid` file, the nodes its driver makes (by name suffix), the
    /// model's reports with their times in microseconds.
    struct Device {
        var name: String
        var file: String
        var nodes: [(suffix: String, recording: String, deviceClass: HIDDeviceClass?)]
        var reports: (HIDReportFormat) -> [(time: Int64, report: [UInt8])]
        var note: String
    }

    static func devices() -> [Device] {
        [
            Device(
                name: "dualsense", file: "dualsense-usb.hid",
                nodes: [
                    ("Wireless Controller", "dualsense-usb-gamepad.evemu", .gamepad),
                    ("Motion Sensors", "dualsense-usb-motion.evemu", .motion),
                    ("Touchpad", "dualsense-usb-touchpad.evemu", .touchpad),
                ],
                reports: { _ in DualSenseModel.reports() },
                note:
                    "Synthetic: input reports built by ringloop's DualSense model (a swipe on the touchpad, cross pressed,"
                    + " a shake along x, then a roll, a yaw and a pitch through four orientations at 90 deg/s), played"
                    + " through /dev/uhid to the kernel's hid-playstation; the events are what the kernel made, the"
                    + " times are the model's (250 Hz)."),
            Device(
                name: "dualshock4", file: "dualshock4-usb-054c-09cc.hid",
                nodes: [
                    ("Wireless Controller", "dualshock4-usb-gamepad.evemu", .gamepad),
                    ("Motion Sensors", "dualshock4-usb-motion.evemu", .motion),
                    ("Touchpad", "dualshock4-usb-touchpad.evemu", .touchpad),
                ],
                reports: { _ in [] },  // the file's own reports, recorded on hardware
                note:
                    "Recorded on hardware: a DualShock 4's input reports as hid-recorder captured them (ChromiumOS"
                    + " tast-tests, BSD-3-Clause; the buttons pressed one at a time, the controller in the hand, its"
                    + " motion sensors live), played through /dev/uhid to the kernel's driver (hid-sony in 6.1,"
                    + " hid-playstation from 6.2); the events are what the kernel made, the times the recording's."),
            Device(
                name: "resolution-multiplier-mouse", file: "resolution-multiplier-mouse.hid",
                nodes: [("Mouse", "resolution-multiplier-mouse.evemu", .pointer)],
                reports: { _ in MouseModel.reports() },
                note:
                    "Synthetic: input reports built by ringloop's mouse model (a square, a click, the wheel turned 2"
                    + " detents up and 1 down in quarter detents, tilted right), played through /dev/uhid to the kernel's"
                    + " hid-generic, which set the wheel's resolution multiplier; the events are what the kernel made, the"
                    + " times are the model's (125 Hz)."),
            Device(
                name: "touchscreen", file: "touchscreen-advanced-silicon-2149-2306.hid",
                nodes: [("Touchscreen", "touchscreen-advanced-silicon-2149-2306.evemu", .touchscreen)],
                reports: MultitouchModel.touchscreen,
                note:
                    "Synthetic: input reports built by ringloop's multitouch model from the device's report descriptor (two"
                    + " fingers spreading apart, lifted, then a tap), played through /dev/uhid to the kernel's hid-multitouch;"
                    + " the events are what the kernel made, the times are the model's (100 Hz)."),
            Device(
                name: "touchpad", file: "touchpad-elan-04f3-3045.hid",
                nodes: [("Touchpad", "touchpad-elan-04f3-3045.evemu", .touchpad)],
                reports: MultitouchModel.touchpad,
                note:
                    "Synthetic: input reports built by ringloop's multitouch model from the device's report descriptor (a"
                    + " two-finger scroll down, lifted, then a click), one contact per report as the device sends them, played"
                    + " through /dev/uhid to the kernel's hid-multitouch; the events are what the kernel made, the times are"
                    + " the model's (100 Hz)."),
        ]
    }

    static func run(_ context: CheckContext) {
        for device in devices() where context.report.wants("uhid/" + device.name) {
            play(device, context)
        }
    }

    /// A `.hid` file: name, ids, report descriptor, feature report answers.
    struct HIDFile {
        var name = ""
        var bus: UInt16 = 3
        var vendor: UInt32 = 0
        var product: UInt32 = 0
        var descriptor: [UInt8] = []
        var features: [UInt8: [UInt8]] = [:]
        /// Input reports recorded on hardware (`E: seconds.micros length bytes…`), with
        /// their times in microseconds; played instead of a model's when present.
        var recorded: [(time: Int64, report: [UInt8])] = []

        init(contentsOfFile path: String) throws {
            guard let text = fileText(path) else { throw UHIDError("\(path): cannot be read") }
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                let fields = line.split(separator: " ").map(String.init)
                guard let kind = fields.first else { continue }
                switch kind {
                case "N:": name = fields.dropFirst().joined(separator: " ")
                case "I:":
                    guard fields.count == 4 else { throw UHIDError("\(path): I: needs bus vendor product") }
                    bus = UInt16(fields[1], radix: 16) ?? 0
                    vendor = UInt32(fields[2], radix: 16) ?? 0
                    product = UInt32(fields[3], radix: 16) ?? 0
                case "R:":
                    descriptor = fields.dropFirst(2).compactMap { UInt8($0, radix: 16) }
                    guard descriptor.count == Int(fields[1]) else { throw UHIDError("\(path): R: length differs") }
                case "F:":
                    let bytes = fields.dropFirst().compactMap { UInt8($0, radix: 16) }
                    if let number = bytes.first { features[number] = bytes }
                case "E:":
                    let parts = fields.count > 1 ? fields[1].split(separator: ".") : []
                    guard parts.count == 2, let seconds = Int64(parts[0]), let micros = Int64(parts[1]),
                        fields.count > 2, let length = Int(fields[2])
                    else { throw UHIDError("\(path): E: needs seconds.microseconds length bytes") }
                    let bytes = fields.dropFirst(3).compactMap { UInt8($0, radix: 16) }
                    guard bytes.count == length else {
                        throw UHIDError("\(path): E: at \(fields[1]) has \(bytes.count) bytes, says \(length)")
                    }
                    recorded.append((seconds * 1_000_000 + micros, bytes))
                default: throw UHIDError("\(path): unknown line '\(line)'")
                }
            }
        }
    }

    static func play(_ device: Device, _ context: CheckContext) {
        let name = "uhid/" + device.name
        let chain = context.chain
        let hid: HIDFile
        do { hid = try HIDFile(contentsOfFile: "\(context.devices)/kernel/hid/\(device.file)") } catch {
            return context.report.fail(name, "\(error)")
        }
        let mark = chain.mark()
        let uhid: UHIDDevice
        let format: HIDReportFormat
        do {
            format = try HIDReportFormat(hid.descriptor)
            // Feature requests: the file's answers, else every field 0 but the contact maximum.
            let features = format.featureAnswers().merging(hid.features) { _, file in file }
            uhid = try UHIDDevice(
                name: hid.name, bus: hid.bus, vendor: hid.vendor, product: hid.product, uniq: "12:34:56:78:9a:bc",
                descriptor: hid.descriptor, features: features)
        } catch {
            return context.report.fail(name, "\(error)")
        }
        defer { uhid.destroy() }
        var nodes: [(name: String, node: String)] = []
        let bound = waitUntil(.seconds(30)) {
            nodes = uhidNodes(bus: hid.bus, vendor: hid.vendor, product: hid.product)
            return device.nodes.allSatisfy { spec in nodes.contains { $0.name.hasSuffix(spec.suffix) } }
        }
        guard bound else { return context.report.fail(name, "the driver made \(nodes.map(\.name)), not \(device.nodes.count) nodes") }
        var problems: [String] = []
        var matched: [(spec: (suffix: String, recording: String, deviceClass: HIDDeviceClass?), node: String)] = []
        for spec in device.nodes {
            guard let found = nodes.first(where: { $0.name.hasSuffix(spec.suffix) }) else {
                problems.append("no node named …\(spec.suffix) among \(nodes.map(\.name))")
                continue
            }
            matched.append((spec, found.node))
        }
        let ids = matched.map { chain.waitForDevice(atPath: $0.node, after: mark) }
        let captures = matched.map { NodeCapture(path: $0.node) }
        let descriptions = matched.map { item -> InputDeviceDescription? in
            let fd = open(item.node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            defer { close(fd) }
            return try? InputDeviceDescription(fileDescriptor: fd)
        }
        for (index, id) in ids.enumerated() {
            guard let id, let info = chain.info(id) else {
                problems.append("\(matched[index].node): the chain never attached it")
                continue
            }
            if let wanted = matched[index].spec.deviceClass, info.deviceClass != wanted {
                problems.append("\(matched[index].node) (\(info.name)) classified \(info.deviceClass)")
            }
        }
        // Each report, then its frames read by every reader: their times become the model's.
        let chainBase = chain.rawEventsRead
        var frameTimes: [[(count: Int, time: Int64)]] = Array(repeating: [], count: matched.count)
        for (time, report) in hid.recorded.isEmpty ? device.reports(format) : hid.recorded {
            do { try uhid.input(report) } catch {
                problems.append("\(error)")
                break
            }
            waitUntil(.seconds(5), poll: .microseconds(100)) {
                captures.allSatisfy { $0?.isDrained ?? true }
                    && chain.rawEventsRead - chainBase >= captures.reduce(0) { $0 + ($1?.count ?? 0) }
            }
            for (index, capture) in captures.enumerated() { frameTimes[index].append((capture?.count ?? 0, time)) }
        }
        uhid.destroy()
        for capture in captures { capture?.finish() }
        var summary: [String] = []
        for (index, item) in matched.enumerated() {
            guard let id = ids[index], let info = chain.info(id), let description = descriptions[index] else { continue }
            waitUntil(.seconds(10)) { chain.wasRemoved(id) }
            let captured = captures[index]?.captured ?? []
            let chainGot = chainTexts(chain.events(of: id))
            let chainWant = decodedInMemory(captured, info: info, description: description)
            if let difference = firstDifference(chainGot, chainWant) { problems.append("\(item.node) chain \(difference)") }
            let recording = Recording(
                description: description, events: retimed(captured, frameTimes[index]),
                notes: [device.note, "Recorded by ringloop kernel-check on Linux \(kernelRelease()) from \(item.spec.suffix)."])
            if let output = context.output {
                try? EvemuFormat.write(recording).write(toFile: "\(output)/\(item.spec.recording)", atomically: false, encoding: .utf8)
            }
            // A kernel series whose driver gives something else has its own recording.
            let series = kernelRelease().split(separator: ".").prefix(2).joined(separator: ".")
            let ownPath = "\(context.devices)/kernel/linux-\(series)/\(item.spec.recording)"
            let bundledPath =
                access(ownPath, R_OK) == 0 ? ownPath : "\(context.devices)/kernel/\(item.spec.recording)"
            if let bundled = try? Recording.load(contentsOf: bundledPath) {
                let want = bundled.events.map(RawKey.init)
                let got = recording.events.map(RawKey.init)
                if let difference = firstDifference(got, want) { problems.append("\(item.spec.recording) \(difference)") }
                if let difference = CorpusReplay.describedDifference(item.node, bundled.description!, live: description) {
                    problems.append("\(item.spec.recording) description: \(difference)")
                }
            } else {
                problems.append("\(bundledPath): not bundled (run tools/kernel-stage --export DIR to make it)")
            }
            summary.append("\(info.name) [\(info.deviceClass)] \(captured.count) events, \(chainGot.count) HID events")
        }
        context.report.check(
            name, problems.isEmpty,
            problems.isEmpty
                ? "the kernel's driver made \(summary.joined(separator: "; ")); equal to devices/kernel"
                : problems.prefix(4).joined(separator: "; "))
    }

    /// The captured events with each report's frames at the report's time.
    static func retimed(_ events: [InputEvent], _ frames: [(count: Int, time: Int64)]) -> [InputEvent] {
        var out = events
        var start = 0
        for frame in frames {
            for index in start..<min(frame.count, out.count) {
                out[index].seconds = frame.time / 1_000_000
                out[index].microseconds = Int32(frame.time % 1_000_000)
            }
            start = max(start, frame.count)
        }
        return out
    }
}
