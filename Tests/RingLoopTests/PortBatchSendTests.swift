import CLibURing
import Dispatch
import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A port's end that reads every packet of one connection with plain `recv` and puts the
/// messages together with the wire's assembler, until `finish()`, a message with msgid
/// `last`, or the peer's end.
final class ReadingPort: Sendable {
    let name: String
    let server: RawPortServer
    let arrived = ThreadLock<[PortWire.Message]>([])
    private let finished = Atomic<Bool>(false)

    init(_ label: String, last: Int32 = .max) throws {
        name = NamedPortTests.uniqueName(label)
        let arrived = arrived
        server = try RawPortServer(name: name) { connection in
            var assembler = PortWire.Assembler(limit: 1 << 20)
            var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
            while true {
                var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 20_000) == 1 else { return }
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                let output = buffer.withUnsafeBytes { try? assembler.take(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                if case .message(let message)? = output {
                    arrived.withLock { $0.append(message) }
                    if message.msgid == last { return }
                }
            }
        }
    }

    var messages: [PortWire.Message] { arrived.withLock { $0 } }

    /// Finishes the server (once: later calls do nothing).
    func finish() {
        guard !finished.exchange(true, ordering: .relaxed) else { return }
        server.finish()
    }
}

extension PortOnTheRingTests {
    /// The event server's fan-out rests on this: one message to each of several ports of
    /// other processes is one call into the kernel on the sending thread's ring (counted by
    /// the ring; one send each would be one call each), and each port gets its messages
    /// whole, in order, numbered as single sends number them, a message longer than a
    /// packet and a second message to the same port included.
    @Test(
        "Messages to several ports of other processes go in one call into the kernel; each port gets its own whole, in order, numbered"
    )
    func batchIsOneCallIntoTheKernel() throws {
        let ports = try (0..<4).map { try ReadingPort("batch\($0)", last: 9) }
        let large = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remotes = try ports.map { try RemoteMessagePort(name: $0.name) }
                for round in 0..<3 {
                    let enters = loop.enterCount
                    let submitted = loop.submittedEntryCount
                    let failures = RemoteMessagePort.sendWithoutWaiting(
                        remotes.enumerated().map { index, remote in (remote, Int32(round), [UInt8(round), UInt8(index)]) })
                    #expect(failures.allSatisfy { $0 == nil }, "round \(round): \(failures)")
                    #expect(loop.enterCount - enters == 1, "round \(round): \(loop.enterCount - enters) calls into the kernel")
                    #expect(loop.submittedEntryCount - submitted == UInt64(remotes.count))
                }
                // A second message to a port, and one longer than a packet, go after the
                // batch, each port's in its order.
                let failures = RemoteMessagePort.sendWithoutWaiting([
                    (remotes[0], 3, [3, 0]), (remotes[1], 3, large), (remotes[0], 4, [4, 0]), (remotes[2], 3, [3, 2]),
                    (remotes[3], 3, [3, 3]), (remotes[1], 4, [4, 1]),
                ])
                #expect(failures.allSatisfy { $0 == nil }, "\(failures)")
                for remote in remotes { try remote.send(msgid: 9, data: []) }
            }
        } catch {
            for port in ports { port.finish() }
            throw error
        }
        for port in ports { port.finish() }
        for (index, port) in ports.enumerated() {
            let messages = port.messages
            var expected: [[UInt8]] = (0..<3).map { [UInt8($0), UInt8(index)] }
            switch index {
            case 0: expected += [[3, 0], [4, 0]]
            case 1: expected += [large, [4, 1]]
            default: expected += [[3, UInt8(index)]]
            }
            expected.append([])
            #expect(messages.map(\.data) == expected, "port \(index)")
            #expect(messages.map(\.sequence) == Array(1...UInt64(expected.count)), "port \(index)")
            #expect(messages.allSatisfy { $0.kind == .message })
        }
    }

    /// The batch holds every connection's sending lock at once, taken in a loop (no stack
    /// frame a lock, so no chunks of 64 connections): a batch to more ports than that is
    /// still one call into the kernel, each port getting its message whole.
    @Test("A batch to 80 ports of other processes is one call into the kernel; each port gets its message")
    func batchBeyondSixtyFourPorts() throws {
        let ports = try (0..<80).map { try ReadingPort("batchwide\($0)", last: 1) }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remotes = try ports.map { try RemoteMessagePort(name: $0.name) }
                let enters = loop.enterCount
                let submitted = loop.submittedEntryCount
                let failures = RemoteMessagePort.sendWithoutWaiting(
                    remotes.enumerated().map { index, remote in (remote, 1, [UInt8(index)]) })
                #expect(failures.allSatisfy { $0 == nil }, "\(failures)")
                #expect(loop.enterCount - enters == 1, "\(loop.enterCount - enters) calls into the kernel")
                #expect(loop.submittedEntryCount - submitted == UInt64(remotes.count))
            }
        } catch {
            for port in ports { port.finish() }
            throw error
        }
        for (index, port) in ports.enumerated() {
            #expect(waitUntil { port.messages.count == 1 }, "port \(index)")
            port.finish()
            #expect(port.messages.map(\.data) == [[UInt8(index)]], "port \(index)")
            #expect(port.messages.map(\.sequence) == [1], "port \(index)")
        }
    }

    /// Ports of this process and of other processes in one batch, messages in two parts
    /// (a lead of their own, a body shared: one under the size copied whole, one over it,
    /// gathered by `SENDMSG`): each port gets each message as its lead then its body, its
    /// messages in the order given (a second one to a port of another process goes after
    /// the batch, through the single send), each error at its message's place (a message
    /// over a port of this process's limit fails alone).
    @Test(
        "A batch to ports of this process and of others, messages as a lead and a shared body: each port gets its messages whole and in order, each error at its place"
    )
    func batchMixesPortsOfThisProcess() throws {
        let ports = try (0..<3).map { try ReadingPort("batchmixed\($0)", last: 9) }
        let small = (0..<10).map { UInt8($0) }
        let large = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let localName = NamedPortTests.uniqueName("batchlocal")
        let tinyName = NamedPortTests.uniqueName("batchtiny")
        let received = ThreadLock<[(msgid: Int32, data: [UInt8])]>([])
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let local = try LocalMessagePort(name: localName, loop: loop) { msgid, data in
                    received.withLock { $0.append((msgid, data)) }
                    return nil
                }
                let tiny = try LocalMessagePort(name: tinyName, loop: loop, maximumMessageSize: 4) { _, _ in nil }
                defer {
                    local.invalidate()
                    tiny.invalidate()
                }
                loop.add(local.source, to: .default)
                let remotes = try ports.map { try RemoteMessagePort(name: $0.name) }
                let toLocal = try RemoteMessagePort(name: localName)
                let toTiny = try RemoteMessagePort(name: tinyName)
                let failures = RemoteMessagePort.sendWithoutWaiting([
                    (remotes[0], 1, [0], large), (toLocal, 1, [1], small), (remotes[1], 1, [2], large),
                    (toTiny, 1, [], small), (remotes[2], 1, [3], small), (toLocal, 2, [4], large),
                    (remotes[0], 2, [5], small), (remotes[1], 2, [], large),
                ])
                #expect(failures == [nil, nil, nil, .tooLarge(size: small.count, limit: 4), nil, nil, nil, nil])
                #expect(runUntil(loop) { received.withLock { $0.count } == 2 })
                for remote in remotes { try remote.send(msgid: 9, data: []) }
            }
        } catch {
            for port in ports { port.finish() }
            throw error
        }
        let local = received.withLock { $0 }
        #expect(local.map(\.msgid) == [1, 2])
        #expect(local.map(\.data) == [[1] + small, [4] + large])
        let expected: [[[UInt8]]] = [[[0] + large, [5] + small, []], [[2] + large, large, []], [[3] + small, []]]
        for (index, port) in ports.enumerated() {
            port.finish()
            #expect(port.messages.map(\.data) == expected[index], "port \(index)")
            #expect(port.messages.map(\.sequence) == Array(1...UInt64(expected[index].count)), "port \(index)")
        }
    }

    /// The slow-client bound of the server's fan-out: in a batch, a port without room fails
    /// alone, at once, with `sendTimeout`; the other ports get theirs in the same call.
    @Test("In a batch, a port of another process without room fails alone with sendTimeout; the others get their messages")
    func fullPortFailsAlone() throws {
        let fast = try (0..<2).map { try ReadingPort("batchfast\($0)", last: 9) }
        let slowName = NamedPortTests.uniqueName("batchslow")
        defer { for port in fast { port.finish() } }
        try RawPortServer.neverReading(name: slowName) {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let slow = try RemoteMessagePort(name: slowName)
                let remotes = try fast.map { try RemoteMessagePort(name: $0.name) }
                // Filled up to the kernel's limit by single sends.
                var filled = false
                for _ in 0..<100_000 {
                    do throws(MessagePortError) {
                        try slow.send(msgid: 1, data: [UInt8](repeating: 1, count: 1000), timeout: .zero)
                    } catch {
                        #expect(error == .sendTimeout(slowName))
                        filled = true
                        break
                    }
                }
                #expect(filled, "the kernel took every send")
                for round in 0..<3 {
                    let enters = loop.enterCount
                    let failures = RemoteMessagePort.sendWithoutWaiting(
                        [(remotes[0], 1, [UInt8(round)]), (slow, 1, [UInt8(round)]), (remotes[1], 1, [UInt8(round)])])
                    #expect(failures == [nil, .sendTimeout(slowName), nil])
                    #expect(loop.enterCount - enters == 1)
                }
                for remote in remotes { try remote.send(msgid: 9, data: []) }
            }
        }
        for port in fast {
            port.finish()
            #expect(port.messages.map(\.data) == [[0], [1], [2], []])
        }
    }

    /// A port whose process closed the connection fails its message with the port gone (and
    /// calls its invalidation callback), as a single send does; the others are sent.
    @Test("In a batch, a port of another process that closed its connection fails as gone; the others get their messages")
    func closedPortFailsAlone() throws {
        let open = try (0..<2).map { try ReadingPort("batchopen\($0)", last: 9) }
        let closedName = NamedPortTests.uniqueName("batchclosed")
        let closer = try RawPortServer(name: closedName) { _ in }
        defer { for port in open { port.finish() } }
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            try loop.prepare()
            let closed = try RemoteMessagePort(name: closedName)
            let invalidated = Atomic<Bool>(false)
            closed.setInvalidationCallback { _ in invalidated.store(true, ordering: .relaxed) }
            let remotes = try open.map { try RemoteMessagePort(name: $0.name) }
            closer.finish()
            let failures = RemoteMessagePort.sendWithoutWaiting(
                [(remotes[0], 1, [1]), (closed, 1, [1]), (remotes[1], 1, [1])])
            #expect(failures[0] == nil && failures[2] == nil)
            #expect(
                failures[1] == .invalidated(closedName) || failures[1] == .becameInvalid(closedName),
                "\(failures[1].map { "\($0)" } ?? "sent")")
            // (Called here, or on the port thread if it saw the end first.)
            #expect(waitUntil { invalidated.load(ordering: .relaxed) })
            #expect(!closed.isValid)
            for remote in remotes { try remote.send(msgid: 9, data: []) }
        }
        for port in open {
            port.finish()
            #expect(port.messages.map(\.data) == [[1], []])
        }
    }

    /// A batch whose submission the ring refuses fails for every port and leaves nothing:
    /// the entries become no-ops, so the packets, gone once the call returns, are never sent
    /// later. One taken by the kernel before its call failed waits for its completions and
    /// succeeds. The next batch on the same ring goes through.
    @Test(
        "A batch whose submission the kernel refuses fails for every port and is never sent later; one taken before its call failed completes; the next goes through"
    )
    func refusedBatchLeavesNothing() throws {
        let ports = try (0..<3).map { try ReadingPort("batchrefused\($0)", last: 4) }
        do {
            try onFreshLoopThreadThrowing {
                let loop = RingRunLoop.current
                try loop.prepare()
                let remotes = try ports.map { try RemoteMessagePort(name: $0.name) }
                guard let core = loop.waitCore() else {
                    Issue.record("no ring")
                    return
                }
                func batch(_ msgid: Int32) -> [MessagePortError?] {
                    RemoteMessagePort.sendWithoutWaiting(remotes.map { ($0, msgid, [UInt8(msgid)]) })
                }
                let faults = RingFaults()
                core.ring.faults = faults
                faults.fail(.submit, with: EIO)
                let refused = batch(1)
                #expect(faults.injectedCount == 1)
                #expect(refused.allSatisfy { if case .transportError? = $0 { true } else { false } }, "\(refused)")
                faults.fail(.submitAfterTaking, with: EIO)
                #expect(batch(2).allSatisfy { $0 == nil })
                #expect(faults.injectedCount == 2)
                core.ring.faults = nil
                // A pass of the loop submits and harvests whatever is left queued.
                loop.run(mode: .default, for: .milliseconds(10), returnAfterSourceHandled: false)
                #expect(batch(3).allSatisfy { $0 == nil })
                #expect(batch(4).allSatisfy { $0 == nil })
            }
        } catch {
            for port in ports { port.finish() }
            throw error
        }
        for port in ports {
            port.finish()
            #expect(port.messages.map(\.msgid) == [2, 3, 4])
            #expect(port.messages.map(\.data) == [[2], [3], [4]])
        }
    }

    /// The wait core's batch on its own, with no-ops: when the submission queue has no
    /// room for an entry mid-batch, those before it have been handed to the kernel (the
    /// ring submits a full queue) and complete; that one and the rest fail with the ring's
    /// error, and nothing of theirs is left queued.
    @Test("A batch the submission queue refuses midway: the entries handed over complete, the rest fail and leave nothing queued")
    func batchRefusedMidway() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            try loop.prepare()
            guard let core = loop.waitCore() else {
                Issue.record("no ring")
                return
            }
            let faults = RingFaults()
            core.ring.faults = faults
            let results = core.performAllAtOnce(4, until: .now.advanced(by: .seconds(5))) { index, sqe in
                io_uring_prep_nop(sqe)
                // The third entry finds the queue full, and full again once it is submitted.
                if index == 1 { faults.fail(.getSubmission, with: EBUSY, count: 2) }
            }
            core.ring.faults = nil
            #expect(results.count == 4)
            #expect(results[0] == .success(0) && results[1] == .success(0))
            #expect(results[2...].allSatisfy { if case .failure = $0 { true } else { false } }, "\(results)")
            #expect(!core.ring.hasQueuedSubmissions)
            // The next batch goes through, in one call into the kernel.
            let enters = loop.enterCount
            let next = core.performAllAtOnce(3, until: .now.advanced(by: .seconds(5))) { _, sqe in io_uring_prep_nop(sqe) }
            #expect(next == [.success(0), .success(0), .success(0)])
            #expect(loop.enterCount - enters == 1)
        }
    }
}

extension PortOnTheRingTests {
    /// A send that finds the connection closed reads why once it has let go of the
    /// connection's sending lock: reading the end runs the invalidation callback, and a
    /// callback that sends to the same port (to say goodbye, say) must get its error, not
    /// wait forever for the lock its own thread holds. The process's port thread, which
    /// would otherwise notice the end first and run the callback itself, is held up, so
    /// the send is what finds it.
    @Test("A send that finds the port gone runs the invalidation callback with no lock held: the callback may send to the same port")
    func invalidationCallbackMaySend() throws {
        let name = NamedPortTests.uniqueName("sendgone")
        let hello = PortWire.packet(PortWire.Header(msgid: PortWire.version, kind: .hello, sequence: 0, total: .max))
        // Says hello, reads one message, closes.
        let server = try RawPortServer(name: name) { connection in
            RawPortServer.send(connection, hello)
            var buffer = [UInt8](repeating: 0, count: PortWire.packetSize)
            var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 20_000) == 1 else { return }
            _ = recv(connection, &buffer, buffer.count, 0)
        }
        defer { server.finish() }
        let holdPortThread = DispatchSemaphore(value: 0)
        let portThreadHeld = Atomic<Bool>(false)
        PortClientThread.loop.perform(inModes: [.default]) {
            portThreadHeld.store(true, ordering: .releasing)
            holdPortThread.wait()
        }
        PortClientThread.loop.wakeUp()
        defer { holdPortThread.signal() }
        let held = MonotonicInstant.now + .seconds(10)
        while !portThreadHeld.load(ordering: .acquiring), MonotonicInstant.now < held { usleep(1000) }
        let isHeld = portThreadHeld.load(ordering: .acquiring)
        try #require(isHeld, "the port thread did not take the block")

        let returned = Atomic<Bool>(false)
        let callbackSend = ThreadLock<String?>(nil)
        let lastSend = ThreadLock<String?>(nil)
        let sender = PosixThread.start(name: "sendgone") {
            defer { returned.store(true, ordering: .releasing) }
            guard let remote = try? RemoteMessagePort(name: name) else { return }
            remote.setInvalidationCallback { port in
                do throws(MessagePortError) {
                    try port.send(msgid: 99, data: [1], timeout: .zero)
                    callbackSend.withLock { $0 = "sent" }
                } catch {
                    callbackSend.withLock { $0 = "\(error)" }
                }
            }
            // The first message goes; the server reads it and closes; a later send finds
            // the connection closed (bounded: a send before the close still goes).
            let limit = MonotonicInstant.now + .seconds(10)
            var msgid: Int32 = 1
            while MonotonicInstant.now < limit {
                do throws(MessagePortError) {
                    try remote.send(msgid: msgid, data: [2], timeout: .seconds(1))
                } catch {
                    lastSend.withLock { $0 = "\(error)" }
                    return
                }
                msgid += 1
                usleep(1000)
            }
        }
        let limit = MonotonicInstant.now + .seconds(20)
        while !returned.load(ordering: .acquiring), MonotonicInstant.now < limit { usleep(1000) }
        let didReturn = returned.load(ordering: .acquiring)
        #expect(
            didReturn, "the send that found the port gone never returned (its callback's send waits for the lock)"
        )
        guard didReturn else { return }  // the thread is stuck: leave it
        sender.join()
        #expect(lastSend.withLock { $0 } != nil, "no send found the port gone")
        #expect(
            callbackSend.withLock { $0 }?.contains("invalid") == true,
            "the callback's own send: \(callbackSend.withLock { $0 } ?? "not run")")
    }
}

extension PortOnTheRingTests {
    /// A send waiting for room runs its loop in a private mode that also holds the
    /// thread's kept readers of other connections (those of its blocking requests); one
    /// of them may find its port gone meanwhile, while the send holds its own connection's
    /// sending lock. The invalidation callback then runs on the process's port thread, not
    /// there: a callback that sends to the port being waited on gets its turn when the wait
    /// ends, rather than waiting forever for a lock its own thread holds.
    @Test(
        "A port found gone while a send waits for room runs its invalidation callback elsewhere: the callback may send to the port being waited on"
    )
    func invalidationDuringWaitForRoom() throws {
        let fullName = NamedPortTests.uniqueName("roomfull")
        let goneName = NamedPortTests.uniqueName("roomgone")
        let release = Atomic<Bool>(false)
        let releaseGone = Atomic<Bool>(false)
        // Never reads: its connection fills.
        let full = try RawPortServer(name: fullName) { _ in
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        // Never answers; closes its connection when let go.
        let gone = try RawPortServer(name: goneName) { _ in
            while !releaseGone.load(ordering: .acquiring), !release.load(ordering: .acquiring) { usleep(1000) }
        }
        defer {
            release.store(true, ordering: .releasing)
            full.finish()
            gone.finish()
        }
        let returned = Atomic<Bool>(false)
        let callbackRan = Atomic<Bool>(false)
        let waited = ThreadLock<String?>(nil)
        let sender = PosixThread.start(name: "roomwait") {
            defer { returned.store(true, ordering: .releasing) }
            do {
                try RingRunLoop.current.prepare()
                let toFull = try RemoteMessagePort(name: fullName)
                let toGone = try RemoteMessagePort(name: goneName)
                // A blocking request, unanswered: the thread keeps a reader of its connection.
                _ = try? toGone.sendRequest(msgid: 1, data: [1], replyTimeout: .milliseconds(50))
                toGone.setInvalidationCallback { _ in
                    try? toFull.send(msgid: 7, data: [7], timeout: .zero)
                    callbackRan.store(true, ordering: .releasing)
                }
                var filled = false
                for _ in 0..<100_000 {
                    do throws(MessagePortError) {
                        try toFull.send(msgid: 2, data: [UInt8](repeating: 2, count: 1000), timeout: .zero)
                    } catch {
                        filled = true
                        break
                    }
                }
                guard filled else { return }
                // The other port goes while this send waits for room.
                let closer = PosixThread.start(name: "roomgone") {
                    usleep(100_000)
                    releaseGone.store(true, ordering: .releasing)
                }
                do throws(MessagePortError) {
                    try toFull.send(msgid: 3, data: [3], timeout: .seconds(1))
                    waited.withLock { $0 = "sent" }
                } catch {
                    if case .sendTimeout = error { waited.withLock { $0 = "sendTimeout" } } else { waited.withLock { $0 = "\(error)" } }
                }
                closer.join()
            } catch {
                waited.withLock { $0 = "setup failed: \(error)" }
            }
        }
        let limit = MonotonicInstant.now + .seconds(20)
        while !(returned.load(ordering: .acquiring) && callbackRan.load(ordering: .acquiring)), MonotonicInstant.now < limit {
            usleep(1000)
        }
        let didReturn = returned.load(ordering: .acquiring)
        #expect(didReturn, "the send waiting for room never returned (the callback waits for the lock its thread holds)")
        guard didReturn else { return }  // the thread is stuck: leave it
        sender.join()
        // The port never reads: the send waits its whole second for room.
        #expect(waited.withLock { $0 } == "sendTimeout", "the send waiting for room: \(waited.withLock { $0 } ?? "nil")")
        let ran = callbackRan.load(ordering: .acquiring)
        #expect(ran, "the invalidation callback never ran")
    }
}

extension PortOnTheRingTests {
    /// `invalidationDuringWaitForRoom()` on the port thread itself, where invalidation
    /// callbacks run: a callback there that waits for room must not have another port's
    /// callback run inline in its wait, with its connection's sending lock held (the
    /// callback is queued to the thread's default mode, which the wait does not run).
    @Test("On the port thread too, a port found gone while a send waits for room runs its callback after the wait")
    func invalidationDuringWaitForRoomOnThePortThread() throws {
        let fullName = NamedPortTests.uniqueName("ptfull")
        let goneName = NamedPortTests.uniqueName("ptgone")
        let release = Atomic<Bool>(false)
        let releaseGone = Atomic<Bool>(false)
        let full = try RawPortServer(name: fullName) { _ in
            while !release.load(ordering: .acquiring) { usleep(1000) }
        }
        let gone = try RawPortServer(name: goneName) { _ in
            while !releaseGone.load(ordering: .acquiring), !release.load(ordering: .acquiring) { usleep(1000) }
        }
        defer {
            release.store(true, ordering: .releasing)
            full.finish()
            gone.finish()
        }
        let returned = Atomic<Bool>(false)
        let callbackRan = Atomic<Bool>(false)
        let waited = ThreadLock<String?>(nil)
        PortClientThread.loop.perform(inModes: [.default]) {
            defer { returned.store(true, ordering: .releasing) }
            do {
                let toFull = try RemoteMessagePort(name: fullName)
                let toGone = try RemoteMessagePort(name: goneName)
                _ = try? toGone.sendRequest(msgid: 1, data: [1], replyTimeout: .milliseconds(50))
                toGone.setInvalidationCallback { _ in
                    try? toFull.send(msgid: 7, data: [7], timeout: .zero)
                    callbackRan.store(true, ordering: .releasing)
                }
                var filled = false
                for _ in 0..<100_000 {
                    do throws(MessagePortError) {
                        try toFull.send(msgid: 2, data: [UInt8](repeating: 2, count: 1000), timeout: .zero)
                    } catch {
                        filled = true
                        break
                    }
                }
                guard filled else { return }
                let closer = PosixThread.start(name: "ptgone") {
                    usleep(100_000)
                    releaseGone.store(true, ordering: .releasing)
                }
                do throws(MessagePortError) {
                    try toFull.send(msgid: 3, data: [3], timeout: .seconds(1))
                    waited.withLock { $0 = "sent" }
                } catch {
                    if case .sendTimeout = error { waited.withLock { $0 = "sendTimeout" } } else { waited.withLock { $0 = "\(error)" } }
                }
                closer.join()
            } catch {
                waited.withLock { $0 = "setup failed: \(error)" }
            }
        }
        PortClientThread.loop.wakeUp()
        let limit = MonotonicInstant.now + .seconds(15)
        while !(returned.load(ordering: .acquiring) && callbackRan.load(ordering: .acquiring)), MonotonicInstant.now < limit {
            usleep(1000)
        }
        let didReturn = returned.load(ordering: .acquiring)
        #expect(didReturn, "the send waiting for room on the port thread never returned")
        guard didReturn else { return }
        #expect(waited.withLock { $0 } == "sendTimeout", "the send waiting for room: \(waited.withLock { $0 } ?? "nil")")
        let ran = callbackRan.load(ordering: .acquiring)
        #expect(ran, "the invalidation callback never ran")
    }
}
