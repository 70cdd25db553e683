#if canImport(Glibc)
import Glibc
#endif

/// A recorded device: its description (absent in an events-only file) and its events.
public struct Recording: Hashable, Sendable {
    /// What the device said about itself, or `nil` for an events-only file.
    public var description: InputDeviceDescription?
    /// The events in file order.
    public var events: [RecordedEvent]
    /// Comment lines of the header (without `# `), kept for the reader; not the
    /// comments evemu generates.
    public var notes: [String]

    public init(description: InputDeviceDescription?, events: [RecordedEvent], notes: [String] = []) {
        self.description = description
        self.events = events
        self.notes = notes
    }

    /// The largest file ``load(contentsOf:)`` reads (bounded memory on hostile input).
    public static let maximumFileSize = 256 << 20
}

/// Why a recording could not be read.
public enum RecordingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A line did not have the expected form. `line` counts from 1.
    case malformed(file: String, line: Int, message: String)
    /// The file could not be read.
    case unreadable(file: String, errno: Int32)
    /// The file is larger than ``Recording/maximumFileSize``.
    case tooLarge(file: String, bytes: Int)
    /// A description file held events, or an events file a second description.
    case unexpectedContent(file: String, message: String)

    public var description: String {
        switch self {
        case .malformed(let file, let line, let message): "\(file):\(line): \(message)"
        case .unreadable(let file, let errno): "\(file): cannot read: \(String(cString: strerror(errno)))"
        case .tooLarge(let file, let bytes):
            "\(file): \(bytes) bytes is larger than the \(Recording.maximumFileSize >> 20) MiB a recording may be"
        case .unexpectedContent(let file, let message): "\(file): \(message)"
        }
    }
}

extension Recording {
    /// Reads a recording from a file: the evemu format (`.evemu`, `.events`, anything else),
    /// or libinput's `record` YAML when the file starts with `version:` (see
    /// ``LibinputRecording``).
    public static func load(contentsOf path: String) throws(RecordingError) -> Recording {
        let all = try loadAll(contentsOf: path)
        guard all.count == 1 else {
            throw .unexpectedContent(
                file: path, message: "holds \(all.count) devices; load them with Recording.loadAll(contentsOf:)")
        }
        return all[0]
    }

    /// Reads every device of a recording file: one for the evemu format, one or more for
    /// `libinput record` YAML.
    public static func loadAll(contentsOf path: String) throws(RecordingError) -> [Recording] {
        let bytes = try readFile(path)
        if isLibinputYAML(bytes) {
            return try LibinputRecording.parse(String(decoding: bytes, as: UTF8.self), file: path)
        }
        return [try EvemuFormat.parse(bytes, file: path)]
    }

    /// Whether the text starts, after comments and blank lines, with `version:` or `---`.
    static func isLibinputYAML(_ bytes: [UInt8]) -> Bool {
        var index = 0
        while index < bytes.count {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
            if index < bytes.count, bytes[index] == UInt8(ascii: "#") || bytes[index] == 0x0A || bytes[index] == 0x0D {
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
                index += 1
                continue
            }
            let rest = bytes[index...]
            return rest.starts(with: Array("version:".utf8)) || rest.starts(with: Array("---".utf8))
        }
        return false
    }

    /// Reads an events-only file whose description is in a separate file (as
    /// `evemu-play` takes them).
    public static func load(description descriptionPath: String, events eventsPath: String) throws(RecordingError)
        -> Recording
    {
        let description = try EvemuFormat.parse(try readFile(descriptionPath), file: descriptionPath)
        guard description.events.isEmpty, let device = description.description else {
            throw .unexpectedContent(file: descriptionPath, message: "expected a device description without events")
        }
        let events = try EvemuFormat.parse(try readFile(eventsPath), file: eventsPath)
        guard events.description == nil else {
            throw .unexpectedContent(file: eventsPath, message: "expected events only, found a device description")
        }
        return Recording(description: device, events: events.events, notes: description.notes)
    }

    /// Writes the recording in the evemu 1.3 format.
    public func write(to path: String) throws(RecordingError) {
        let text = EvemuFormat.write(self)
        guard let file = fopen(path, "w") else { throw .unreadable(file: path, errno: errno) }
        defer { fclose(file) }
        let ok = text.utf8CString.withUnsafeBufferPointer { fputs($0.baseAddress!, file) >= 0 }
        if !ok { throw .unreadable(file: path, errno: errno) }
    }

    static func readFile(_ path: String) throws(RecordingError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(file: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0, Int(info.st_size) > Recording.maximumFileSize {
            throw .tooLarge(file: path, bytes: Int(info.st_size))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadable(file: path, errno: errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > Recording.maximumFileSize { throw .tooLarge(file: path, bytes: bytes.count) }
        }
    }
}
