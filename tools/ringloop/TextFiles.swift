// Small files read without Foundation (sysfs and /proc entries, the kernel check's logs
// and corpus), and the trimming Foundation's `trimmingCharacters(in:)` did.
#if canImport(Glibc)
import Glibc
#endif

/// The text of the file at `path` (UTF-8; invalid bytes replaced), or nil if it cannot be
/// opened or read. For files of kilobytes to a few megabytes: it reads to the end.
func fileText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if count == 0 { return String(decoding: bytes, as: UTF8.self) }
        bytes.append(contentsOf: chunk[0..<count])
    }
}

extension StringProtocol {
    /// The text without the spaces, tabs and line breaks at either end.
    var trimmed: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
