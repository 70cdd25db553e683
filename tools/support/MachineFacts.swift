// What the command and the benchmark both need to know about this machine and package.
import Foundation

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
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let line = text.split(separator: "\n").first.map(String.init) ?? ""
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
/// the package the executable was built in.
package func bundledRecordingsFolder(_ explicit: String?) -> String? {
    var candidates: [String] = []
    if let explicit { candidates.append(explicit) }
    candidates.append(FileManager.default.currentDirectoryPath + "/devices")
    var url = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    for _ in 0..<6 {
        url.deleteLastPathComponent()
        candidates.append(url.path + "/devices")
    }
    return candidates.first { path in
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            && ((try? FileManager.default.contentsOfDirectory(atPath: path))?.contains { $0.hasSuffix(".evemu") } ?? false)
    }
}

/// The package's version, which `ringloop --version` and `ringloop-bench --version` print;
/// CHANGELOG.md's newest entry names the same (a test checks).
package enum PackageVersion {
    package static let current = "0.4.0"
}
