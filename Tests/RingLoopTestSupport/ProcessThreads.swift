import Glibc
import RingLoop

/// This process's threads, as the kernel lists them in `/proc/self/task`.
public enum ProcessThreads {
    /// The ids of the threads whose name (`comm`) is `name`.
    public static func named(_ name: String) -> [String] {
        let tasks = (directoryEntries("/proc/self/task") ?? []).map(\.name)
        return tasks.filter { task in
            guard let file = fopen("/proc/self/task/\(task)/comm", "r") else { return false }
            defer { fclose(file) }
            var buffer = [CChar](repeating: 0, count: 64)
            guard fgets(&buffer, 64, file) != nil else { return false }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return text.split(separator: "\n").first.map(String.init) == name
        }
    }

    /// The calling thread's id (its entry in `/proc/self/task`), from the link
    /// `/proc/thread-self` → `PID/task/TID`.
    public static var currentID: Int32 {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard length > 0 else { return 0 }
        let text = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    /// Whether the thread `id` of this process has not ended yet.
    public static func isRunning(_ id: Int32) -> Bool { access("/proc/self/task/\(id)", F_OK) == 0 }
}
