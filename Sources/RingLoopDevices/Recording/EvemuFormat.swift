import RingLoopEvdev

/// The evemu text format that `evemu-record` writes and `evemu-play` reads: `N:` name,
/// `I:` ids, `P:` property masks, `B:` capability masks, `A:` axis ranges, `L:` and `S:`
/// LED and switch states, then `E: sec.usec type code value` events, `#` comments.
///
/// The reader follows `evemu_read` of evemu 2.7 (with libevdev underneath) wherever that
/// reading is well defined:
/// - The first line may be `# EVEMU major.minor`; without it the file is format 1.0.
/// - A description is `N:`, then `I:`, then any `P:`, `B:`, `A:`, `L:`, `S:` lines in that
///   order. Each `P:`/`B:` line adds the next bytes of its mask.
/// - The device's event types are the types that have codes, as libevdev enables them;
///   the `B: 00` line (which evemu 2 always writes as `0b`, and evemu 1 wrote as the
///   type mask) does not add types. A `B: 14` (`EV_REP`) line with any bit set gives the
///   device kernel key repeat; `B:` lines of types that have no codes the kernel reports
///   (`EV_PWR`, `EV_FF_STATUS`, unassigned types) are read and ignored. Mask bits beyond
///   the kernel's maximum for the type are ignored, as libevdev ignores them.
/// - An `A:` line for an axis the `B: 03` mask does not list is ignored, as evemu ignores
///   it (libevdev's setters do nothing for a disabled axis); a warning says so.
/// - `A:` lines with five numbers (format 1.0/1.1) or six (resolution, 1.2 and later) are
///   both accepted whatever the header says (evemu requires the count its header implies).
/// - `L:` and `S:` give the initial LED and switch state (evemu reads and drops them).
/// - Events are `E:` lines; comments and blank lines may appear anywhere, and a `#`
///   comment may end any line but `N:` (whose text is the name, as evemu reads it).
///   CR LF line ends are accepted.
/// - A second `N:` after a description or its events starts a second device; the file's
///   devices share one clock. (evemu reads the first description and would play every
///   event of the file into that device.)
///
/// Where evemu would silently drop or misread a line, this reader stops with an error
/// that says so (it is stricter than evemu): description lines out of evemu's order or
/// after the device's events, lines that are neither description, event nor comment
/// (evemu skips them, or stops reading at a short one), and event times whose fraction is
/// not six digits (evemu reads `1.5` as 1.000005 s).
public enum EvemuFormat {
    // MARK: Reading

    /// The longest line accepted.
    static let maximumLineLength = 4096
    /// The newest format this reader knows (evemu 2.7 writes 1.3).
    static let newestVersion = (major: 1, minor: 3)

    /// Parses evemu text holding one device (or events only). `file` names the source in
    /// errors.
    public static func parse(_ text: String, file: String = "<text>") throws(RecordingError) -> Recording {
        try single(parseAll(Array(text.utf8), file: file), file: file)
    }

    /// Parses evemu text holding one or more devices (or events only), in file order.
    public static func parseAll(_ text: String, file: String = "<text>") throws(RecordingError) -> [Recording] {
        try parseAll(Array(text.utf8), file: file)
    }

    static func parse(_ bytes: [UInt8], file: String) throws(RecordingError) -> Recording {
        try single(parseAll(bytes, file: file), file: file)
    }

    static func single(_ recordings: [Recording], file: String) throws(RecordingError) -> Recording {
        guard recordings.count == 1 else {
            throw .unexpectedContent(
                file: file, message: "holds \(recordings.count) devices; load them with Recording.loadAll(contentsOf:)")
        }
        return recordings[0]
    }

    static func parseAll(_ bytes: [UInt8], file: String) throws(RecordingError) -> [Recording] {
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
        return try parser.finish()
    }

    /// Where a description is: evemu reads its lines in this order.
    enum Section: Int, Comparable {
        case none, name, ids, properties, masks, axes, leds, switches, events

        static func < (lhs: Section, rhs: Section) -> Bool { lhs.rawValue < rhs.rawValue }

        var tag: String {
            switch self {
            case .none: ""
            case .name: "N:"
            case .ids: "I:"
            case .properties: "P:"
            case .masks: "B:"
            case .axes: "A:"
            case .leds: "L:"
            case .switches: "S:"
            case .events: "E:"
            }
        }
    }

    /// One device being read.
    struct DeviceBlock {
        var name: String?
        var nameLine = 0
        var ids: (UInt16, UInt16, UInt16, UInt16)?
        var propertyBytes: [UInt8] = []
        var masks: [UInt16: [UInt8]] = [:]
        var axes: [(line: Int, code: UInt16, axis: AbsoluteAxis)] = []
        var leds: [UInt16: Int32] = [:]
        var switches: [UInt16: Int32] = [:]
        var events: [InputEvent] = []
        var notes: [String] = []
        var warnings: [RecordingWarning] = []
        var section = Section.none
    }

    struct Parser {
        let file: String
        var blocks: [DeviceBlock] = []
        var current = DeviceBlock()
        var sawFirstLine = false
        /// Comments before the first description or event, kept as notes.
        var headerOpen = true

        init(file: String) { self.file = file }

        /// Comments evemu-record (and ``EvemuFormat/write(_:kernel:)``) generate from the
        /// description; they are not kept as notes.
        static let generatedCommentPrefixes = [
            "EVEMU", "Input device name:", "Input device ID:", "Kernel:", "DMI:", "Supported events:",
            "Event type", "Event code", "Value", "Min", "Max", "Fuzz", "Flat", "Resolution", "Properties:",
            "Property type", "Property  type", "State", "Size in mm:", "Waiting for events",
        ]

        func fail(_ line: Int, _ message: String) -> RecordingError {
            .malformed(file: file, line: line, message: message)
        }

        mutating func warn(_ line: Int, _ message: String) {
            current.warnings.append(RecordingWarning(file: file, line: line, message: message))
        }

        mutating func consume(_ raw: ArraySlice<UInt8>, line: Int) throws(RecordingError) {
            var slice = raw
            while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
            guard let first = slice.first else { return }
            defer { sawFirstLine = true }
            if first == UInt8(ascii: "#") {
                try comment(slice.dropFirst(), line: line)
                return
            }
            guard slice.count >= 2, slice[slice.startIndex + 1] == UInt8(ascii: ":") else {
                let started = current.section != .none || !current.events.isEmpty || !blocks.isEmpty
                throw fail(
                    line,
                    "expected N:, I:, P:, B:, A:, L:, S:, E: or a # comment, found '\(preview(slice))'"
                        + (started ? " (evemu would skip this line, or stop reading at it; ringloop is stricter)" : ""))
            }
            let body = slice.dropFirst(2)
            let tag = Character(UnicodeScalar(first))
            headerOpen = false
            switch tag {
            case "N": try nameLine(body, line)
            case "I":
                guard current.section == .name else {
                    throw fail(line, current.section == .none ? "I: line before the N: name line" : "I: must follow the N: line")
                }
                let fields = try numbers(
                    body, line, hexCount: 4, decimalCount: 0, what: "I: bus vendor product version (4 hexadecimal numbers)")
                guard fields.allSatisfy({ $0 <= UInt16.max }) else { throw fail(line, "I: values must be at most ffff") }
                current.ids = (UInt16(fields[0]), UInt16(fields[1]), UInt16(fields[2]), UInt16(fields[3]))
                current.section = .ids
            case "P", "B", "A", "L", "S":
                try descriptionLine(tag, body, line)
            case "E":
                if current.section == .name { throw fail(line, "expected the I: line after N:, found an event") }
                current.events.append(try event(body, line))
                current.section = .events
            case "R", "D":
                throw fail(
                    line,
                    "'\(tag):' is a line of hid-recorder (hid-tools), which records raw HID reports, not evdev events;"
                        + " record the evdev node with evemu-record or libinput record instead")
            default:
                throw fail(line, "unknown line '\(tag):'; expected N:, I:, P:, B:, A:, L:, S: or E:")
            }
        }

        mutating func comment(_ text: ArraySlice<UInt8>, line: Int) throws(RecordingError) {
            let note = String(decoding: text.drop { $0 == 0x20 }, as: UTF8.self)
            if !sawFirstLine, note.hasPrefix("EVEMU ") {
                let version = note.dropFirst(6).split(separator: ".")
                if version.count == 2, let major = Int(version[0]), let minor = Int(version[1].prefix { $0.isNumber }),
                    (major, minor) > EvemuFormat.newestVersion
                {
                    warn(
                        line,
                        "file format \(major).\(minor) is newer than \(newestVersion.major).\(newestVersion.minor), the newest this reader knows"
                    )
                }
                return
            }
            guard headerOpen else { return }
            if !note.isEmpty, !note.allSatisfy({ $0 == "#" || $0 == " " }),
                !Self.generatedCommentPrefixes.contains(where: { note.hasPrefix($0) })
            {
                current.notes.append(note)
            }
        }

        mutating func nameLine(_ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) {
            if current.name == nil && !current.events.isEmpty {
                throw fail(line, "a device description after events that have none")
            }
            switch current.section {
            case .none:
                break
            case .name:
                throw fail(line, "a second N: line before the I: line")
            default:
                // A new device: the previous one is complete.
                blocks.append(current)
                current = DeviceBlock()
            }
            var text = body
            while let c = text.first, c == 0x20 || c == 0x09 { text = text.dropFirst() }
            while let c = text.last, c == 0x20 || c == 0x09 { text = text.dropLast() }
            guard !text.isEmpty else { throw fail(line, "expected a device name after N:") }
            current.name = String(decoding: text, as: UTF8.self)
            current.nameLine = line
            current.section = .name
        }

        mutating func descriptionLine(_ tag: Character, _ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) {
            let section: Section =
                switch tag {
                case "P": .properties
                case "B": .masks
                case "A": .axes
                case "L": .leds
                default: .switches
                }
            switch current.section {
            case .none: throw fail(line, "\(tag): line before the N: name line")
            case .name: throw fail(line, "expected the I: line after N:, found \(tag):")
            case .events:
                throw fail(
                    line,
                    "\(tag): line after the device's events; the description comes first"
                        + " (evemu would skip it; ringloop is stricter)")
            default:
                if section < current.section {
                    throw fail(
                        line,
                        "\(tag): line after \(current.section.tag) lines: evemu reads P:, B:, A:, L:, S: in this order"
                            + " and would ignore this line; move it up (ringloop is stricter)")
                }
            }
            current.section = section
            switch tag {
            case "P":
                let fields = try maskBytes(body, line, what: "P: followed by hexadecimal mask bytes")
                current.propertyBytes += fields
            case "B":
                let fields = try maskBytes(body, line, what: "B: type followed by hexadecimal mask bytes", leading: true)
                guard fields.count >= 2 else { throw fail(line, "expected B: type followed by mask bytes") }
                guard fields[0] <= Evdev.EV_MAX else {
                    throw fail(line, "B: type \(hex(Int64(fields[0]))) is above EV_MAX (\(hex(Int64(Evdev.EV_MAX))))")
                }
                current.masks[UInt16(fields[0]), default: []] += fields.dropFirst()
            case "A":
                let fields = try axisNumbers(body, line)
                guard fields.dropFirst().allSatisfy({ $0 >= Int64(Int32.min) && $0 <= Int64(Int32.max) }) else {
                    throw fail(line, "A: values must fit in 32 bits")
                }
                // evemu reads the code into a byte; an axis above ABS_MAX is in no B: 03 mask, so it
                // is ignored below with a warning.
                guard fields[0] <= UInt8.max else { throw fail(line, "A: axis code \(hex(fields[0])) is above ff") }
                current.axes.append(
                    (
                        line, UInt16(fields[0]),
                        AbsoluteAxis(
                            minimum: Int32(fields[1]), maximum: Int32(fields[2]), fuzz: Int32(fields[3]),
                            flat: Int32(fields[4]), resolution: fields.count > 5 ? Int32(fields[5]) : 0)
                    ))
            default:
                let fields = try numbers(body, line, hexCount: 1, decimalCount: 1, what: "\(tag): code (hexadecimal) and value (decimal)")
                guard fields[1] >= Int64(Int32.min), fields[1] <= Int64(Int32.max) else {
                    throw fail(line, "\(tag): value must fit in 32 bits")
                }
                let maximum = Int64(tag == "L" ? Evdev.LED_MAX : Evdev.SW_MAX)
                guard fields[0] <= maximum else {
                    warn(line, "\(tag): code \(hex(fields[0])) is above \(tag == "L" ? "LED_MAX" : "SW_MAX") (\(hex(maximum))): ignored")
                    return
                }
                if tag == "L" {
                    current.leds[UInt16(fields[0])] = Int32(fields[1])
                } else {
                    current.switches[UInt16(fields[0])] = Int32(fields[1])
                }
            }
        }

        mutating func finish() throws(RecordingError) -> [Recording] {
            if current.section == .name {
                throw fail(current.nameLine, "device description without an I: line")
            }
            if current.section != .none || !current.events.isEmpty || blocks.isEmpty {
                blocks.append(current)
            }
            var recordings: [Recording] = []
            for block in blocks {
                recordings.append(try recording(from: block))
            }
            return recordings
        }

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

/// Parses digits of `radix` (and a leading `-` when `signed`), at most 18 digits (so the
/// value always fits in 64 bits); `nil` for anything else.
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
    guard !digits.isEmpty, digits.count <= (radix == 16 ? 15 : 18) else { return nil }
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
