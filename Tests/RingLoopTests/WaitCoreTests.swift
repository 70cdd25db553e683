import CLibURing
import Foundation
import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

@Suite("Wait core")
struct WaitCoreTests {
    @Test("The ring reports the flags the kernel accepted")
    func setupFlags() throws {
        let core = try WaitCore()
        #expect(core.ring.submissionEntries == 256)
        #expect(core.ring.completionEntries >= 1024)
        #expect(core.ring.debugDescription.contains("setup \(core.ring.setupFlags)"))
        if core.ring.setupFlags.contains(.deferTaskrun) {
            #expect(core.ring.setupFlags.contains(.singleIssuer))
        }
        // IORING_ENTER_ABS_TIMER arrived in 6.12: the probe must find it exactly there.
        #expect(core.ring.waitTakesAbsoluteDeadline == !Self.kernelVersion().lexicographicallyPrecedes([6, 12]))
    }

    /// The running kernel's major and minor version, from uname.
    static func kernelVersion() -> [Int] {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return release.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
    }

    @Test("Another thread wakes a sleeping loop with one system call", arguments: WakeUpMechanism.allCases)
    func wakeUpFromAnotherThread(mechanism: WakeUpMechanism) throws {
        let core = try WaitCore(wakeUp: mechanism)
        // Absorb the probe kick MSG_RING sends to itself at setup.
        try core.poll()
        let signal = core.signal
        let kicksBefore = signal.kickCount
        let waker = PosixThread.start {
            // Wake only once the loop is really asleep, so the kick is needed.
            if waitUntil({ signal.isSleeping }) { signal.wakeUp() }
        }
        let deadline = MonotonicInstant.now + .seconds(10)
        let timedOut = try core.wait(until: deadline)
        waker.join()
        #expect(!timedOut)
        #expect(MonotonicInstant.now < deadline)
        #expect(signal.kickCount == kicksBefore + 1)
        #expect(core.drainEvents().isEmpty, "a wake-up delivers no port event")
    }

    @Test("Wake-ups while the loop is awake cost no system call and are not lost")
    func wakeUpWhileAwake() throws {
        let core = try WaitCore()
        try core.poll()
        let kicksBefore = core.signal.kickCount
        for _ in 0..<1000 { core.wakeUp() }
        #expect(core.signal.kickCount == kicksBefore)
        let deadline = MonotonicInstant.now + .seconds(10)
        let timedOut = try core.wait(until: deadline)
        #expect(!timedOut)
        #expect(MonotonicInstant.now < deadline, "the pending wake-up kept the loop from sleeping")
        #expect(core.sleepCount == 0)
    }

    @Test("A deadline wait returns at or after its deadline", arguments: [1, 5, 20])
    func deadlineWait(milliseconds: Int) throws {
        let core = try WaitCore()
        try core.poll()
        let deadline = MonotonicInstant.now + .milliseconds(milliseconds)
        let timedOut = try core.wait(until: deadline)
        let woke = MonotonicInstant.now
        #expect(timedOut)
        #expect(woke >= deadline, "woke \(deadline - woke) early")
        // "Promptly": within a second even on a loaded machine (a missed deadline would
        // be off by whole seconds or forever).
        #expect(woke - deadline < .seconds(1))
    }

    @Test("A deadline in the past does not sleep")
    func pastDeadline() throws {
        let core = try WaitCore()
        try core.poll()
        let timedOut = try core.wait(until: MonotonicInstant.now + .milliseconds(-5))
        #expect(timedOut)
        #expect(core.sleepCount == 1)
    }

    @Test("Readiness of a pipe is routed to its port")
    func pipeReadiness() throws {
        let core = try WaitCore()
        let pipe = TestPipe()
        let other = TestPipe()
        let port = try core.addReadinessPort(fd: pipe.readEnd)
        let otherPort = try core.addReadinessPort(fd: other.readEnd)
        pipe.writeByte()
        let events = try core.waitForEvents(1)
        #expect(events == [.readiness(port, events: Int16(POLLIN))])
        #expect(!events.contains { $0.port == otherPort })
        try core.removePort(port)
        try core.removePort(otherPort)
    }

    @Test("Readiness of an eventfd, several times over one multishot poll")
    func eventFDReadiness() throws {
        let core = try WaitCore()
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        defer { close(fd) }
        let port = try core.addReadinessPort(fd: fd)
        for round in 1...3 {
            var one: UInt64 = 1
            #expect(write(fd, &one, 8) == 8)
            let events = try core.waitForEvents(1)
            #expect(events == [.readiness(port, events: Int16(POLLIN))], "round \(round)")
            var counter: UInt64 = 0
            #expect(read(fd, &counter, 8) == 8)
        }
        #expect(core.rearmCount == 0, "one multishot poll served every round")
        try core.removePort(port)
    }

    @Test("A removed port receives nothing, and its slot's next owner gets no stale event")
    func removal() throws {
        let core = try WaitCore()
        let first = TestPipe()
        let port = try core.addReadinessPort(fd: first.readEnd)
        first.writeByte()
        try core.removePort(port)
        let second = TestPipe()
        // Wait for the kernel to confirm the cancellation so the slot is reusable.
        #expect(waitUntil { (try? core.poll()) != nil && core.portCount == 0 })
        let successor = try core.addReadinessPort(fd: second.readEnd)
        #expect(successor.slot == port.slot)
        #expect(successor.generation != port.generation)
        second.writeByte()
        let events = try core.waitForEvents(1)
        #expect(events == [.readiness(successor, events: Int16(POLLIN))])
        try core.removePort(successor)
    }

    @Test("Watching a descriptor that is not open reports EBADF, no crash")
    func badDescriptor() throws {
        let core = try WaitCore()
        let port = try core.addReadinessPort(fd: 9999)
        let events = try core.waitForEvents(1)
        #expect(events == [.failure(port, RingError(operation: "poll", errno: EBADF))])
        try core.removePort(port)
        #expect(core.portCount == 0)
    }

    @Test("A multishot poll the kernel ends is armed again")
    func multishotRearm() throws {
        // A tiny completion queue (8 entries) and 64 ports made ready at once: the
        // kernel cannot post every completion, and it ends the multishot polls whose
        // completions overflowed.
        let core = try WaitCore(entries: 2)
        let pipes = (0..<64).map { _ in TestPipe() }
        let ports = try pipes.map { try core.addReadinessPort(fd: $0.readEnd) }
        try core.poll()
        for pipe in pipes { pipe.writeByte() }
        let first = try core.waitForEvents(64)
        #expect(Set(first.compactMap(\.port)) == Set(ports), "no readiness lost to the overflow")
        #expect(core.rearmCount > 0, "the kernel never ended a multishot poll")
        for pipe in pipes { pipe.drain() }
        try core.poll()
        _ = core.drainEvents()
        // Every port is still watched after the re-arm.
        for pipe in pipes { pipe.writeByte() }
        let second = try core.waitForEvents(64)
        #expect(Set(second.compactMap(\.port)) == Set(ports))
        for port in ports { try core.removePort(port) }
    }

    @Test("More submissions in one iteration than the ring has entries")
    func submissionQueueFull() throws {
        let core = try WaitCore(entries: 8)
        let pipes = (0..<100).map { _ in TestPipe() }
        let ports = try pipes.map { try core.addReadinessPort(fd: $0.readEnd) }
        for pipe in pipes { pipe.writeByte() }
        // Every port reports. (A port may report twice: 100 completions overflow the
        // 32-entry completion queue, and a re-armed poll reports the pipe again.)
        var seen = Set<PortID>()
        let limit = MonotonicInstant.now + .seconds(10)
        while seen.count < ports.count, MonotonicInstant.now < limit {
            try core.wait(until: limit)
            seen.formUnion(core.drainEvents().compactMap(\.port))
        }
        #expect(seen == Set(ports))
        for port in ports { try core.removePort(port) }
    }

    @Test("100,000 messages between two loops on two threads arrive in order, none lost")
    func messagesBetweenLoops() throws {
        let total = 100_000
        let core = try WaitCore()
        let port = core.makeDoorbell()
        let sender = port
        let senderLoop = PosixThread.start(name: "sender-loop") {
            // The sending side is a loop of its own, as in the two-loop pattern.
            guard let own = try? WaitCore() else { return }
            for value in 0..<total {
                precondition(sender.send(UInt64(value), extra: UInt32(value % 7)))
                if value % 1000 == 0 { try? own.poll() }
            }
        }
        var received = 0
        var inOrder = true
        let limit = MonotonicInstant.now + .seconds(60)
        while received < total, MonotonicInstant.now < limit {
            try core.wait(until: limit)
            while let event = core.nextEvent() {
                guard case .message(let target, let message) = event, target === port else { continue }
                if message.payload != UInt64(received) || message.extra != UInt32(received % 7) { inOrder = false }
                received += 1
            }
        }
        senderLoop.join()
        #expect(received == total)
        #expect(inOrder)
        port.close()
        #expect(!sender.send(1), "a closed port refuses messages")
    }

    /// In a process of its own (an exit test): the other tests of this process open and
    /// close descriptors all the time, so a count taken beside them proves nothing. The
    /// child compares the descriptors of the kinds a wait core makes (rings, eventfds,
    /// pipes) after a warm-up, so what the testing library or a first use opens for good
    /// does not count; on a difference it prints both lists.
    @Test("Teardown leaves the process's descriptors as they were, for every wake-up mechanism")
    func teardownClosesEverything() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            func cycle(_ mechanism: WakeUpMechanism) throws -> Bool {
                let pipes = (0..<4).map { _ in TestPipe() }
                var sender: LoopDoorbell?
                do {
                    let core = try WaitCore(wakeUp: mechanism)
                    for pipe in pipes { _ = try core.addReadinessPort(fd: pipe.readEnd) }
                    pipes[0].writeByte()
                    let messages = core.makeDoorbell()
                    messages.send(42)
                    sender = messages
                    try core.poll()
                    // The core goes away with polls still armed and a sender still held.
                }
                // A sender outliving its loop is refused.
                return sender?.send(1) == false
            }
            for mechanism in WakeUpMechanism.allCases { _ = try cycle(mechanism) }  // warm-up
            for mechanism in WakeUpMechanism.allCases {
                let before = DescriptorAudit.descriptorKinds()
                guard try cycle(mechanism) else { exit(2) }
                let after = DescriptorAudit.descriptorKinds()
                if after != before {
                    FileHandle.standardError.write(Data("\(mechanism): before \(before), after \(after)\n".utf8))
                    exit(3)
                }
            }
            exit(0)
        }
        if let result, result.exitStatus != .exitCode(0) {
            Issue.record("the child said: \(String(decoding: result.standardErrorContent, as: UTF8.self))")
        }
    }
}
