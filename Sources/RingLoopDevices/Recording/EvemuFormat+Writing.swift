import RingLoopEvdev

extension EvemuFormat {
    // MARK: Writing

    /// The evemu 1.3 text of a recording, with evemu's explanatory comments; the masks are
    /// written as evemu-record writes them (`B: 00 0b`, every type with codes, `B: 14` with
    /// the key repeat bits or none).
    public static func write(_ recording: Recording) -> String { write(recording, eventsBanner: true) }

    static func write(_ recording: Recording, eventsBanner: Bool) -> String {
        var out = "# EVEMU 1.3\n"
        for note in recording.notes { out += "# \(note)\n" }
        if let device = recording.description {
            out += "# Input device name: \"\(device.name)\"\n"
            out +=
                "# Input device ID: bus \(hex(device.busType)) vendor \(hex(device.vendor)) product \(hex(device.product)) version \(hex(device.version))\n"
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
            for code in device.ledStates.keys.sorted() { out += "L: \(pad2(code)) \(device.ledStates[code]!)\n" }
            for code in device.switchStates.keys.sorted() { out += "S: \(pad2(code)) \(device.switchStates[code]!)\n" }
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
    /// A device's description as `evemu-describe` prints it: the evemu text of the
    /// description with no event section.
    public static func describe(_ description: InputDeviceDescription) -> String {
        write(Recording(description: description, events: []), eventsBanner: false)
    }
}
