import CThreads

#if canImport(Glibc)
import Glibc
#endif

/// A request to run a thread on CPUs it may not use.
public struct CPUAffinityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The CPUs asked for.
    public var requested: [Int]
    /// The CPUs the requesting thread may use (the valid choices).
    public var available: [Int]
    /// The kernel's error when it refused the mask, if it got that far.
    public var errno: Int32?

    public var description: String {
        let valid = available.map(String.init).joined(separator: ", ")
        if requested.isEmpty { return "no CPU given; available: \(valid)" }
        let missing = requested.filter { !available.contains($0) }
        let subject = missing.isEmpty ? requested : missing
        let list = subject.map(String.init).joined(separator: ", ")
        let reason = errno.map { " (errno \($0))" } ?? ""
        return "CPU\(subject.count == 1 ? "" : "s") \(list) not available to this thread\(reason); available: \(valid)"
    }
}

/// Which CPUs threads may run on: the calling thread's set, the online CPUs, and
/// restricting the calling thread (``LoopThread/init(name:cpus:onMessage:)`` does it for a loop thread).
public enum CPUAffinity {
    /// Words of the affinity masks passed to the kernel: room for 1024 CPUs.
    private static let maskWords = 16

    /// The CPUs the calling thread may run on, ascending.
    public static func allowedCPUs() -> [Int] {
        var mask = [UInt64](repeating: 0, count: maskWords)
        let result = mask.withUnsafeMutableBufferPointer { ringloop_thread_affinity($0.baseAddress, maskWords, 1) }
        guard result == 0 else { return [] }
        var cpus: [Int] = []
        for (word, bits) in mask.enumerated() where bits != 0 {
            for bit in 0..<64 where bits & (1 << UInt64(bit)) != 0 { cpus.append(word * 64 + bit) }
        }
        return cpus
    }

    /// The CPUs that are online (`/sys/devices/system/cpu/online`), ascending; the
    /// calling thread's ``allowedCPUs()`` where that file cannot be read.
    public static func onlineCPUs() -> [Int] {
        guard let file = fopen("/sys/devices/system/cpu/online", "r") else { return allowedCPUs() }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return allowedCPUs() }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var cpus: [Int] = []
        // "0-3,6,8-9"
        for range in text.split(whereSeparator: { $0 == "," || $0 == "\n" }) {
            let bounds = range.split(separator: "-").compactMap { Int($0) }
            if bounds.count == 1 { cpus.append(bounds[0]) }
            if bounds.count == 2, bounds[0] <= bounds[1] { cpus += Array(bounds[0]...bounds[1]) }
        }
        return cpus.isEmpty ? allowedCPUs() : cpus
    }

    /// Checks that `cpus` is a non-empty set of online CPUs.
    public static func validate(cpus: [Int]) throws(CPUAffinityError) {
        let available = onlineCPUs()
        if cpus.isEmpty || cpus.contains(where: { !available.contains($0) }) {
            throw CPUAffinityError(requested: cpus, available: available)
        }
    }

    /// Restricts the calling thread to `cpus`, a non-empty set of ``onlineCPUs()``
    /// (widening a thread's set again works the same way). Threads it starts afterwards
    /// inherit the restriction. Throws, naming the valid CPUs, when a CPU is not online or
    /// the kernel keeps the thread off one (a cpuset of the process).
    ///
    /// Pinning the threads that hand work to each other onto one CPU turns each hand-off
    /// into a context switch on that CPU instead of a wake-up of another CPU, which on a
    /// virtual machine may be halted (measured here: device → handler p99 84–186 µs
    /// across two vCPUs, 39–57 µs on one; see README's performance section).
    public static func restrictCurrentThread(to cpus: [Int]) throws(CPUAffinityError) {
        try validate(cpus: cpus)
        var mask = [UInt64](repeating: 0, count: maskWords)
        for cpu in cpus { mask[cpu / 64] |= 1 << UInt64(cpu % 64) }
        let result = mask.withUnsafeMutableBufferPointer { ringloop_thread_affinity($0.baseAddress, maskWords, 0) }
        if result != 0 { throw CPUAffinityError(requested: cpus, available: onlineCPUs(), errno: -result) }
        // The kernel silently leaves out CPUs outside the process's cpuset.
        let granted = allowedCPUs()
        if granted != Array(Set(cpus)).sorted() {
            throw CPUAffinityError(requested: cpus, available: granted)
        }
    }
}
