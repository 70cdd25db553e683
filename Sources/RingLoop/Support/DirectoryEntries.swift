import Glibc

/// One entry of a folder, as `readdir` reports it.
package struct DirectoryEntry: Sendable, Hashable {
    /// The entry's name.
    package let name: String
    /// Whether the entry is a folder (`DT_DIR`; `false` where the file system does not say).
    package let isDirectory: Bool
}

/// The entries of the folder at `path`, without `.` and `..`, or `nil` when it cannot be
/// opened (`errno` says why).
///
/// Names are read in place through a pointer to `d_name`. glibc sizes each entry to its
/// record (`d_reclen`), so copying the whole 256-byte `d_name` array out of the last entry
/// of a batch reads past glibc's buffer — AddressSanitizer caught exactly that on a large
/// folder.
package func directoryEntries(_ path: String) -> [DirectoryEntry]? {
    guard let directory = opendir(path) else { return nil }
    defer { closedir(directory) }
    var entries: [DirectoryEntry] = []
    while let entry = readdir(directory) {
        let name = direntName(entry)
        if name == "." || name == ".." { continue }
        entries.append(DirectoryEntry(name: name, isDirectory: entry.pointee.d_type == UInt8(DT_DIR)))
    }
    return entries
}

/// The name of an entry `readdir` returned, read in place (see ``directoryEntries(_:)``
/// for why the `d_name` array must not be copied whole).
package func direntName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    return String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
}
