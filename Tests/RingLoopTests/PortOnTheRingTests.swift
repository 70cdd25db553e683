import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A listening socket at a port's name that never accepts, its backlog filled: a port
/// whose process is stopped, as a client sees it.
final class FullBacklog {
    let address: SocketAddress
    let listener: Int32
    let waiting: [Int32]

    init(portName: String) throws {
        address = try MessagePortNamespace.abstract.address(of: portName)
        listener = try address.makeListeningSocket(type: .sequencedPacket, backlog: 0).rawValue
        var waiting: [Int32] = []
        while waiting.count < 64 {
            let socket = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else {
                close(socket)
                break
            }
            waiting.append(socket)
        }
        self.waiting = waiting
    }

    var isFull: Bool { waiting.count < 64 }

    /// Takes one waiting connection in (and closes it): room for one more.
    func acceptOne() -> Bool {
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0 else { return false }
        close(accepted)
        return true
    }

    deinit {
        for socket in waiting { close(socket) }
        close(listener)
    }
}

/// Named ports to other processes on the caller's ring (issue 47): what waits, waits in the
/// calling thread's loop, never in `poll` or a sleep on its thread.
@Suite("Named ports on the caller's ring")
struct PortOnTheRingTests {
    @Test(
        "A connect to a port whose backlog is full waits in the ring until its timeout; a timer of the caller's default mode does not run meanwhile"
    )
    func connectTimesOutInTheRing() throws {
        let name = NamedPortTests.uniqueName("full")
        let backlog = try FullBacklog(portName: name)
        #expect(backlog.isFull, "the backlog never filled")
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let fired = Atomic<Int>(0)
            loop.add(LoopTimer(after: .zero) { _ in fired.add(1, ordering: .relaxed) }, to: .default)
            let started = MonotonicInstant.now
            #expect(throws: MessagePortError.sendTimeout(name)) {
                try RemoteMessagePort(name: name, connectTimeout: .milliseconds(100))
            }
            #expect(MonotonicInstant.now - started >= .milliseconds(100))
            #expect(fired.load(ordering: .relaxed) == 0, "the wait ran the caller's default mode")
            // One try only with `.zero`.
            #expect(throws: MessagePortError.sendTimeout(name)) { try RemoteMessagePort(name: name, connectTimeout: .zero) }
        }
    }

    @Test("A connect waiting in the ring for a full backlog goes through once the port takes a connection in")
    func connectWaitsForRoom() throws {
        let name = NamedPortTests.uniqueName("room")
        let backlog = try FullBacklog(portName: name)
        #expect(backlog.isFull, "the backlog never filled")
        let connected = ThreadLock<Result<PeerCredentials, MessagePortError>?>(nil)
        let connectorLoop = ThreadLock<RingRunLoop?>(nil)
        let connector = PosixThread.start(name: "connector") {
            connectorLoop.withLock { $0 = RingRunLoop.current }
            do throws(MessagePortError) {
                let remote = try RemoteMessagePort(name: name, connectTimeout: .seconds(20))
                connected.withLock { $0 = .success(remote.owner) }
            } catch {
                connected.withLock { $0 = .failure(error) }
            }
        }
        // Once the connector's loop waits (in the ring's connect), room for one.
        #expect(waitUntil { connectorLoop.withLock { $0 }?.isWaiting == true })
        #expect(connected.withLock { $0 } == nil)
        #expect(backlog.acceptOne())
        connector.join()
        let outcome = try #require(connected.withLock { $0 })
        #expect(try outcome.get().pid == getpid())
    }
}

/// The context switches of this process's thread named `name` so far (voluntary and not),
/// from /proc/self/task/TID/status; `nil` when no thread has that name.
func contextSwitches(ofThreadNamed name: String) -> Int? {
    guard let tasks = opendir("/proc/self/task") else { return nil }
    defer { closedir(tasks) }
    while let entry = readdir(tasks) {
        let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard tid.first?.isNumber == true,
            readText("/proc/self/task/\(tid)/comm")?.trimmingSuffix() == name,
            let status = readText("/proc/self/task/\(tid)/status")
        else { continue }
        // "voluntary_ctxt_switches:\t12" and "nonvoluntary_ctxt_switches:\t3".
        return status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { Int($0.split(separator: ":").last?.filter { $0.isNumber } ?? "") }.reduce(0, +)
    }
    return nil
}

private func readText(_ path: String) -> String? {
    let file = open(path, O_RDONLY | O_CLOEXEC)
    guard file >= 0 else { return nil }
    defer { close(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(file, &chunk, chunk.count)
        guard count > 0 else { break }
        bytes += chunk[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var text = self
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }

}

extension PortOnTheRingTests {
    /// The port thread's cost, measured: it only watches for connections' ends, so a
    /// thousand requests to another process do not wake it (it woke for every reply when
    /// it read them; a few switches are its start). The requests go from a child process
    /// of their own, whose port thread serves no other test's connections; the port is
    /// this process's.
    @Test("A thousand requests to another process: the port thread sleeps through them (its context switches counted)")
    func portThreadSleepsThroughRequests() async throws {
        let name = NamedPortTests.uniqueName("quiet")
        let served = try PortOnItsOwnThread(name: name, threadName: "quiet-port") { _, data in data }
        defer { served.close() }
        let output = ChildOutput(label: "PortOnTheRingTests-quiet")
        let result = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output.path as String] in
            ChildOutput.redirect(to: outputPath)
            let remote = try RemoteMessagePort(name: name)
            _ = try remote.sendRequest(msgid: 1, data: [0], replyTimeout: .seconds(20))
            guard let before = contextSwitches(ofThreadNamed: "ringloop-ports") else {
                print("no thread named ringloop-ports")
                _exit(3)
            }
            for index in 0..<1000 {
                let reply = try remote.sendRequest(msgid: 1, data: [UInt8(index % 256)], replyTimeout: .seconds(20))
                guard reply == [UInt8(index % 256)] else {
                    print("reply \(index): \(reply)")
                    _exit(4)
                }
            }
            let after = contextSwitches(ofThreadNamed: "ringloop-ports") ?? -1
            print("the port thread switched \(after - before) times in 1,000 requests")
            fflush(nil)
            _exit(after - before <= 10 ? 0 : 5)
        }
        output.report(ifFailed: result == nil)
    }

    /// A waiting thread's reader reads only until its own reply: what comes after is told
    /// to every reader armed then, and late replies come before a thread's next reply. Four
    /// threads of another process share one connection, one of them giving up on slow
    /// requests (their late replies come in among the others' replies); each reply goes to
    /// its own sender, none waits past its timeout.
    @Test("Four threads sharing one connection to another process, one abandoning slow requests: each gets its own replies")
    func threadsShareOneConnection() async throws {
        let name = NamedPortTests.uniqueName("shared")
        let served = try PortOnItsOwnThread(name: name, threadName: "shared-port") { msgid, data in
            if msgid == 2 {
                var pause = timespec(tv_sec: 0, tv_nsec: 3_000_000)
                nanosleep(&pause, nil)
            }
            return data
        }
        defer { served.close() }
        let output = ChildOutput(label: "PortOnTheRingTests-shared")
        let result = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output.path as String] in
            ChildOutput.redirect(to: outputPath)
            let remote = try RemoteMessagePort(name: name)
            let failures = ThreadLock<[String]>([])
            let threads = (0..<4).map { thread in
                PosixThread.start(name: "sender-\(thread)") {
                    for index in 0..<300 {
                        let data = [UInt8(thread), UInt8(index % 256), UInt8(index / 256)]
                        if thread == 0, index % 10 == 0 {
                            // Gives up before the reply: it comes late, among the others'.
                            _ = try? remote.sendRequest(msgid: 2, data: data, replyTimeout: .milliseconds(1))
                            continue
                        }
                        do throws(MessagePortError) {
                            let reply = try remote.sendRequest(msgid: 1, data: data, replyTimeout: .seconds(20))
                            if reply != data { failures.withLock { $0.append("thread \(thread) request \(index): got \(reply)") } }
                        } catch {
                            failures.withLock { $0.append("thread \(thread) request \(index): \(error)") }
                        }
                    }
                }
            }
            for thread in threads { thread.join() }
            let found = failures.withLock { $0 }
            print(found.isEmpty ? "every reply went to its sender" : found.prefix(10).joined(separator: "\n"))
            fflush(nil)
            _exit(found.isEmpty ? 0 : 6)
        }
        output.report(ifFailed: result == nil)
    }
    /// A send to another process goes through the sending thread's ring: each packet one
    /// `IORING_OP_SENDMSG` (counted by the ring), what arrives read with plain `recv` on the
    /// port's end and put together by the wire's assembler: every message whole, in order.
    @Test("Each packet sent to another process is one submission on the sending thread's ring; the messages arrive whole and in order")
    func sendsAreRingSubmissions() throws {
        let name = NamedPortTests.uniqueName("ringsend")
        let large = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let expected: [[UInt8]] = [large] + (1...5).map { [UInt8($0)] }
        let packets = (large.count + PortWire.fragmentCapacity - 1) / PortWire.fragmentCapacity + 5
        let arrived = ThreadLock<[PortWire.Message]>([])
        let server = try RawPortServer(name: name) { connection in
            var assembler = PortWire.Assembler(limit: 1 << 20)
            var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
            for _ in 0..<packets {
                var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 20_000) == 1 else { return }
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                let output = buffer.withUnsafeBytes { try? assembler.take(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                if case .message(let message)? = output { arrived.withLock { $0.append(message) } }
            }
        }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: name)
                let before = loop.submittedEntryCount
                for (index, data) in expected.enumerated() { try remote.send(msgid: Int32(index), data: data) }
                // One submission a packet; waiting for room (a poll each) would add more.
                #expect(loop.submittedEntryCount - before >= UInt64(packets))
            }
        } catch {
            server.finish()
            throw error
        }
        server.finish()
        let messages = arrived.withLock { $0 }
        #expect(messages.map(\.data) == expected)
        #expect(messages.map(\.sequence) == Array(1...UInt64(expected.count)))
        #expect(messages.allSatisfy { $0.kind == .message })
    }

    /// The event server's bound on a slow client rests on this: a send with a zero timeout
    /// says at once whether the port had room. To a port that never reads, sends go until
    /// the kernel has no room, then one fails with `sendTimeout` after its one submission
    /// (the send itself: no poll for room was armed, nothing waited).
    @Test("A zero-timeout send to a port of another process without room fails at once: one submission, no wait for room")
    func zeroTimeoutSendFailsAtOnce() throws {
        let name = NamedPortTests.uniqueName("ringfull")
        try RawPortServer.neverReading(name: name) {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: name)
                var sent = 0
                var failure: MessagePortError?
                var submissions: UInt64 = 0
                while failure == nil, sent < 100_000 {
                    let before = loop.submittedEntryCount
                    do throws(MessagePortError) {
                        try remote.send(msgid: 1, data: [UInt8](repeating: 3, count: 1000), timeout: .zero)
                        sent += 1
                    } catch {
                        failure = error
                    }
                    submissions = loop.submittedEntryCount - before
                }
                #expect(failure == .sendTimeout(name))
                #expect(sent > 0, "the kernel took nothing")
                #expect(submissions == 1, "the failed send made \(submissions) submissions")
            }
        }
    }

    /// A send the ring refuses (its call into the kernel fails before the kernel takes the
    /// entry) fails with a transport error, and leaves nothing behind: the entry becomes a
    /// no-op, so the caller's packet, gone once the send returns, is never sent later, and
    /// the next send on the same ring goes through. A send whose call fails after the
    /// kernel took the entry waits for its completion and succeeds with it.
    @Test(
        "A send whose submission the kernel refuses fails and is never sent later; one taken before its call failed completes; the next send goes through"
    )
    func refusedSubmissionLeavesNothing() throws {
        let port = try ReadingPort("refused", last: 4)
        let name = port.name
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remote = try RemoteMessagePort(name: name)
                guard let core = loop.waitCore() else {
                    Issue.record("no ring")
                    return
                }
                let faults = RingFaults()
                core.ring.faults = faults
                faults.fail(.submit, with: EIO)
                #expect(throws: MessagePortError.self) { try remote.send(msgid: 1, data: [1, 1, 1]) }
                #expect(faults.injectedCount == 1)
                // Taken by the kernel, then the call fails: the send waits for its own
                // completion and reports what the kernel did (the packet went out whole).
                faults.fail(.submitAfterTaking, with: EIO)
                try remote.send(msgid: 2, data: [2, 2])
                #expect(faults.injectedCount == 2)
                core.ring.faults = nil
                // A pass of the loop submits and harvests whatever is left queued.
                loop.run(mode: .default, for: .milliseconds(10), returnAfterSourceHandled: false)
                try remote.send(msgid: 3, data: [3])
                try remote.send(msgid: 4, data: [4])
            }
        } catch {
            port.finish()
            throw error
        }
        port.finish()
        let messages = port.messages
        #expect(messages.map(\.msgid) == [2, 3, 4])
        #expect(messages.map(\.data) == [[2, 2], [3], [4]])
    }
}
