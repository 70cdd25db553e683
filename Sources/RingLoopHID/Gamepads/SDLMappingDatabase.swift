#if canImport(Glibc)
import Glibc
#endif

/// SDL game controller mappings, added and looked up as SDL 2 adds and looks them up.
///
/// An ordered list with one entry per GUID (without its CRC field): a line for a GUID that
/// is there already replaces that entry in place, if its priority is at least the entry's
/// (bundled data < lines added in code or from a file < `SDL_GAMECONTROLLERCONFIG`), as
/// `SDL_PrivateAddMappingForGUID` does. A device's mapping (``match(guid:name:)``) is, in
/// SDL's order: the entry for its GUID with the same name CRC, then for its GUID whatever
/// the CRC, then (vendor and product known) the first entry for its GUID without the
/// version, with the same CRC first; on Linux a name with "Xbox 360 Wireless Receiver" or
/// "Xbox"/"X-Box"/"XBOX" then gets SDL's layouts of the xpad driver; and a device whose
/// driver follows the kernel's gamepad specification gets SDL's automatic mapping
/// (``automaticMapping(for:)``).
public struct SDLMappingDatabase: Sendable {
    /// Who added a mapping; a later line replaces an entry of the same or a lower priority.
    public enum Priority: Int, Sendable, Comparable {
        /// The bundled data (SDL's built-in mappings).
        case bundled
        /// Added in code or from a file (`SDL_GameControllerAddMapping`, `…FromFile`,
        /// `SDL_GAMECONTROLLERCONFIG_FILE`).
        case application
        /// The user's `SDL_GAMECONTROLLERCONFIG`.
        case user

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// How a device's mapping was found.
    public enum MatchKind: String, Sendable, Hashable {
        /// The line for the device's GUID and name CRC.
        case guidAndCRC
        /// The line for the device's GUID (any CRC).
        case guid
        /// The first line for the device's bus, vendor and product, whatever the version.
        case versionless
        /// SDL's Linux fallback by name (the xpad driver's layouts).
        case name
        /// SDL's automatic mapping for a driver following the kernel's gamepad specification.
        case automatic
    }

    /// A device's mapping and how it was found.
    public struct Match: Sendable, Hashable {
        public var mapping: SDLGameControllerMapping
        public var kind: MatchKind
    }

    private struct Entry: Sendable {
        var mapping: SDLGameControllerMapping
        var priority: Priority
    }

    private var entries: [Entry] = []
    private var indexByGUID: [SDLJoystickGUID: Int] = [:]
    /// The values of SDL hints that `hint:` fields ask about (by default the process's
    /// environment, where SDL reads them too).
    public var hints: [String: String]

    /// An empty database; `hints` are the values `hint:` fields are checked against.
    public init(hints: [String: String] = ProcessEnvironment.current) {
        self.hints = hints
    }

    /// The mappings, in the database's order.
    public var mappings: [SDLGameControllerMapping] { entries.map(\.mapping) }

    /// The number of mappings.
    public var count: Int { entries.count }

    /// The Linux entries of SDL_GameControllerDB bundled with RingLoop (see
    /// ``SDLGameControllerDB``), at the bundled priority.
    public static func bundled(hints: [String: String] = ProcessEnvironment.current) -> SDLMappingDatabase {
        var database = SDLMappingDatabase(hints: hints)
        _ = database.addMappings(fromText: SDLGameControllerDB.linuxText, source: "SDL_GameControllerDB", priority: .bundled)
        return database
    }

    /// Adds one mapping line; a line whose `hint:` is false, or for another platform, is
    /// left out (`false`), as SDL leaves it out. Returns whether it was added or replaced
    /// an entry.
    @discardableResult
    public mutating func add(_ mapping: SDLGameControllerMapping, priority: Priority = .application) -> Bool {
        if let platform = mapping.platform, platform.lowercased() != "linux" { return false }
        if let hint = mapping.hint {
            var value = hint.defaultValue
            if let text = hints[hint.name] { value = Self.hintIsTrue(text, default: hint.defaultValue) }
            if hint.isNegated { value.toggle() }
            if !value { return false }
        }
        guard let guid = mapping.guid else {
            // default and xinput lines replace SDL's fallbacks.
            if mapping.guidField.lowercased() == "xinput" {
                xinputMapping = mapping
            }
            return true
        }
        if let index = indexByGUID[guid] {
            guard entries[index].priority <= priority else { return false }
            entries[index] = Entry(mapping: mapping, priority: priority)
        } else {
            indexByGUID[guid] = entries.count
            entries.append(Entry(mapping: mapping, priority: priority))
        }
        return true
    }

    /// Adds the lines of a `gamecontrollerdb.txt`-format text: lines with a `platform:`
    /// field for Linux are added (lines for other platforms and lines without one are left
    /// out, as `SDL_GameControllerAddMappingsFromFile` leaves them out); `#` comments and
    /// blank lines are skipped. A malformed line is skipped and reported with `source`
    /// and its line number; the rest still load.
    public mutating func addMappings(
        fromText text: String, source: String, priority: Priority = .application, requirePlatform: Bool = true
    ) -> [SDLMappingError] {
        var problems: [SDLMappingError] = []
        var number = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            if requirePlatform && !line.contains("platform:") { continue }
            do {
                let mapping = try SDLGameControllerMapping(parsing: line, source: source, lineNumber: number)
                add(mapping, priority: priority)
            } catch {
                problems.append(error)
            }
        }
        return problems
    }

    /// Adds the lines of a file in `gamecontrollerdb.txt` format (see
    /// ``addMappings(fromText:source:priority:requirePlatform:)``); throws when the file
    /// cannot be read, and returns the malformed lines it skipped.
    public mutating func addMappings(
        contentsOfFile path: String, priority: Priority = .application
    ) throws(SDLMappingError) -> [SDLMappingError] {
        let text = try Self.readFile(path)
        return addMappings(fromText: text, source: path, priority: priority)
    }

    /// Adds what SDL's environment variables give, as SDL reads them at start: the file
    /// named by `SDL_GAMECONTROLLERCONFIG_FILE` (priority ``Priority/application``), then
    /// the lines of `SDL_GAMECONTROLLERCONFIG` (one a line, no platform needed; priority
    /// ``Priority/user``). Returns the problems (an unreadable file, malformed lines).
    public mutating func addEnvironment(_ environment: [String: String] = ProcessEnvironment.current) -> [SDLMappingError] {
        var problems: [SDLMappingError] = []
        if let path = environment["SDL_GAMECONTROLLERCONFIG_FILE"], !path.isEmpty {
            do {
                problems += try addMappings(contentsOfFile: path)
            } catch {
                problems.append(error)
            }
        }
        if let lines = environment["SDL_GAMECONTROLLERCONFIG"], !lines.isEmpty {
            problems += addMappings(
                fromText: lines, source: "SDL_GAMECONTROLLERCONFIG", priority: .user, requirePlatform: false)
        }
        return problems
    }

    /// The mapping line for a GUID and name, looked up in SDL's order (see the type's
    /// description); `nil` when none fits (``automaticMapping(for:)`` may still).
    public func match(guid: SDLJoystickGUID, name: String) -> Match? {
        let crc = guid.crc
        let plain = guid.withoutCRC
        if crc != 0, let index = indexByGUID[plain], entries[index].mapping.crc == crc {
            return Match(mapping: entries[index].mapping, kind: .guidAndCRC)
        }
        if let index = indexByGUID[plain] {
            return Match(mapping: entries[index].mapping, kind: .guid)
        }
        if guid.vendor != 0 && guid.product != 0 {
            let versionless = plain.withoutVersion
            if crc != 0,
                let entry = entries.first(where: { $0.mapping.guid?.withoutVersion == versionless && $0.mapping.crc == crc })
            {
                return Match(mapping: entry.mapping, kind: .versionless)
            }
            if let entry = entries.first(where: { $0.mapping.guid?.withoutVersion == versionless }) {
                return Match(mapping: entry.mapping, kind: .versionless)
            }
        }
        if name.contains("Xbox 360 Wireless Receiver") {
            return Match(mapping: Self.xbox360WirelessMapping, kind: .name)
        }
        if name.contains("Xbox") || name.contains("X-Box") || name.contains("XBOX") {
            return Match(mapping: xinputMapping, kind: .name)
        }
        return nil
    }

    /// A device's mapping: the database's (``match(guid:name:)``) for its SDL GUID and
    /// name, or SDL's automatic mapping when its driver follows the kernel's gamepad
    /// specification; `nil` for a device SDL would not make a game controller.
    public func match(for device: HIDDeviceInfo) -> Match? {
        if let found = match(guid: device.sdlGUID, name: device.sdlName) { return found }
        return Self.automaticMapping(for: device).map { Match(mapping: $0, kind: .automatic) }
    }

    /// SDL's Linux layout of the xpad driver, for names with "Xbox", "X-Box" or "XBOX"
    /// that no line matches (SDL's built-in `xinput` line on Linux).
    private var xinputMapping = try! SDLGameControllerMapping(
        parsing:
            "xinput,*,a:b0,b:b1,back:b6,dpdown:h0.4,dpleft:h0.8,dpright:h0.2,dpup:h0.1,guide:b8,leftshoulder:b4,leftstick:b9,lefttrigger:a2,leftx:a0,lefty:a1,rightshoulder:b5,rightstick:b10,righttrigger:a5,rightx:a3,righty:a4,start:b7,x:b2,y:b3,",
        source: "SDL")

    /// SDL's layout for the xpad driver's wireless receiver (its d-pad as buttons).
    private static let xbox360WirelessMapping = try! SDLGameControllerMapping(
        parsing:
            "none,X360 Wireless Controller,a:b0,b:b1,back:b6,dpdown:b14,dpleft:b11,dpright:b12,dpup:b13,guide:b8,leftshoulder:b4,leftstick:b9,lefttrigger:a2,leftx:a0,lefty:a1,rightshoulder:b5,rightstick:b10,righttrigger:a5,rightx:a3,righty:a4,start:b7,x:b2,y:b3,"
            .replacingFirstField(with: "00000000000000000000000000000000"),
        source: "SDL")

    /// SDL's reading of a hint's text as a boolean (`SDL_GetStringBoolean`): "0" and
    /// "false" (any case) are false, other text true, empty text the default.
    static func hintIsTrue(_ text: String, default defaultValue: Bool) -> Bool {
        if text.isEmpty { return defaultValue }
        return !(text == "0" || text.lowercased() == "false")
    }

    /// A file's text, or an error naming the file and the system's reason.
    static func readFile(_ path: String) throws(SDLMappingError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw SDLMappingError(source: path, line: 0, problem: "cannot open: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            throw SDLMappingError(source: path, line: 0, problem: "not a regular file (a mappings file is gamecontrollerdb.txt text)")
        }
        let limit = 16 << 20
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SDLMappingError(source: path, line: 0, problem: "cannot read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += chunk[0..<count]
            if bytes.count > limit {
                throw SDLMappingError(source: path, line: 0, problem: "larger than \(limit >> 20) MiB: not a mappings file")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    /// The text with its first comma-separated field replaced.
    fileprivate func replacingFirstField(with field: String) -> String {
        guard let comma = firstIndex(of: ",") else { return field }
        return field + self[comma...]
    }
}

/// The process's environment as a dictionary (where SDL reads its variables and hints).
public enum ProcessEnvironment {
    /// `environ`, read now.
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
