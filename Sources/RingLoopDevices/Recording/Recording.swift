import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A recorded device: its description (absent in an events-only file) and its events.
public struct Recording: Hashable, Sendable {
    /// What the device said about itself, or `nil` for an events-only file.
    public var description: InputDeviceDescription?
    /// The events in file order.
    public var events: [InputEvent]
    /// Comment lines of the header (without `# `), kept for the reader; not the
    /// comments evemu generates.
    public var notes: [String]
    /// What the reader accepted but did not use, each with its line (an `A:` line for an
    /// axis the masks do not list, mask bits beyond the kernel's maximum…). Commands
    /// print them on standard error.
    public var warnings: [RecordingWarning]

    public init(
        description: InputDeviceDescription?, events: [InputEvent], notes: [String] = [],
        warnings: [RecordingWarning] = []
    ) {
        self.description = description
        self.events = events
        self.notes = notes
        self.warnings = warnings
    }

    /// The largest file ``load(contentsOf:)`` reads (bounded memory on hostile input).
    public static let maximumFileSize = 256 << 20
}

/// Something a recording said that the reader accepted but did not use, and why.
public struct RecordingWarning: Hashable, Sendable, CustomStringConvertible {
    public var file: String
    /// The line it is about, counting from 1.
    public var line: Int
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    public var description: String { "\(file):\(line): warning: \(message)" }
}

/// Why a recording could not be read.
public enum RecordingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A line did not have the expected form. `line` counts from 1.
    case malformed(file: String, line: Int, message: String)
    /// The file could not be read.
    case unreadable(file: String, errno: Errno)
    /// The file is larger than ``Recording/maximumFileSize``.
    case tooLarge(file: String, bytes: Int)
    /// A description file held events, or an events file a second description.
    case unexpectedContent(file: String, message: String)

    public var description: String {
        switch self {
        case .malformed(let file, let line, let message): "\(file):\(line): \(message)"
        case .unreadable(let file, let errno): "\(file): cannot read: \(String(cString: strerror(errno.rawValue)))"
        case .tooLarge(let file, let bytes):
            "\(file): \(bytes) bytes is larger than the \(Recording.maximumFileSize >> 20) MiB a recording may be"
        case .unexpectedContent(let file, let message): "\(file): \(message)"
        }
    }
}

extension Recording {
    /// Reads a recording of one device from a file: the evemu format (`.evemu`, `.events`,
    /// `.desc`, anything else), or libinput's `record` YAML (see ``LibinputRecording``),
    /// told apart by content, not by name.
    public static func load(contentsOf path: String) throws(RecordingError) -> Recording {
        try EvemuFormat.single(loadAll(contentsOf: path), file: path)
    }

    /// Reads every device of a recording file, in file order: an evemu file may describe
    /// several devices one after the other, a `libinput record` file lists them under
    /// `devices:`. Their events share one clock.
    public static func loadAll(contentsOf path: String) throws(RecordingError) -> [Recording] {
        let bytes = try readFile(path)
        if isLibinputYAML(bytes) {
            return try LibinputRecording.parse(String(decoding: bytes, as: UTF8.self), file: path)
        }
        return try EvemuFormat.parseAll(bytes, file: path)
    }

    /// Whether the text is YAML of `libinput record`: after comments and blank lines, it
    /// starts with one of the keys that tool writes (`version:`, `devices:`, `events:`…),
    /// a YAML document marker, or an events list item (`- evdev:`).
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
            let starts = [
                "version:", "---", "ndevices:", "libinput:", "system:", "devices:", "events:", "- node:",
                "- evdev:", "evdev:",
            ]
            return starts.contains { rest.starts(with: Array($0.utf8)) }
        }
        return false
    }

    /// Reads events whose device description is in another file, as `evemu-play` takes
    /// them: `events` holds events only (an evemu events file, or a `libinput record`
    /// `events:` fragment); `description` holds one device (an evemu description, with or
    /// without events of its own, which are not used, or a `libinput record` file of one
    /// device).
    public static func load(
        description descriptionPath: String, events eventsPath: String
    ) throws(RecordingError)
        -> Recording
    {
        let descriptions = try loadAll(contentsOf: descriptionPath)
        guard descriptions.count == 1, let device = descriptions[0].description else {
            throw .unexpectedContent(
                file: descriptionPath,
                message: descriptions.count == 1
                    ? "holds events only; a description needs N: and I: lines (evemu) or an evdev: section (libinput record)"
                    : "describes \(descriptions.count) devices; give a description of one device")
        }
        let events = try loadAll(contentsOf: eventsPath)
        guard events.count == 1, events[0].description == nil else {
            throw .unexpectedContent(
                file: eventsPath, message: "has a device description of its own; --description is for files of events only")
        }
        return Recording(
            description: device, events: events[0].events, notes: descriptions[0].notes + events[0].notes,
            warnings: descriptions[0].warnings + events[0].warnings)
    }

    /// Writes the recording in the evemu 1.3 format (see ``OutputFile`` for how each kind
    /// of path is treated).
    /// - Returns: What was written to: the file, or what the link at `path` points at.
    @discardableResult
    public func write(to path: String) throws(OutputFileError) -> OutputFile {
        try Self.write(EvemuFormat.write(self), to: path)
    }

    /// Writes `text` (a recording in any format) to `path` (see ``OutputFile`` for how each
    /// kind of path is treated): every error, the final flush and close included, is
    /// thrown, and a regular file is replaced only once the whole text is written.
    /// - Returns: What was written to: the file, or what the link at `path` points at.
    @discardableResult
    public static func write(_ text: String, to path: String) throws(OutputFileError) -> OutputFile {
        let output = try OutputFile(path: path)
        try output.write(text)
        try output.commit()
        return output
    }

    static func readFile(_ path: String) throws(RecordingError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(file: path, errno: Errno(rawValue: errno)) }
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
                throw .unreadable(file: path, errno: Errno(rawValue: errno))
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > Recording.maximumFileSize { throw .tooLarge(file: path, bytes: bytes.count) }
        }
    }
}
