#if canImport(Glibc)
import Glibc
#endif

/// The text of the file at `path` — at most its first `limit` bytes — decoded as UTF-8;
/// `nil` when it cannot be opened. Read with `fread` until the end, so a file of /proc
/// (whose size says 0) reads whole.
package func textOfFile(_ path: String, limit: Int = .max) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while bytes.count < limit {
        let count = fread(&chunk, 1, min(chunk.count, limit - bytes.count), file)
        if count == 0 { break }
        bytes += chunk[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The kernel's table of this process's mounts (`/proc/self/mountinfo`), as text.
package func mountTable() -> String { textOfFile("/proc/self/mountinfo") ?? "" }
