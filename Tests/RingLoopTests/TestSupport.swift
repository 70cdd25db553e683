import CLibURing
import Glibc
import Synchronization
import Testing

@testable import RingLoop

/// Tests run in parallel in one process, so counting `/proc/self/fd` is only meaningful
/// while no other test opens or closes descriptors. Every test that opens descriptors
/// holds this lock shared; the fd-count test holds it exclusively.
enum DescriptorAudit {
    nonisolated(unsafe) private static let lock: UnsafeMutablePointer<pthread_rwlock_t> = {
        let lock = UnsafeMutablePointer<pthread_rwlock_t>.allocate(capacity: 1)
        pthread_rwlock_init(lock, nil)
        return lock
    }()

    static func shared<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    static func exclusive<T>(_ body: () throws -> T) rethrows -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Open descriptors of this process.
    static func openDescriptorCount() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return count - 1  // the directory stream's own descriptor
    }
}

/// Spins (yielding) until `condition` holds or `timeout` passes; returns whether it held.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let limit = MonotonicInstant.now + timeout
    while !condition() {
        if MonotonicInstant.now > limit { return false }
        sched_yield()
    }
    return true
}

/// A pipe whose ends close when the value is dropped.
final class TestPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        readEnd = fds[0]
        writeEnd = fds[1]
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    func writeByte() { var byte: UInt8 = 1; precondition(write(writeEnd, &byte, 1) == 1) }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }
}

extension WaitCore {
    /// Every event harvested so far.
    func drainEvents() -> [PortEvent] {
        var all: [PortEvent] = []
        while let event = nextEvent() { all.append(event) }
        return all
    }

    /// Waits (bounded) until `count` events have been harvested; returns them.
    func waitForEvents(_ count: Int, timeout: Duration = .seconds(10)) throws -> [PortEvent] {
        var all: [PortEvent] = []
        let limit = MonotonicInstant.now + timeout
        while all.count < count, MonotonicInstant.now < limit {
            try wait(until: limit)
            all += drainEvents()
        }
        return all
    }
}
