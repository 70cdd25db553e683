import RingLoopEvdev

extension EvemuFormat {
    // MARK: Writing

    /// The evemu 1.3 text of a recording, with evemu's explanatory comments; the masks are
    /// written as evemu-record writes them (`B: 00 0b`, every type with codes, `B: 14` with
    /// the key repeat bits or none).
    /// - Parameters:
    ///   - recording: What is written.
    ///   - kernel: The release of the kernel the device was read from (`# Kernel:`, as
    ///     evemu-record writes it), when it was read from a node here.
    public static func write(_ recording: Recording, kernel: String? = nil) -> String {
        write(recording, kernel: kernel, eventsBanner: true)
    }

    static func write(_ recording: Recording, kernel: String?, eventsBanner: Bool) -> String {
        var out = "# EVEMU 1.3\n"
        if let kernel { out += "# Kernel: \(kernel)\n" }
        for note in recording.notes { out += "# \(note)\n" }
        if let device = recording.description {
            out += comments(device)
            out += "N: \(device.name)\n"
            out += "I: \(pad4(device.busType)) \(pad4(device.vendor)) \(pad4(device.product)) \(pad4(device.version))\n"
            out += maskLines(prefix: "P: ", bits: device.properties, bytes: Evdev.propertyMaskBytes)
            out += "B: 00 0b 00 00 00 00 00 00 00\n"
            // EV_REP's mask, always present and in type order as evemu writes it: REP_DELAY
            // and REP_PERIOD when the kernel repeats keys, none otherwise.
            let repeatLine =
                device.keyRepeat != nil ? "B: 14 03 00 00 00 00 00 00 00\n" : "B: 14 00 00 00 00 00 00 00 00\n"
            var wroteRepeat = false
            for type in Evdev.maskTypes where type != Evdev.EV_SYN {
                if type > Evdev.EV_REP, !wroteRepeat {
                    out += repeatLine
                    wroteRepeat = true
                }
                out += maskLines(prefix: "B: \(pad2(type)) ", bits: device.codes[type] ?? [], bytes: Evdev.maskBytes(ofType: type)!)
            }
            if !wroteRepeat { out += repeatLine }
            for code in device.absoluteAxes.keys.sorted() {
                let axis = device.absoluteAxes[code]!
                out += "A: \(pad2(code)) \(axis.minimum) \(axis.maximum) \(axis.fuzz) \(axis.flat) \(axis.resolution)\n"
            }
            // As evemu writes them: only LEDs that are on and switches that are set.
            for code in device.ledStates.keys.sorted() where device.ledStates[code]! != 0 {
                out += "L: \(pad2(code)) \(device.ledStates[code]!)\n"
            }
            for code in device.switchStates.keys.sorted() where device.switchStates[code]! != 0 {
                out += "S: \(pad2(code)) \(device.switchStates[code]!)\n"
            }
        }
        if eventsBanner {
            out += "################################\n#      Waiting for events      #\n################################\n"
        }
        var frameStart: Int64?
        for event in recording.events {
            let micro = String(event.microseconds)
            let value = event.value < 0 ? "-" + leftPad(String(-Int64(event.value)), 3) : leftPad(String(event.value), 4)
            out += "E: \(event.seconds).\(leftPad(micro, 6)) \(pad4(event.type)) \(pad4(event.code)) \(value)\t"
            if event.isSynReport {
                let delta = frameStart.map { (event.timeMicroseconds - $0) / 1000 } ?? 0
                out += "# ------------ SYN_REPORT (0) ---------- +\(delta)ms\n"
                frameStart = event.timeMicroseconds
            } else {
                let label = "\(Evdev.shownName(ofType: event.type)) / \(Evdev.shownName(ofCode: event.code, type: event.type))"
                out += "# \(label + String(repeating: " ", count: max(0, 32 - label.count))) \(event.value)\n"
            }
        }
        return out
    }

    static func maskLines(prefix: String, bits: Set<UInt16>, bytes: Int) -> String {
        var mask = [UInt8](repeating: 0, count: bytes)
        for bit in bits where Int(bit) < bytes * 8 { mask[Int(bit) / 8] |= 1 << (bit % 8) }
        var out = ""
        for start in stride(from: 0, to: bytes, by: 8) {
            out += prefix + mask[start..<min(bytes, start + 8)].map { pad2(UInt16($0)) }.joined(separator: " ") + "\n"
        }
        return out
    }
}

extension EvemuFormat {
    /// A device's description as `evemu-describe` prints it: its comment block (kernel,
    /// name and ids, size in mm, every supported event with axis ranges and LED and
    /// switch states, properties), then the description's lines; no event section.
    /// - Parameters:
    ///   - description: The device.
    ///   - kernel: The release of the kernel it was read from, when read from a node here.
    public static func describe(_ description: InputDeviceDescription, kernel: String? = nil) -> String {
        write(Recording(description: description, events: []), kernel: kernel, eventsBanner: false)
    }

    /// evemu's comment block for a device, byte for byte as evemu 2.7 writes it (a code
    /// libevdev has no name for is `(null)`, as printf writes a null string there).
    static func comments(_ device: InputDeviceDescription) -> String {
        // libevdev's names, as evemu prints them (SYN_MAX for code 15, say).
        func name(_ code: UInt16, _ type: UInt16) -> String {
            Evdev.libevdevName(ofCode: code, type: type) ?? "(null)"
        }
        func field(_ label: String, _ separator: String, _ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return "#       \(label)\(separator)\(String(repeating: " ", count: max(0, width - digits.count)))\(digits)\n"
        }
        var out = "# Input device name: \"\(device.name)\"\n"
        out +=
            "# Input device ID: bus \(alternate(device.busType)) vendor \(alternate(device.vendor))"
            + " product \(alternate(device.product)) version \(alternate(device.version))\n"
        if let x = device.absoluteAxes[Evdev.ABS_X], let y = device.absoluteAxes[Evdev.ABS_Y], x.resolution > 0, y.resolution > 0 {
            let width = (Int64(x.maximum) - Int64(x.minimum)) / Int64(x.resolution)
            let height = (Int64(y.maximum) - Int64(y.minimum)) / Int64(y.resolution)
            out += "# Size in mm: \(width)x\(height)\n"
        }
        out += "# Supported events:\n"
        let types = Set(device.codes.keys).union([Evdev.EV_SYN]).union(device.keyRepeat != nil ? [Evdev.EV_REP] : [])
        for type in types.sorted() {
            out += "#   Event type \(type) (\(Evdev.libevdevName(ofType: type) ?? "(null)"))\n"
            let codes: [UInt16]
            switch type {
            case Evdev.EV_SYN: codes = Array(0...Evdev.SYN_MAX)
            case Evdev.EV_REP: codes = [Evdev.REP_DELAY, Evdev.REP_PERIOD]
            default: codes = (device.codes[type] ?? []).sorted()
            }
            for code in codes {
                out += "#     Event code \(code) (\(name(code, type)))\n"
                switch type {
                case Evdev.EV_ABS:
                    let axis = device.absoluteAxes[code] ?? AbsoluteAxis(minimum: 0, maximum: 0)
                    out += field("Value", " ", axis.value, 8) + field("Min", "   ", axis.minimum, 8)
                    out += field("Max", "   ", axis.maximum, 8) + field("Fuzz", "  ", axis.fuzz, 8)
                    out += field("Flat", "  ", axis.flat, 8) + field("Resolution", " ", axis.resolution, 3)
                case Evdev.EV_LED: out += "#        State \(device.ledStates[code] ?? 0)\n"
                case Evdev.EV_SW: out += "#        State \(device.switchStates[code] ?? 0)\n"
                default: break
                }
            }
        }
        out += "# Properties:\n"
        for property in device.properties.sorted() {
            let name = Evdev.libevdevName(ofProperty: property) ?? "(null)"
            out += "#   Property  type \(property) (\(name))\n"
        }
        return out
    }

    /// printf's `%#04x`: `0x` and at least two digits, but a zero as `0000`.
    static func alternate(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return value == 0 ? "0000" : "0x" + String(repeating: "0", count: max(0, 2 - digits.count)) + digits
    }
}
