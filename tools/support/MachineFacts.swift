// What the command and the benchmark both need to know about this machine and package
// (without Foundation: the command links none of it).
#if canImport(Glibc)
import Glibc
#endif

/// How this machine's idle CPUs wait, which sets the floor of every wake-up: a virtual
/// machine's guest that polls before halting (haltpoll, `guest_halt_poll_ns` > 0) wakes
/// within microseconds after a short sleep; one that halts at once pays a hypervisor exit
/// and entry (about 20 µs measured here).
package struct IdleCPUSetting {
    /// The cpuidle driver (`haltpoll`, `intel_idle`…), if the kernel reports one.
    package var driver: String?
    /// haltpoll's `guest_halt_poll_ns`, if the module is there.
    package var guestHaltPollNanoseconds: String?

    package static func current() -> IdleCPUSetting {
        IdleCPUSetting(
            driver: firstLine(of: "/sys/devices/system/cpu/cpuidle/current_driver"),
            guestHaltPollNanoseconds: firstLine(of: "/sys/module/haltpoll/parameters/guest_halt_poll_ns"))
    }

    /// One line for people.
    package var summary: String {
        guard let driver else { return "unknown (no cpuidle driver reported)" }
        guard driver == "haltpoll", let poll = guestHaltPollNanoseconds else { return driver }
        return poll == "0"
            ? "haltpoll, guest halt polling off (guest_halt_poll_ns 0): waking an idle CPU pays a hypervisor exit"
            : "haltpoll, guest polls up to \(poll) ns before halting"
    }

    private static func firstLine(of path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let line = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return line.isEmpty ? nil : line
    }
}

/// The running kernel's release string (`uname -r`).
package func kernelRelease() -> String {
    var name = utsname()
    uname(&name)
    return withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

/// Finds the bundled recordings: `--recordings`, then `./devices`, then `devices/` beside
/// the package the executable was built in (up to six folders above it).
package func bundledRecordingsFolder(_ explicit: String?) -> String? {
    var candidates: [String] = []
    if let explicit { candidates.append(explicit) }
    candidates.append("devices")
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if length > 0 {
        var folder = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for _ in 0..<6 {
            guard let slash = folder.lastIndex(of: "/"), slash != folder.startIndex else { break }
            folder = String(folder[..<slash])
            candidates.append(folder + "/devices")
        }
    }
    return candidates.first(where: holdsRecordings)
}

/// Whether `path` is a folder with at least one `.evemu` file.
private func holdsRecordings(_ path: String) -> Bool {
    guard let folder = opendir(path) else { return false }
    defer { closedir(folder) }
    while let entry = readdir(folder) {
        // Read in place: copying the whole 256-byte d_name out of a short record reads past
        // glibc's buffer (AddressSanitizer).
        let name = String(
            cString: (UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!).assumingMemoryBound(to: CChar.self))
        if name.hasSuffix(".evemu") { return true }
    }
    return false
}

/// The package's version, which `ringloop --version` and `ringloop-bench --version` print;
/// CHANGELOG.md's newest entry names the same (a test checks).
package enum PackageVersion {
    package static let current = "0.8.3"
}
