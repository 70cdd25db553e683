import CLibURing
import Glibc
import Synchronization
import Testing

@testable import RingLoop

/// Descriptor counts, for tests that run in a process of their own (exit tests): the
/// tests of one process run in parallel and open and close descriptors all the time, so a
/// count taken beside them proves nothing.
enum DescriptorAudit {
    /// Open descriptors of this process of the kinds a wait core makes — rings, eventfds
    /// and pipes — counted by kind.
    static func descriptorKinds() -> [String: Int] {
        var kinds: [String: Int] = [:]
        for entry in directoryEntries("/proc/self/fd") ?? [] {
            var target = [CChar](repeating: 0, count: 256)
            let length = readlink("/proc/self/fd/" + entry.name, &target, target.count - 1)
            guard length > 0 else { continue }  // the listing's own descriptor, closed by now
            let text = String(decoding: target.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let kind = text.hasPrefix("pipe:") ? "pipe" : text
            if kind == "pipe" || kind.contains("io_uring") || kind.contains("eventfd") { kinds[kind, default: 0] += 1 }
        }
        return kinds
    }
}

/// One open descriptor, known by the file it refers to: "is it closed yet?" must not be
/// asked of the number alone, since the suite's other tests, running in parallel, are
/// given freed numbers at once. Closed means the number is free or names another file.
struct DescriptorIdentity {
    let number: Int32
    private let device: UInt
    private let inode: UInt

    /// Records what `number` refers to now; it must be open.
    init(_ number: Int32) {
        var status = stat()
        precondition(fstat(number, &status) == 0, "descriptor \(number) is not open")
        (self.number, device, inode) = (number, UInt(status.st_dev), UInt(status.st_ino))
    }

    /// Whether the descriptor recorded has been closed (its number since reused or not).
    var isClosed: Bool {
        var status = stat()
        guard fstat(number, &status) == 0 else { return errno == EBADF }
        return UInt(status.st_dev) != device || UInt(status.st_ino) != inode
    }
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

@Suite("Folder listings")
struct DirectoryEntriesTests {
    /// Long and short names, many of them: some entry ends a getdents batch right at its
    /// record, where copying `d_name` whole read past glibc's buffer (AddressSanitizer).
    @Test("directoryEntries lists every name of a large folder exactly, without reading past an entry")
    func largeFolder() throws {
        let folder = "/tmp/ringloop-entries-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o700) == 0)
        defer {
            for entry in directoryEntries(folder) ?? [] { unlink(folder + "/" + entry.name) }
            rmdir(folder)
        }
        var expected: Set<String> = []
        for index in 0..<600 {
            let name = "e\(index)-" + String(repeating: "x", count: (index * 37) % 200)
            let fd = open(folder + "/" + name, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            close(fd)
            expected.insert(name)
        }
        #expect(mkdir(folder + "/sub", 0o700) == 0)
        defer { rmdir(folder + "/sub") }
        let entries = try #require(directoryEntries(folder))
        #expect(Set(entries.filter { !$0.isDirectory }.map(\.name)) == expected)
        #expect(entries.filter(\.isDirectory).map(\.name) == ["sub"])
        #expect(directoryEntries(folder + "/missing") == nil)
    }
}
