import Glibc
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoop

/// The loop's ring with a fault plan, on a fresh loop thread.
func withFaultyLoop(_ body: @escaping @Sendable (RingRunLoop, RingFaults) -> Void) {
    onFreshLoopThread {
        let loop = RingRunLoop.current
        guard let core = loop.waitCore() else {
            Issue.record("no ring")
            return
        }
        let faults = RingFaults()
        core.ring.faults = faults
        body(loop, faults)
        core.ring.faults = nil
    }
}

@Suite("Failures of the ring's system calls surface, and transient ones are absorbed")
struct FaultInjectionTests {
    @Test("EINTR on the wait is a spurious wake: timers still fire on time, nothing is reported")
    func interruptedWait() {
        withFaultyLoop { loop, faults in
            faults.fail(.wait, with: EINTR, count: 3)
            let fired = LoopBound(false, loop: loop)
            // Read before the timer is made: its deadline counts from its creation.
            let started = MonotonicInstant.now
            loop.add(LoopTimer(after: .milliseconds(20)) { _ in fired.value = true }, to: .default)
            let result = loop.run(mode: .default, for: .milliseconds(500), returnAfterSourceHandled: false)
            #expect(fired.value)
            #expect(result == .finished)  // the timer fired and left the mode empty
            #expect(MonotonicInstant.now - started >= .milliseconds(20))
            #expect(faults.injectedCount == 3)
            #expect(loop.lastError == nil)
        }
    }

    @Test("EAGAIN and EBUSY on the wait, EINTR on a submit: retried, a source still performs, nothing is reported")
    func transientFailures() {
        withFaultyLoop { loop, faults in
            let pipe = TestPipe()
            let performed = LoopBound(0, loop: loop)
            let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: pipe.readEnd)) { _ in
                performed.value += 1
                pipe.drain()
            }
            loop.add(source, to: .default)
            for errno in [EAGAIN, EBUSY] {
                faults.fail(.wait, with: errno)
                pipe.writeByte()
                let result = loop.run(mode: .default, for: .seconds(5), returnAfterSourceHandled: true)
                #expect(result == .handledSource, "after \(errno)")
            }
            #expect(performed.value == 2)
            // A removal hands its cancellation to the kernel at once: an EINTR there is retried.
            let other = TestPipe()
            let second = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: other.readEnd)) { _ in }
            loop.add(second, to: .default)
            loop.run(mode: .default, for: .milliseconds(5))
            faults.fail(.submit, with: EINTR)
            second.invalidate()
            #expect(faults.injectedCount == 3)
            #expect(loop.lastError == nil && source.failure == nil)
            source.invalidate()
        }
    }

    @Test("A wait that keeps failing (ENOMEM) ends the run with .failed after eight tries and says why")
    func persistentWaitFailure() {
        withFaultyLoop { loop, faults in
            faults.fail(.wait, with: ENOMEM, count: 100)
            loop.add(LoopTimer(after: .seconds(60)) { _ in }, to: .default)
            let result = loop.run(mode: .default, for: .seconds(30))
            #expect(result == .failed)
            #expect(faults.injectedCount == RingRunLoop.waitFailureLimit, "it must not spin on the error")
            #expect(loop.lastError?.errno.rawValue == ENOMEM)
            // It says why, in the log (the tests' handler keeps the line).
            #expect(!TestLog.lines(containing: "wait failed (8 in a row)").isEmpty)
            // Once the kernel answers again, the loop runs again.
            faults.fail(.wait, with: ENOMEM, count: 0)
            core(of: loop).ring.faults = nil
            #expect(loop.run(mode: .default, for: .milliseconds(10)) == .timedOut)
        }
    }

    @Test("A descriptor that cannot be watched: the source performs with POLLNVAL and carries the error")
    func armingFailure() {
        withFaultyLoop { loop, faults in
            let pipe = TestPipe()
            let reported = LoopBound<PollEvents>([], loop: loop)
            // No submission entry twice over: the poll cannot be armed.
            faults.fail(.getSubmission, with: EBUSY, count: 2)
            let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: pipe.readEnd)) { events in reported.value = events }
            loop.add(source, to: .default)
            let result = loop.run(mode: .default, for: .seconds(5), returnAfterSourceHandled: true)
            #expect(result == .handledSource)
            #expect(reported.value.contains(.invalid))
            #expect(source.failure?.errno == .resourceBusy)
            #expect(TestLog.lines(containing: "cannot watch descriptor \(pipe.readEnd)").contains { $0.level == .error })
            source.invalidate()
        }
    }

    @Test("A removal the ring cannot take now is asked again before the next wait, and the slot is freed")
    func removalRetried() {
        withFaultyLoop { loop, faults in
            let pipe = TestPipe()
            let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: pipe.readEnd)) { _ in }
            loop.add(source, to: .default)
            loop.run(mode: .default, for: .milliseconds(5))
            let core = core(of: loop)
            let ports = core.portCount
            faults.fail(.getSubmission, with: EBUSY, count: 2)
            source.invalidate()
            #expect(core.portCount == ports, "the slot waits for the kernel's confirmation")
            // The next runs ask again and the kernel confirms: the slot is free.
            loop.add(LoopTimer(after: .milliseconds(5)) { _ in }, to: .default)
            #expect(
                waitUntil {
                    loop.run(mode: .default, for: .milliseconds(5))
                    return core.portCount == ports - 1
                })
            #expect(loop.lastError == nil || loop.consecutiveWaitFailures == 0)
        }
    }

    @Test("A real completion-queue overflow (an 8-entry queue, 64 ready ports) loses no readiness")
    func completionQueueOverflow() throws {
        let core = try WaitCore(entries: 8)
        let pipes = (0..<64).map { _ in TestPipe() }
        var ids: [PortID] = []
        for pipe in pipes { ids.append(try core.addReadinessPort(fd: pipe.readEnd)) }
        try core.poll()
        for pipe in pipes { pipe.writeByte() }
        let events = try core.waitForEvents(64)
        let ready = Set(
            events.compactMap { event -> PortID? in
                if case .readiness(let id, _) = event { return id }
                return nil
            })
        #expect(ready == Set(ids), "every port reported once its pipe was written")
    }
}

/// The loop's wait core (created on first need).
func core(of loop: RingRunLoop) -> WaitCore { loop.waitCore()! }
