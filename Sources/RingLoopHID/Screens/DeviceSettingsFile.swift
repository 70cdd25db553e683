import Glibc

/// A per-device settings file, read: its screens, its `[match …]` sections, and the
/// problems found, each naming the file, the line and the key.
///
/// The format (version 1; the DocC article "Screens and calibration" describes it in
/// full):
///
/// ```
/// # /etc/ringloop/devices.conf
/// version = 1
///
/// [screen HDMI-A-1]
/// size = 1080x1920          # pixels as the app sees them, after the rotation
/// rotation = 90             # clockwise: 0, 90, 180 or 270
/// physical-size = 68x121    # millimetres (optional)
/// position = 0,0            # in a layout of screens (optional)
///
/// [match name="ILITEK*" vendor=0x222a bus=usb class=touchscreen]
/// screen = HDMI-A-1
/// calibration = 1.02 0 -0.01 0 0.98 0.01
/// ```
///
/// Lines are `key = value`; `#` or `;` starts a comment (at the start of a line, or after
/// a space); a section header's criteria are `key=value` words, a value in double quotes
/// when it has spaces. A line that cannot be used is reported and left out, and the rest
/// of the file is kept; a section whose header cannot be used is left out whole (its
/// settings would otherwise reach devices it was not meant for).
public struct DeviceSettingsFile: Sendable {
    /// The versions this reader understands.
    public static let supportedVersions = 1...1

    /// One `[match …]` section.
    public struct Section: Sendable, Hashable {
        /// The devices it applies to.
        public var match: DeviceMatch
        /// The header's text, which identifies the section across readings.
        public var header: String
        /// The header's line.
        public var line: Int
        /// Its settings in file order, each with its line.
        public var entries: [Entry]
    }

    /// One setting of a section.
    public struct Entry: Sendable, Hashable {
        public var key: DeviceSettingKey
        public var value: DeviceSettingValue
        public var line: Int
        /// Whether the value was kept from the previous reading, the new line being wrong.
        public var isKept = false
    }

    /// A line of the file that could not be used.
    public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The file's path.
        public var path: String
        /// The line, from 1 (0: the file as a whole).
        public var line: Int
        /// The key or section criterion the problem is about, if any.
        public var key: String?
        /// What is wrong and what would be valid.
        public var message: String
        /// The section header the line is in (to keep a value from an earlier reading).
        var header: String?

        public var description: String {
            (line > 0 ? "\(path):\(line): " : "\(path): ") + (key.map { "\($0): " } ?? "") + message
        }
    }

    /// The file's path (as given).
    public var path: String
    /// The version the file says it is written in.
    public var version = 1
    /// Its screens, each with the line of its header.
    public var screens: [(screen: ScreenDescription, line: Int)] = []
    /// Its `[match …]` sections in file order (later ones win).
    public var sections: [Section] = []
    /// What could not be used.
    public var problems: [Problem] = []

    /// Reads the file at `path`.
    /// - Throws: a ``Problem`` at line 0 when the file cannot be read at all.
    public init(contentsOf path: String) throws(Problem) {
        let text: String
        do { text = try readWholeFile(path) } catch {
            throw Problem(path: path, line: 0, key: nil, message: "cannot read: \(String(cString: strerror(error.code)))")
        }
        self.init(text: text, path: path)
    }

    /// Reads settings from `text`, naming `path` in problems.
    public init(text: String, path: String) {
        self.path = path
        var sawVersion = false
        enum Current {
            case preamble
            case screen(index: Int)
            case match(index: Int)
            case skipped(header: String)
        }
        var current = Current.preamble
        var screenHasSize: [Bool] = []
        for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = offset + 1
            let line = Self.withoutComment(rawLine).trimmingWhitespace
            if line.isEmpty { continue }
            func problem(_ key: String?, _ message: String, header: String? = nil) {
                problems.append(Problem(path: path, line: number, key: key, message: message, header: header))
            }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    problem(nil, "a section header ends with ']': [screen NAME] or [match CRITERIA]")
                    current = .skipped(header: String(line))
                    continue
                }
                if !sawVersion {
                    problem("version", "the file does not say its version first; write 'version = 1' before any section")
                    sawVersion = true
                }
                let inside = line.dropFirst().dropLast().trimmingWhitespace
                let kind = inside.prefix(while: { $0 != " " && $0 != "\t" })
                let rest = inside.dropFirst(kind.count).trimmingWhitespace
                switch kind {
                case "screen":
                    guard !rest.isEmpty, !rest.contains(" ") else {
                        problem(nil, "a screen section names its screen in one word: [screen HDMI-A-1]")
                        current = .skipped(header: String(inside))
                        continue
                    }
                    screens.append((try! ScreenDescription(name: String(rest), width: 1, height: 1), number))
                    screenHasSize.append(false)
                    current = .screen(index: screens.count - 1)
                case "match":
                    do {
                        let match = try Self.parseCriteria(rest)
                        sections.append(Section(match: match, header: String(inside), line: number, entries: []))
                        current = .match(index: sections.count - 1)
                    } catch {
                        problems.append(
                            Problem(
                                path: path, line: number, key: error.key,
                                message: error.message + "; the section is left out"))
                        current = .skipped(header: String(inside))
                    }
                default:
                    problem(nil, "'[\(inside)]' is not a section; sections are [screen NAME] and [match CRITERIA]")
                    current = .skipped(header: String(inside))
                }
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                problem(nil, "'\(line)' is not 'key = value'")
                continue
            }
            let key = line[..<equals].trimmingWhitespace
            let value = line[line.index(after: equals)...].trimmingWhitespace
            switch current {
            case .preamble:
                guard key == "version" else {
                    problem(String(key), "only 'version = 1' comes before the first section")
                    continue
                }
                sawVersion = true
                guard let found = Int(value), Self.supportedVersions.contains(found) else {
                    problems.append(
                        Problem(
                            path: path, line: number, key: "version",
                            message: "version '\(value)' is not one this reader knows (valid: 1); the file is not used"))
                    sections = []
                    screens = []
                    return
                }
                version = found
            case .skipped:
                continue
            case .screen(let index):
                do throws(ScreenSettingError) {
                    var screen = screens[index].screen
                    switch key {
                    case "size":
                        let sized = try ScreenDescription(parsing: value, name: screen.name)
                        guard !value.contains("@") else { throw .screenSize(String(value)) }
                        let rotation = screen.rotation
                        screen = sized
                        screen.rotation = rotation
                        screenHasSize[index] = true
                    case "rotation": screen.rotation = try ScreenRotation(parsing: value)
                    case "physical-size":
                        let (width, height) = try parsePair(value, what: "physical size in millimetres")
                        guard width > 0, height > 0 else { throw .pair(what: "physical size in millimetres", text: String(value)) }
                        screen.physicalSize = (width, height)
                    case "position":
                        let (x, y) = try parsePair(value, what: "position in pixels")
                        screen.origin = ScreenPoint(x: x, y: y)
                    default:
                        problem(String(key), "not a screen key; valid: size, rotation, physical-size, position")
                        continue
                    }
                    screens[index].screen = screen
                } catch {
                    problem(String(key), error.description)
                }
            case .match(let index):
                guard let settingKey = DeviceSettingKey(rawValue: String(key)) else {
                    problem(
                        String(key),
                        "not a setting; valid: " + DeviceSettingKey.allCases.map(\.rawValue).joined(separator: ", "),
                        header: sections[index].header)
                    continue
                }
                do {
                    let parsed = try settingKey.parse(value)
                    sections[index].entries.append(Entry(key: settingKey, value: parsed, line: number))
                } catch {
                    problem(String(key), error.description, header: sections[index].header)
                }
            }
        }
        for (index, hasSize) in screenHasSize.enumerated().reversed() where !hasSize {
            problems.append(
                Problem(
                    path: path, line: screens[index].line, key: "size",
                    message: "screen '\(screens[index].screen.name)' has no size; write size = WIDTHxHEIGHT; the screen is left out"))
            screens.remove(at: index)
        }
        problems.sort { $0.line < $1.line }
    }

    /// This reading, with the values of the previous reading kept for every key whose new
    /// line was refused (in a section with the same header): a device keeps its old setting
    /// rather than losing it to a typing error.
    public func keepingValues(from previous: DeviceSettingsFile) -> DeviceSettingsFile {
        var merged = self
        for problem in problems {
            guard let header = problem.header, let name = problem.key, let key = DeviceSettingKey(rawValue: name),
                let index = merged.sections.firstIndex(where: { $0.header == header }),
                let old = previous.sections.last(where: { $0.header == header })?.entries.last(where: { $0.key == key }),
                !merged.sections[index].entries.contains(where: { $0.key == key })
            else { continue }
            var kept = old
            kept.isKept = true
            merged.sections[index].entries.append(kept)
        }
        return merged
    }

    /// The criterion that made a header unusable.
    struct CriterionError: Error {
        var key: String?
        var message: String
    }

    /// Reads a header's criteria: `key=value` words, values in double quotes when they
    /// have spaces.
    static func parseCriteria(_ text: Substring) throws(CriterionError) -> DeviceMatch {
        var match = DeviceMatch()
        var rest = text
        while true {
            rest = rest.trimmingWhitespace
            guard !rest.isEmpty else { break }
            guard let equals = rest.firstIndex(of: "=") else {
                throw CriterionError(key: nil, message: "'\(rest)' is not a criterion KEY=VALUE")
            }
            let key = String(rest[..<equals])
            var value: Substring
            var after = rest.index(after: equals)
            if after < rest.endIndex, rest[after] == "\"" {
                let start = rest.index(after: after)
                guard let close = rest[start...].firstIndex(of: "\"") else {
                    throw CriterionError(key: key, message: "the quoted value has no closing '\"'")
                }
                value = rest[start..<close]
                after = rest.index(after: close)
            } else {
                let end = rest[after...].firstIndex(where: { $0 == " " || $0 == "\t" }) ?? rest.endIndex
                value = rest[after..<end]
                after = end
            }
            rest = rest[after...]
            switch key {
            case "name": match.name = String(value)
            case "phys": match.physicalLocation = String(value)
            case "id-path": match.path = String(value)
            case "vendor", "product":
                guard let id = parseIdentifier(value) else {
                    throw CriterionError(key: key, message: "'\(value)' is not a 16-bit hexadecimal id such as 0x0eef")
                }
                if key == "vendor" { match.vendor = id } else { match.product = id }
            case "bus":
                guard let bus = BusName.bus(named: value) else {
                    throw CriterionError(
                        key: key,
                        message: "'\(value)' is not a bus; valid: " + BusName.names.map(\.0).joined(separator: ", ")
                            + ", or a hexadecimal BUS_ number")
                }
                match.bus = bus
            case "class":
                guard let deviceClass = HIDDeviceClass(rawValue: String(value)) else {
                    throw CriterionError(
                        key: key,
                        message: "'\(value)' is not a class; valid: " + HIDDeviceClass.allCases.map(\.rawValue).joined(separator: ", "))
                }
                match.deviceClass = deviceClass
            default:
                throw CriterionError(
                    key: key, message: "not a criterion; valid: name, vendor, product, bus, class, phys, id-path")
            }
        }
        return match
    }

    /// The line without its comment: `#` or `;` at its start, or after a space or tab
    /// outside double quotes.
    static func withoutComment(_ line: Substring) -> Substring {
        var quoted = false
        var previous: Character = " "
        for index in line.indices {
            let character = line[index]
            if character == "\"" { quoted.toggle() }
            if !quoted, character == "#" || character == ";", previous == " " || previous == "\t" { return line[..<index] }
            previous = character
        }
        return line
    }
}

/// The whole file at `path` as UTF-8 text (invalid bytes replaced).
/// - Throws: the `errno` of the failed `open` or `read`.
func readWholeFile(_ path: String) throws(FileReadError) -> String {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw FileReadError(code: errno) }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            throw FileReadError(code: errno)
        }
        if count == 0 { break }
        bytes.append(contentsOf: chunk[..<count])
        guard bytes.count <= 16 << 20 else { throw FileReadError(code: EFBIG) }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// A failed read of a whole file: its `errno`.
struct FileReadError: Error {
    var code: Int32
}
