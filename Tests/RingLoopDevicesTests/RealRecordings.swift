import Glibc
import RingLoop
import Testing

@testable import RingLoopDevices

/// devices/real: recordings people made on physical hardware (see its README.md), with
/// the description each events-only file replays onto.
enum RealRecordings {
    /// The folder, found from this source file's location.
    static let folder: String = devicesFolder + "/real"

    struct Entry: Sendable, CustomTestStringConvertible {
        /// Path relative to devices/real.
        var file: String
        /// The file holding the device description, relative to devices/real; `nil` when
        /// the file describes its device itself.
        var description: String?

        var path: String { RealRecordings.folder + "/" + file }
        var testDescription: String { file }

        /// The recording with its description, as `ringloop replay FILE [--description D]` loads it.
        func load() throws(RecordingError) -> [Recording] {
            if let description {
                return [try Recording.load(description: RealRecordings.folder + "/" + description, events: path)]
            }
            return try Recording.loadAll(contentsOf: path)
        }
    }

    /// Every recording listed in manifest.tsv.
    static let entries: [Entry] = {
        guard let text = String(contentsOfFile: folder + "/manifest.tsv") else { return [] }
        return text.split(separator: "\n").compactMap { line -> Entry? in
            guard !line.hasPrefix("#") else { return nil }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 2 else { return nil }
            return Entry(file: String(fields[0]), description: fields[1] == "-" ? nil : String(fields[1]))
        }
    }()

    /// Every file under devices/real that is a recording (not a licence or a README).
    static func filesOnDisk() -> [String] {
        var found: [String] = []
        func walk(_ relative: String) {
            let path = relative.isEmpty ? folder : folder + "/" + relative
            for entry in directoryEntries(path) ?? [] {
                let name = entry.name
                let child = relative.isEmpty ? name : relative + "/" + name
                if entry.isDirectory {
                    walk(child)
                } else if !["LICENSE", "COPYING", "COPYING.GPL3", "README.md", "README.upstream.md", "manifest.tsv"].contains(name) {
                    found.append(child)
                }
            }
        }
        walk("")
        return found.sorted()
    }
}

extension String {
    init?(contentsOfFile path: String) {
        guard let bytes = try? Recording.readFile(path) else { return nil }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
