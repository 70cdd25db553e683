import RingLoopEvdev

// A device block of an evemu file as the description evemu would build from it.
extension EvemuFormat.Parser {
    func recording(from block: EvemuFormat.DeviceBlock) throws(RecordingError) -> Recording {
        guard let name = block.name, let ids = block.ids else {
            return Recording(description: nil, events: block.events, notes: block.notes, warnings: block.warnings)
        }
        var warnings = block.warnings
        func warnDescription(_ message: String) {
            warnings.append(RecordingWarning(file: file, line: block.nameLine, message: message))
        }
        var properties = Set<UInt16>()
        var ignoredProperties = 0
        for (index, byte) in block.propertyBytes.enumerated() {
            for bit in 0..<8 where byte & (1 << bit) != 0 {
                let property = index * 8 + bit
                if property <= Int(Evdev.INPUT_PROP_MAX) { properties.insert(UInt16(property)) } else { ignoredProperties += 1 }
            }
        }
        if ignoredProperties > 0 {
            warnDescription("\(ignoredProperties) property bit(s) above INPUT_PROP_MAX (1f) ignored, as libevdev ignores them")
        }
        var codes: [UInt16: Set<UInt16>] = [:]
        var hasRepeat = false
        for (type, bytes) in block.masks.sorted(by: { $0.key < $1.key }) {
            var set = Set<UInt16>()
            var ignored = 0
            let maximum = Evdev.maximumCode(ofType: type)
            for (index, byte) in bytes.enumerated() {
                for bit in 0..<8 where byte & (1 << bit) != 0 {
                    let code = index * 8 + bit
                    if let maximum, code <= Int(maximum) { set.insert(UInt16(code)) } else { ignored += 1 }
                }
            }
            switch type {
            case Evdev.EV_SYN:
                // evemu 2 writes a fixed `B: 00 0b` line; evemu 1 wrote the type mask.
                // libevdev enables types through their codes, so evemu ignores it.
                continue
            case Evdev.EV_REP:
                hasRepeat = hasRepeat || bytes.contains { $0 != 0 }
                continue
            default:
                if maximum == nil {
                    if ignored > 0 {
                        warnDescription("B: \(pad2(type)) bits ignored: the kernel reports no codes for event type \(hex(type))")
                    }
                    continue
                }
            }
            if ignored > 0 {
                warnDescription("\(ignored) bit(s) of B: \(pad2(type)) above the kernel's maximum code (\(hex(maximum!))) ignored")
            }
            if !set.isEmpty { codes[type] = set }
        }
        var axes: [UInt16: AbsoluteAxis] = [:]
        for (line, code, axis) in block.axes {
            guard codes[Evdev.EV_ABS]?.contains(code) == true else {
                warnings.append(
                    RecordingWarning(
                        file: file, line: line,
                        message: "A: line for axis \(pad2(code)) that the B: 03 mask does not list: ignored, as evemu ignores it"))
                continue
            }
            axes[code] = axis
        }
        var leds = block.leds
        var switches = block.switches
        for code in leds.keys where codes[Evdev.EV_LED]?.contains(code) != true { leds[code] = nil }
        for code in switches.keys where codes[Evdev.EV_SW]?.contains(code) != true { switches[code] = nil }
        var types = Set(codes.keys)
        types.insert(Evdev.EV_SYN)
        if hasRepeat { types.insert(Evdev.EV_REP) }
        codes[Evdev.EV_SYN] = types
        let description = InputDeviceDescription(
            name: name, busType: ids.0, vendor: ids.1, product: ids.2, version: ids.3, properties: properties,
            codes: codes, absoluteAxes: axes, ledStates: leds, switchStates: switches,
            keyRepeat: hasRepeat ? InputDeviceDescription.kernelDefaultKeyRepeat : nil)
        if let problem = description.problem {
            throw fail(block.nameLine, problem)
        }
        return Recording(description: description, events: block.events, notes: block.notes, warnings: warnings)
    }
}
