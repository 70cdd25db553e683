/// The evemu text format that `evemu-record` writes and `evemu-play` reads: `N:` name,
/// `I:` ids, `P:` property mask, `B:` capability masks, `A:` axis ranges, `L:` and `S:`
/// LED and switch states, then `E: sec.usec type code value` events, `#` comments.
///
/// Types, codes and masks are hexadecimal; the event value and the axis numbers are
/// decimal (the value may be negative). Format 1.0 `A:` lines without a resolution
/// column are accepted, as are files of events only.
public enum EvemuFormat {
    // MARK: Reading

    /// The longest line accepted.
    static let maximumLineLength = 4096

    /// Parses evemu text. `file` names the source in errors.
    public static func parse(_ text: String, file: String = "<text>") throws(RecordingError) -> Recording {
        try parse(Array(text.utf8), file: file)
    }

    static func parse(_ bytes: [UInt8], file: String) throws(RecordingError) -> Recording {
        var parser = Parser(file: file)
        var lineStart = 0
        var lineNumber = 0
        let count = bytes.count
        while lineStart < count {
            lineNumber += 1
            var lineEnd = lineStart
            while lineEnd < count, bytes[lineEnd] != 0x0A { lineEnd += 1 }
            var end = lineEnd
            if end > lineStart, bytes[end - 1] == 0x0D { end -= 1 }
            if end - lineStart > maximumLineLength {
                throw .malformed(
                    file: file, line: lineNumber, message: "line is longer than \(maximumLineLength) characters")
            }
            try parser.consume(bytes[lineStart..<end], line: lineNumber)
            lineStart = lineEnd + 1
        }
        return try parser.finish(lastLine: lineNumber)
    }

    struct Parser {
        let file: String
        var name: String?
        var ids: (UInt16, UInt16, UInt16, UInt16)?
        var propertyBytes: [UInt8] = []
        var masks: [UInt16: [UInt8]] = [:]
        var axes: [UInt16: AbsoluteAxis] = [:]
        var leds: [UInt16: Int32] = [:]
        var switches: [UInt16: Int32] = [:]
        var events: [RecordedEvent] = []
        var notes: [String] = []
        var descriptionLine = 0

        init(file: String) { self.file = file }

        /// Comments evemu-record (and ``EvemuFormat/write(_:)``) generate from the
        /// description; they are not kept as notes.
        static let generatedCommentPrefixes = [
            "EVEMU", "Input device name:", "Input device ID:", "Kernel:", "DMI:", "Supported events:",
            "Event type", "Event code", "Value", "Min", "Max", "Fuzz", "Flat", "Resolution", "Properties:",
            "Property type", "Waiting for events",
        ]

        func fail(_ line: Int, _ message: String) -> RecordingError {
            .malformed(file: file, line: line, message: message)
        }

        mutating func consume(_ raw: ArraySlice<UInt8>, line: Int) throws(RecordingError) {
            var slice = raw
            while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
            guard let first = slice.first else { return }
            if first == UInt8(ascii: "#") {
                if events.isEmpty, name == nil {
                    let note = String(decoding: slice.dropFirst().drop { $0 == 0x20 }, as: UTF8.self)
                    if !note.isEmpty, !note.allSatisfy({ $0 == "#" || $0 == " " }),
                        !Self.generatedCommentPrefixes.contains(where: { note.hasPrefix($0) })
                    {
                        notes.append(note)
                    }
                }
                return
            }
            guard slice.count >= 2, slice[slice.startIndex + 1] == UInt8(ascii: ":") else {
                throw fail(line, "expected N:, I:, P:, B:, A:, L:, S:, E: or a # comment, found '\(preview(slice))'")
            }
            let body = slice.dropFirst(2)
            let tag = Character(UnicodeScalar(first))
            if tag != "E" {
                if !events.isEmpty {
                    throw fail(line, "'\(tag):' description line after events; the description comes first")
                }
                descriptionLine = line
            }
            switch tag {
            case "N":
                if name != nil { throw fail(line, "a second N: line; a recording describes one device") }
                var text = body
                while let c = text.first, c == 0x20 || c == 0x09 { text = text.dropFirst() }
                while let c = text.last, c == 0x20 || c == 0x09 { text = text.dropLast() }
                guard !text.isEmpty else { throw fail(line, "expected a device name after N:") }
                name = String(decoding: text, as: UTF8.self)
            case "I":
                let fields = try numbers(body, line, hexCount: 4, decimalCount: 0, what: "I: bus vendor product version (4 hexadecimal numbers)")
                guard fields.allSatisfy({ $0 <= 0xFFFF }) else {
                    throw fail(line, "I: values must be at most ffff")
                }
                ids = (UInt16(fields[0]), UInt16(fields[1]), UInt16(fields[2]), UInt16(fields[3]))
            case "P":
                let fields = try numbers(body, line, hexCount: -1, decimalCount: 0, what: "P: followed by hexadecimal mask bytes")
                guard fields.allSatisfy({ $0 <= 0xFF }) else { throw fail(line, "P: mask bytes must be at most ff") }
                propertyBytes += fields.map { UInt8($0) }
                if propertyBytes.count > EvdevLimits.propertyMaskBytes {
                    throw fail(line, "more than \(EvdevLimits.propertyMaskBytes) property mask bytes")
                }
            case "B":
                let fields = try numbers(body, line, hexCount: -1, decimalCount: 0, what: "B: type followed by hexadecimal mask bytes")
                guard fields.count >= 2 else { throw fail(line, "expected B: type followed by mask bytes") }
                guard fields[0] <= 0x1F, let limit = EvdevLimits.maskBytes(type: UInt16(fields[0])) else {
                    throw fail(line, "B: type \(hex(fields[0])) has no capability mask; valid: \(EvdevLimits.maskTypes.map { hex(Int64($0)) }.joined(separator: ", "))")
                }
                guard fields.dropFirst().allSatisfy({ $0 <= 0xFF }) else { throw fail(line, "B: mask bytes must be at most ff") }
                let type = UInt16(fields[0])
                masks[type, default: []] += fields.dropFirst().map { UInt8($0) }
                if masks[type]!.count > limit {
                    throw fail(line, "more than \(limit) mask bytes for type \(hex(fields[0]))")
                }
            case "A":
                let fields = try axisNumbers(body, line)
                guard fields[0] <= 0x3F else { throw fail(line, "A: axis code \(hex(fields[0])) is above ABS_MAX (3f)") }
                guard fields.dropFirst().allSatisfy({ $0 >= Int64(Int32.min) && $0 <= Int64(Int32.max) }) else {
                    throw fail(line, "A: values must fit in 32 bits")
                }
                axes[UInt16(fields[0])] = AbsoluteAxis(
                    minimum: Int32(fields[1]), maximum: Int32(fields[2]), fuzz: Int32(fields[3]), flat: Int32(fields[4]),
                    resolution: fields.count > 5 ? Int32(fields[5]) : 0)
            case "L", "S":
                let fields = try numbers(body, line, hexCount: 1, decimalCount: 1, what: "\(tag): code (hexadecimal) and value (decimal)")
                let maximum: Int64 = tag == "L" ? 0x0F : 0x10
                guard fields[0] <= maximum else { throw fail(line, "\(tag): code \(hex(fields[0])) is above \(hex(maximum))") }
                guard fields[1] >= Int64(Int32.min), fields[1] <= Int64(Int32.max) else {
                    throw fail(line, "\(tag): value must fit in 32 bits")
                }
                if tag == "L" { leds[UInt16(fields[0])] = Int32(fields[1]) } else { switches[UInt16(fields[0])] = Int32(fields[1]) }
            case "E":
                events.append(try event(body, line))
            default:
                throw fail(line, "unknown line '\(tag):'; expected N:, I:, P:, B:, A:, L:, S: or E:")
            }
        }

        /// `E: sec.usec type code value`, with an optional trailing `# comment`.
        func event(_ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) -> RecordedEvent {
            let fields = tokens(stripComment(body))
            let what = "E: seconds.microseconds type code value (type and code hexadecimal, value decimal)"
            guard fields.count == 4 else { throw fail(line, "expected \(what)") }
            let time = fields[0]
            guard let dot = time.firstIndex(of: UInt8(ascii: ".")),
                let seconds = parseInteger(time[time.startIndex..<dot], radix: 10, signed: false),
                seconds <= Int64(Int32.max) * 4,
                case let fraction = time[(dot + 1)...], !fraction.isEmpty, fraction.count <= 6,
                let micro = parseInteger(fraction, radix: 10, signed: false)
            else { throw fail(line, "expected a time like 12.345678 in \(what), found '\(preview(time))'") }
            var microseconds = micro
            for _ in fraction.count..<6 { microseconds *= 10 }
            guard let type = parseInteger(fields[1], radix: 16, signed: false), type <= 0xFFFF,
                let code = parseInteger(fields[2], radix: 16, signed: false), code <= 0xFFFF
            else { throw fail(line, "expected hexadecimal type and code of at most ffff in \(what)") }
            guard let value = parseInteger(fields[3], radix: 10, signed: true), value >= Int64(Int32.min),
                value <= Int64(Int32.max)
            else { throw fail(line, "expected a decimal 32-bit value in \(what), found '\(preview(fields[3]))'") }
            return RecordedEvent(
                seconds: seconds, microseconds: Int32(microseconds), type: UInt16(type), code: UInt16(code),
                value: Int32(value))
        }

        func axisNumbers(_ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) -> [Int64] {
            let fields = tokens(stripComment(body))
            let what = "A: code (hexadecimal) minimum maximum fuzz flat [resolution] (decimal)"
            guard fields.count == 5 || fields.count == 6 else { throw fail(line, "expected \(what)") }
            guard let code = parseInteger(fields[0], radix: 16, signed: false) else {
                throw fail(line, "expected \(what), found '\(preview(fields[0]))'")
            }
            var result = [code]
            for field in fields.dropFirst() {
                guard let number = parseInteger(field, radix: 10, signed: true) else {
                    throw fail(line, "expected \(what), found '\(preview(field))'")
                }
                result.append(number)
            }
            return result
        }

        /// Parses `hexCount` hexadecimal fields (any number ≥ 1 when -1), then
        /// `decimalCount` decimal ones.
        func numbers(_ body: ArraySlice<UInt8>, _ line: Int, hexCount: Int, decimalCount: Int, what: String)
            throws(RecordingError) -> [Int64]
        {
            let fields = tokens(stripComment(body))
            if hexCount >= 0, fields.count != hexCount + decimalCount { throw fail(line, "expected \(what)") }
            if hexCount < 0, fields.isEmpty { throw fail(line, "expected \(what)") }
            var result: [Int64] = []
            for (index, field) in fields.enumerated() {
                let decimal = hexCount >= 0 && index >= hexCount
                guard let number = parseInteger(field, radix: decimal ? 10 : 16, signed: decimal) else {
                    throw fail(line, "expected \(what), found '\(preview(field))'")
                }
                result.append(number)
            }
            return result
        }

        mutating func finish(lastLine: Int) throws(RecordingError) -> Recording {
            if name == nil, ids == nil, propertyBytes.isEmpty, masks.isEmpty, axes.isEmpty {
                return Recording(description: nil, events: events, notes: notes)
            }
            guard let name else { throw fail(descriptionLine, "device description without an N: name line") }
            guard let ids else { throw fail(descriptionLine, "device description without an I: line") }
            var properties = Set<UInt16>()
            for (index, byte) in propertyBytes.enumerated() {
                for bit in 0..<8 where byte & (1 << bit) != 0 { properties.insert(UInt16(index * 8 + bit)) }
            }
            var codes: [UInt16: Set<UInt16>] = [:]
            for (type, bytes) in masks {
                var set = Set<UInt16>()
                for (index, byte) in bytes.enumerated() {
                    for bit in 0..<8 where byte & (1 << bit) != 0 { set.insert(UInt16(index * 8 + bit)) }
                }
                if !set.isEmpty { codes[type] = set }
            }
            for code in axes.keys where !(codes[0x03]?.contains(code) ?? false) {
                throw fail(descriptionLine, "A: line for axis \(hex(Int64(code))) that the B: 03 mask does not list")
            }
            let hasRepeat = codes[0]?.contains(0x14) ?? false
            let description = InputDeviceDescription(
                name: name, busType: ids.0, vendor: ids.1, product: ids.2, version: ids.3, properties: properties,
                codes: codes, absoluteAxes: axes, ledStates: leds, switchStates: switches,
                keyRepeat: hasRepeat ? (250, 33) : nil)
            return Recording(description: description, events: events, notes: notes)
        }
    }

    // MARK: Writing

    /// The evemu 1.3 text of a recording, with evemu's explanatory comments.
    public static func write(_ recording: Recording) -> String {
        var out = "# EVEMU 1.3\n"
        for note in recording.notes { out += "# \(note)\n" }
        if let device = recording.description {
            out += "# Input device name: \"\(device.name)\"\n"
            out += "# Input device ID: bus \(hex(device.busType)) vendor \(hex(device.vendor)) product \(hex(device.product)) version \(hex(device.version))\n"
            out += "N: \(device.name)\n"
            out += "I: \(pad4(device.busType)) \(pad4(device.vendor)) \(pad4(device.product)) \(pad4(device.version))\n"
            out += maskLines(prefix: "P: ", bits: device.properties, bytes: EvdevLimits.propertyMaskBytes)
            for type in EvdevLimits.maskTypes {
                var bits = device.codes[type] ?? []
                if type == 0 { bits.insert(0) }
                out += maskLines(prefix: "B: \(pad2(type)) ", bits: bits, bytes: EvdevLimits.maskBytes(type: type)!)
            }
            for code in device.absoluteAxes.keys.sorted() {
                let axis = device.absoluteAxes[code]!
                out += "A: \(pad2(code)) \(axis.minimum) \(axis.maximum) \(axis.fuzz) \(axis.flat) \(axis.resolution)\n"
            }
            for code in device.ledStates.keys.sorted() { out += "L: \(pad2(code)) \(device.ledStates[code]!)\n" }
            for code in device.switchStates.keys.sorted() { out += "S: \(pad2(code)) \(device.switchStates[code]!)\n" }
        }
        out += "################################\n#      Waiting for events      #\n################################\n"
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
                let label = "\(EventNames.type(event.type)) / \(EventNames.code(type: event.type, code: event.code))"
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

// MARK: Small parsing helpers

func tokens(_ body: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
    body.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 })
}

func stripComment(_ body: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    if let hash = body.firstIndex(of: UInt8(ascii: "#")) { return body[body.startIndex..<hash] }
    return body
}

/// Parses digits of `radix` (and a leading `-` when `signed`), at most 18 digits; `nil`
/// for anything else.
func parseInteger(_ field: ArraySlice<UInt8>, radix: Int64, signed: Bool) -> Int64? {
    var digits = field
    var negative = false
    if signed, digits.first == UInt8(ascii: "-") {
        negative = true
        digits = digits.dropFirst()
    }
    if radix == 16, digits.count > 2, digits.first == UInt8(ascii: "0"),
        digits[digits.startIndex + 1] | 0x20 == UInt8(ascii: "x")
    {
        digits = digits.dropFirst(2)
    }
    guard !digits.isEmpty, digits.count <= 18 else { return nil }
    var value: Int64 = 0
    for byte in digits {
        let digit: Int64
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: digit = Int64(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: digit = Int64(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
        value = value * radix + digit
    }
    return negative ? -value : value
}

func preview(_ bytes: ArraySlice<UInt8>) -> String {
    let text = String(decoding: bytes.prefix(40), as: UTF8.self)
    return bytes.count > 40 ? text + "…" : text
}

func hex(_ value: Int64) -> String { String(value, radix: 16) }
func hex(_ value: UInt16) -> String { "0x" + String(value, radix: 16) }
func pad2(_ value: UInt16) -> String { leftPad(String(value, radix: 16), 2) }
func pad4(_ value: UInt16) -> String { leftPad(String(value, radix: 16), 4) }
func leftPad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
}
