import Glibc
import RingLoopEvdev

extension LibinputRecording {
    /// The YAML `libinput record` writes (format version 1) for `recordings`, one device
    /// each, recorded from `nodes` (the node paths, written as `node:`): each device's
    /// `evdev` description (name, id, codes, absinfo, properties, with libinput's comment
    /// lines) and its events as frames of `[sec, usec, type, code, value]`. `libinput
    /// analyze` and `libinput replay` read it, and so does ``parse(_:file:)``.
    ///
    /// The `hid:`, `udev:` and `quirks:` sections are written empty: they come from udev
    /// and libinput's quirks database, which a recording does not carry.
    public static func write(_ recordings: [Recording], nodes: [String]) -> String {
        var out = "# libinput record\nversion: 1\nndevices: \(recordings.count)\n"
        out += "libinput:\n  version: \"unknown\"\n  git: \"ringloop record\"\n"
        out += "system:\n  os: \(quoted(operatingSystem()))\n  kernel: \(quoted(kernelRelease()))\n  dmi: \"unknown\"\n"
        out += "devices:\n"
        for (index, recording) in recordings.enumerated() {
            let node = index < nodes.count ? nodes[index] : "/dev/input/event\(index)"
            out += "- node: \(node)\n"
            if let device = recording.description { out += evdevSection(device) }
            out += "  hid: []\n  udev:\n    properties: []\n  quirks: []\n  events:\n"
            out += eventsSection(recording.events)
        }
        return out
    }

    static func evdevSection(_ device: InputDeviceDescription) -> String {
        var out = "  evdev:\n"
        out += "    # Name: \(device.name)\n"
        out +=
            "    # ID: bus 0x\(hex(device.busType)) vendor 0x\(hex(device.vendor)) product 0x\(hex(device.product)) version 0x\(hex(device.version))\n"
        out += "    name: \(quoted(device.name))\n"
        out += "    id: [\(device.busType), \(device.vendor), \(device.product), \(device.version)]\n"
        out += "    codes:\n"
        // As libevdev reports them: every SYN_* code for type 0, then each type's codes,
        // and EV_REP's two codes when the kernel repeats keys.
        out += "      0: [\((0...15).map(String.init).joined(separator: ", "))] # EV_SYN\n"
        let types = (device.codes[Evdev.EV_SYN] ?? []).filter { $0 != Evdev.EV_SYN && $0 != Evdev.EV_REP }.sorted()
        for type in types {
            let codes = (device.codes[type] ?? []).sorted().map { String(Int($0)) }.joined(separator: ", ")
            out += "      \(type): [\(codes)] # \(Evdev.name(ofType: type) ?? "?")\n"
        }
        if device.keyRepeat != nil { out += "      \(Evdev.EV_REP): [0, 1] # EV_REP\n" }
        if !device.absoluteAxes.isEmpty {
            out += "    absinfo:\n"
            for code in device.absoluteAxes.keys.sorted() {
                let axis = device.absoluteAxes[code]!
                out += "      \(code): [\(axis.minimum), \(axis.maximum), \(axis.fuzz), \(axis.flat), \(axis.resolution)]\n"
            }
        }
        out += "    properties: [\(device.properties.sorted().map { String(Int($0)) }.joined(separator: ", "))]\n"
        return out
    }

    static func eventsSection(_ events: [InputEvent]) -> String {
        var out = ""
        var frameOpen = false
        var frameStart: Int64?
        for event in events {
            if !frameOpen {
                out += "  - evdev:\n"
                frameOpen = true
            }
            let fields = [
                pad(String(event.seconds), 3), pad(String(event.microseconds), 6), pad(String(event.type), 3),
                pad(String(event.code), 3), pad(String(event.value), 7),
            ]
            out += "    - [\(fields.joined(separator: ", "))] # "
            if event.isSynReport {
                let delta = frameStart.map { (event.timeMicroseconds - $0) / 1000 } ?? 0
                out += "------------ SYN_REPORT (0) ---------- +\(delta)ms\n"
                frameStart = event.timeMicroseconds
                frameOpen = false
            } else {
                let type = Evdev.name(ofType: event.type) ?? "?"
                let code = Evdev.name(ofCode: event.code, type: event.type) ?? "?"
                out += "\(type) / \(code) \(event.value)\n"
            }
        }
        return out
    }

    private static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\\" || character == "\"" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }
    private static func hex(_ value: UInt16) -> String { String(value, radix: 16) }
    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    private static func kernelRelease() -> String {
        var names = utsname()
        uname(&names)
        return withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// `ID:VERSION_ID` from /etc/os-release, as libinput writes it (`debian:12`).
    private static func operatingSystem() -> String {
        guard let file = fopen("/etc/os-release", "r") else { return "unknown" }
        defer { fclose(file) }
        var fields: [String: String] = [:]
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!).trimmingNewline()
            guard let equals = text.firstIndex(of: "=") else { continue }
            fields[String(text[..<equals])] = String(text[text.index(after: equals)...].filter { $0 != "\"" })
        }
        free(line)
        return "\(fields["ID"] ?? "unknown"):\(fields["VERSION_ID"] ?? "unknown")"
    }
}

extension String {
    fileprivate func trimmingNewline() -> String { hasSuffix("\n") ? String(dropLast()) : self }
}
