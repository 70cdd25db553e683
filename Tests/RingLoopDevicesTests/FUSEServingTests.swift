import CLibEvdev
import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoopDevices

/// What a node's server does per reader: a blocking read waits in the server and is
/// answered by the sending thread; non-blocking is decided per read, as evdev does; an
/// io_uring read gets data (not an end of file); the serving thread runs where asked.
@Suite("FUSE nodes: how reads are served", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct FUSEServingTests {
    @Test("a blocking read waits in the server and the sending thread answers it; O_NONBLOCK set later gets EAGAIN")
    func blockingReadAnsweredBySending() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let fd = open(node.path, O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let got = Atomic<Int>(-1)
            let reader = LoopThread(name: "blocking-reader")
            reader.perform {
                var buffer = [input_event](repeating: input_event(), count: 8)
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                got.store(count, ordering: .releasing)
            }
            // The read is with the server before the frame is sent.
            let limit = MonotonicInstant.now + .seconds(10)
            while node.servedRequests.reads < 1 && MonotonicInstant.now < limit { sched_yield() }
            #expect(node.servedRequests.reads == 1, "the read never reached the server")
            #expect(got.load(ordering: .acquiring) == -1, "the read returned with nothing sent")
            try node.send([(2, 0, 5), (0, 0, 0)])
            while got.load(ordering: .acquiring) == -1 && MonotonicInstant.now < limit { sched_yield() }
            reader.stopAndJoin()
            #expect(got.load(ordering: .acquiring) == 2 * MemoryLayout<input_event>.size)
            #expect(node.servedRequests.readsAnsweredAtSending == 1)
            // Non-blocking is the file's flag at each read, not at open.
            #expect(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0)
            var event = input_event()
            #expect(read(fd, &event, MemoryLayout<input_event>.size) == -1 && errno == EAGAIN)
        }
    }

    @Test(
        "EVIOCREVOKE ends a reader as the kernel's evdev does: its parked read and later reads get ENODEV, poll hangs up, the others read on"
    )
    func revokedReader() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let revoked = open(node.path, O_RDONLY | O_CLOEXEC)
            let other = open(node.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(revoked >= 0 && other >= 0)
            defer {
                close(revoked)
                close(other)
            }
            let result = Atomic<Int>(0)
            let failure = Atomic<Int32>(0)
            let reader = LoopThread(name: "revoked-reader")
            reader.perform {
                var buffer = [input_event](repeating: input_event(), count: 8)
                let count = buffer.withUnsafeMutableBytes { read(revoked, $0.baseAddress, $0.count) }
                failure.store(errno, ordering: .relaxed)
                result.store(count, ordering: .releasing)
            }
            // The read waits in the server (nothing sent yet) when the revocation comes.
            #expect(waitUntil { node.servedRequests.reads >= 1 }, "the read never reached the server")
            #expect(result.load(ordering: .acquiring) == 0)
            // EVIOCREVOKE is _IOW('E', 0x91, int); a FUSE node reads its argument through
            // the pointer (the kernel's evdev takes the literal 0).
            var zero: Int32 = 0
            #expect(Glibc.ioctl(revoked, UInt(0x4004_4591), &zero) == 0)
            #expect(waitUntil { result.load(ordering: .acquiring) != 0 }, "the parked read was not answered")
            reader.stopAndJoin()
            #expect(result.load(ordering: .acquiring) == -1 && failure.load(ordering: .relaxed) == ENODEV)
            try node.send([(2, 0, 5), (0, 0, 0)])
            var event = input_event()
            #expect(read(revoked, &event, MemoryLayout<input_event>.size) == -1 && errno == ENODEV)
            var poller = pollfd(fd: revoked, events: Int16(POLLIN), revents: 0)
            #expect(poll(&poller, 1, 0) == 1 && Int32(poller.revents) & POLLHUP != 0)
            #expect(readEvents(other).count == 2, "a revocation touches only the revoked file")
        }
    }

    @Test("a read through io_uring gets the frame sent, not an end of file")
    func ringReadGetsData() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let result = ThreadLock<IOCompletion.Outcome?>(nil)
            let thread = LoopThread(name: "ring-reader")
            thread.perform {
                let loop = RingRunLoop.current
                let fd = open(node.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: fd), loop: loop) { channel, completion in
                    result.withLock { $0 = completion.outcome }
                    channel.close()
                }
                loop.add(channel.source, to: .common)
                try? node.send([(2, 1, -4), (0, 0, 0)])
                do throws(IOFailure) { try channel.read(upTo: 8 * MemoryLayout<input_event>.size) } catch {
                    result.withLock { $0 = .failed(error) }
                }
            }
            let limit = MonotonicInstant.now + .seconds(10)
            while result.withLock({ $0 }) == nil && MonotonicInstant.now < limit { sched_yield() }
            thread.stopAndJoin()
            let outcome = try #require(result.withLock { $0 })
            guard case .bytes(let bytes) = outcome else {
                Issue.record("the read ended with \(outcome)")
                return
            }
            #expect(bytes.count == 2 * MemoryLayout<input_event>.size)
            let events = bytes.withUnsafeBytes { Array($0.bindMemory(to: input_event.self)) }
            #expect(events.map { [Int($0.type), Int($0.code), Int($0.value)] } == [[2, 1, -4], [0, 0, 0]])
        }
    }

    @Test("the serving thread runs on the CPUs asked for; CPUs that do not exist are refused, naming the valid ones")
    func serverPlacement() throws {
        _ = MountLeakCheck.armed
        let cpus = CPUAffinity.allowedCPUs()
        let chosen = [cpus.last!]
        let path = "/tmp/ringloop-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let folder = try FUSEDeviceFolder(path: path, serverCPUs: chosen)
        defer { folder.close() }
        #expect(folder.serverCPUs == chosen)
        // The serving thread is the process's thread named fuse-evdev whose set is the one asked for.
        let node = try folder.addDevice(testMouse)  // the server has answered: it is running
        #expect(node.clientCount == 0)
        let placed = ProcessThreads.named("fuse-evdev").map { Self.allowedCPUList(of: $0) }
        #expect(placed.contains("\(chosen[0])"), "fuse-evdev threads allowed on \(placed)")
        do {
            _ = try FUSEDeviceFolder(path: path + "-x", serverCPUs: [4096])
            Issue.record("CPU 4096 was accepted")
        } catch {
            guard case .placement(let reason) = error else {
                Issue.record("wrong error: \(error)")
                return
            }
            #expect("\(error)".contains("4096") && "\(error)".contains("available"), "\(reason)")
        }
    }

    static func allowedCPUList(of task: String) -> String {
        guard let file = fopen("/proc/self/task/\(task)/status", "r") else { return "" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        while fgets(&buffer, 512, file) != nil {
            let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if line.hasPrefix("Cpus_allowed_list:") {
                return String(line.dropFirst("Cpus_allowed_list:".count).filter { !$0.isWhitespace })
            }
        }
        return ""
    }
}
