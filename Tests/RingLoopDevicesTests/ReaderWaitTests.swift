import Glibc
import RingLoop
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices

/// Waiting for readers before a replay: a FUSE node counts the opens that read or polled; a kernel node's
/// readers are the descriptors `/proc` shows on it, woken by inotify.
@Suite("Waiting for readers", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct ReaderWaitTests {
    @Test("A FUSE node: the wait ends when the second reader reads, not before; a timeout is false")
    func fuseNode() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let devices: [any VirtualInputDevice] = [node]
            #expect(node.readerCount == 0)
            #expect(!devices.waitForReaders(1, timeout: .milliseconds(50)))
            let first = open(node.path, O_RDONLY | O_NONBLOCK)
            defer { close(first) }
            #expect(node.readerCount == 0, "an open that has not read is not a reader yet")
            // The first read wakes a wait for readers (a byte in the node's pipe); a second
            // read does not.
            drain(node.openings.read)
            #expect(readOnce(first) == EAGAIN)
            #expect(node.readerCount == 1)
            #expect(hasByte(node.openings.read), "the first read woke no wait")
            drain(node.openings.read)
            #expect(readOnce(first) == EAGAIN)
            #expect(!hasByte(node.openings.read), "a second read woke the wait again")
            // The second reader opens and reads from another thread while the wait is under way.
            let opened = Atomic<Int32>(-1)
            let opener = PosixThread.start {
                usleep(30_000)
                let fd = open(node.path, O_RDONLY | O_NONBLOCK)
                opened.store(fd, ordering: .releasing)
                _ = readOnce(fd)
            }
            let started = MonotonicInstant.now
            let came = devices.waitForReaders(2, timeout: .seconds(10))
            let waited = MonotonicInstant.now - started
            opener.join()
            defer { close(opened.load(ordering: .acquiring)) }
            #expect(came)
            #expect(opened.load(ordering: .acquiring) >= 0)
            #expect(waited < .seconds(5), "woken by the read, not by the timeout")
            #expect(node.readerCount == 2)
            // A stop request ends the wait at once.
            #expect(!node.waitForReaders(3, timeout: .seconds(10), shouldStop: { true }))
        }
    }

    @Test("Progress is reported at most once a second, with each node's readers")
    func progress() throws {
        try withDeviceFolder { folder in
            let nodes: [any VirtualInputDevice] = [try folder.addDevice(testMouse), try folder.addDevice(testMouse)]
            let reader = open(nodes[0].nodePath, O_RDONLY | O_NONBLOCK)
            defer { close(reader) }
            #expect(readOnce(reader) == EAGAIN)
            var reports: [(MonotonicInstant, [(node: String, readers: Int)])] = []
            let started = MonotonicInstant.now
            #expect(!nodes.waitForReaders(1, timeout: .milliseconds(2500), progress: { reports.append((.now, $0)) }))
            // At 1 s and 2 s; a report that came late moves the next one past the wait's
            // 2.5 s, so on a loaded machine only the first may come. None closer than a
            // second to the start or to the one before.
            #expect((1...2).contains(reports.count), "\(reports.count) reports")
            let times = [started] + reports.map(\.0)
            #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= .milliseconds(990) }, "\(times)")
            #expect(reports.first?.1.map(\.readers) == [1, 0])
            #expect(reports.first?.1.map(\.node) == nodes.map(\.nodePath))
        }
    }

    @Test("A character device's readers, counted from /proc by device number (any name of the node)")
    func characterDevice() throws {
        // A node of its own for /dev/full's device (1, 7), which hardly anyone holds.
        let path = "/tmp/ringloop-readers-\(getpid())"
        var full = stat()
        guard stat("/dev/full", &full) == 0, mknod(path, S_IFCHR | 0o600, full.st_rdev) == 0 else {
            Issue.record("mknod: \(String(cString: strerror(errno)))")
            return
        }
        defer { unlink(path) }
        let readers = NodeReaders(path: path)
        let before = readers.count()
        let first = open(path, O_RDONLY)
        let second = open("/dev/full", O_RDONLY)
        #expect(readers.count() == before + 2)
        close(first)
        close(second)
        #expect(readers.count() == before)
        // A waiter returns once the node is opened (woken by the watch, or at the latest
        // by its recheck).
        let opener = PosixThread.start {
            usleep(20_000)
            close(open(path, O_RDONLY))
        }
        let started = MonotonicInstant.now
        readers.waitForChange(timeout: .seconds(5))
        opener.join()
        #expect(MonotonicInstant.now - started < .seconds(4))
    }
}

/// Reads `fd` once (non-blocking, nothing queued): the errno it fails with. A FUSE node
/// counts the file as a reader from then on.
func readOnce(_ fd: Int32) -> Int32 {
    var bytes = [UInt8](repeating: 0, count: 24)
    return read(fd, &bytes, bytes.count) < 0 ? errno : 0
}

/// Whether the pipe `fd` has a byte to read now.
private func hasByte(_ fd: Int32) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&entry, 1, 0) == 1
}

/// Reads everything waiting in the non-blocking pipe `fd`.
private func drain(_ fd: Int32) {
    var bytes = [UInt8](repeating: 0, count: 64)
    while read(fd, &bytes, bytes.count) > 0 {}
}
