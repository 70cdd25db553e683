import CLibURing
import Glibc
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoop

/// Runs `body` on a fresh thread (a fresh loop) and waits for it.
func onFreshLoopThread(_ body: @escaping @Sendable () -> Void) {
    PosixThread.start(name: "test-loop", body).join()
}

@Suite("Run loop")
struct RunLoopTests {
    @Test("100,000 messages from another thread reach a loop's port source in order")
    func messagesInOrder() {
        let total = 100_000
        let received = Atomic<Int>(0)
        let outOfOrder = Atomic<Int>(0)
        let worker = LoopThread(name: "receiver") { message in
            let index = received.add(1, ordering: .relaxed).oldValue
            if message.payload != UInt64(index) || message.extra != UInt32(index & 0xFF) {
                outOfOrder.add(1, ordering: .relaxed)
            }
        }
        let senders = PosixThread.start(name: "sender") {
            for value in 0..<total {
                precondition(worker.doorbell.send(UInt64(value), extra: UInt32(value & 0xFF)))
            }
        }
        senders.join()
        #expect(waitUntil(timeout: .seconds(60)) { received.load(ordering: .relaxed) == total })
        worker.stopAndJoin()
        #expect(received.load(ordering: .relaxed) == total)
        #expect(outOfOrder.load(ordering: .relaxed) == 0)
        #expect(!worker.doorbell.send(1), "a stopped thread's doorbell refuses messages")
    }

    @Test("stopAndJoin() from a block on the thread's own loop returns, and the thread ends once the block has")
    func stopFromOwnThread() {
        let worker = LoopThread(name: "stops itself")
        let thread = Atomic<Int32>(0)
        let returned = Atomic<Bool>(false)
        worker.perform {
            thread.store(ProcessThreads.currentID, ordering: .releasing)
            worker.stopAndJoin()
            returned.store(true, ordering: .releasing)
        }
        #expect(waitUntil { returned.load(ordering: .acquiring) }, "stopAndJoin() on its own thread returned")
        let id = thread.load(ordering: .acquiring)
        #expect(id != 0 && waitUntil { !ProcessThreads.isRunning(id) }, "the thread ended")
        worker.stopAndJoin()
    }

    @Test("Blocks performed from several threads all run, FIFO per thread")
    func blocksFromManyThreads() {
        let worker = LoopThread(name: "blocks")
        let perThread = 1000
        let lastSeen = ThreadLock<[Int]>([-1, -1, -1, -1])
        let ordered = Atomic<Bool>(true)
        let count = Atomic<Int>(0)
        let threads = (0..<4).map { thread in
            PosixThread.start {
                for index in 0..<perThread {
                    worker.perform {
                        lastSeen.withLock { seen in
                            if seen[thread] != index - 1 { ordered.store(false, ordering: .relaxed) }
                            seen[thread] = index
                        }
                        count.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        for thread in threads { thread.join() }
        #expect(waitUntil { count.load(ordering: .relaxed) == 4 * perThread })
        worker.stopAndJoin()
        let inOrder = ordered.load(ordering: .relaxed)
        #expect(inOrder)
    }

    @Test("A timer added from another thread fires on the loop's thread")
    func crossThreadTimer() {
        let worker = LoopThread(name: "timers")
        let firedOnLoop = Atomic<Int>(0)
        let loop = worker.loop
        let timer = LoopTimer(after: .milliseconds(5)) { _ in
            firedOnLoop.store(loop.isOnLoopThread ? 1 : 2, ordering: .relaxed)
        }
        loop.add(timer, to: .default)
        #expect(waitUntil { firedOnLoop.load(ordering: .relaxed) != 0 })
        #expect(firedOnLoop.load(ordering: .relaxed) == 1)
        #expect(!timer.isValid, "a one-shot timer is invalid after firing")
        worker.stopAndJoin()
    }

    @Test("A readiness source performs when its pipe is written, and not after invalidation")
    func readinessSource() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let pipe = TestPipe()
            let reports = ThreadLock<[PollEvents]>([])
            let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: pipe.readEnd)) { events in
                reports.withLock { $0.append(events) }
                pipe.drain()
            }
            loop.add(source, to: .default)
            pipe.writeByte()
            let first = loop.run(mode: .default, for: .seconds(10), returnAfterSourceHandled: true)
            #expect(first == .handledSource)
            #expect(reports.withLock { $0 } == [.readable])
            source.invalidate()
            pipe.writeByte()
            #expect(loop.run(mode: .default, for: .milliseconds(20)) == .finished)
            #expect(reports.withLock { $0.count } == 1)
        }
    }

    @Test("Messages for a source outside the running mode wait for its mode")
    func messagesWaitForTheirMode() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let port = loop.makeDoorbell()
            let got = ThreadLock<[UInt64]>([])
            loop.add(LoopPortSource(doorbell: port) { message in got.withLock { $0.append(message.payload) } }, to: "other")
            loop.add(LoopSource {}, to: .default)
            port.send(7)
            port.send(8)
            #expect(loop.run(mode: .default, for: .milliseconds(20)) == .timedOut)
            #expect(got.withLock { $0 }.isEmpty)
            loop.run(mode: "other", for: .milliseconds(20))
            #expect(got.withLock { $0 } == [7, 8])
        }
    }

    @Test("Callouts may invalidate themselves and others, and add items")
    func calloutSafety() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let trace = ThreadLock<[String]>([])
            let victim = LoopObserver(activities: .beforeTimers) { _, _ in trace.withLock { $0.append("victim") } }
            let killer = LoopObserver(activities: .beforeTimers, order: -1) { me, _ in
                trace.withLock { $0.append("killer") }
                victim.invalidate()
                me.invalidate()
            }
            loop.add(killer, to: .default)
            loop.add(victim, to: .default)
            let first = LoopTimer(after: .milliseconds(1)) { me in
                trace.withLock { $0.append("first") }
                me.invalidate()
                loop.add(LoopTimer(after: .milliseconds(1)) { _ in trace.withLock { $0.append("second") } }, to: .default)
            }
            loop.add(first, to: .default)
            #expect(loop.run(mode: .default, for: .seconds(10)) == .finished)
            #expect(trace.withLock { $0 } == ["killer", "first", "second"])
            #expect(!victim.isValid && !killer.isValid)
        }
    }

    @Test("Invalidated timers leave no garbage that grows")
    func timerGarbageIsBounded() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopSource {}, to: .default)
            for round in 0..<5 {
                let timers = (0..<10_000).map { index in
                    LoopTimer(after: .seconds(100 + round * 10_000 + index)) { _ in }
                }
                for timer in timers { loop.add(timer, to: .default) }
                for timer in timers { timer.invalidate() }
                loop.run(mode: .default, for: .zero)
            }
            let state = loop.modeState(.default)!
            #expect(state.timerCount == 0)
            #expect(state.timers.storedEntries <= 64, "heaps hold \(state.timers.storedEntries) stale entries")
        }
    }

    @Test("An idle loop with one timer 10 s away wakes at most twice in a second")
    func idleLoopSleeps() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopTimer(after: .seconds(10)) { _ in }, to: .default)
            try? loop.prepare()
            let before = loop.core!.sleepCount
            let started = MonotonicInstant.now
            #expect(loop.run(mode: .default, for: .seconds(1)) == .timedOut)
            #expect(MonotonicInstant.now - started >= .seconds(1))
            #expect(loop.core!.sleepCount - before <= 2)
        }
    }

    /// Set by the loop thread when it runs out of work; read by a sender thread.
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    @Test("A loop polling before it sleeps catches another thread's signal with no sleep and no wake-up call")
    func spinBeforeSleepingCatchesSignal() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.spinBeforeSleeping = .seconds(10)
            let performed = LoopBound(0, loop: loop)
            let source = LoopSource { performed.value += 1 }
            loop.add(source, to: .default)
            let outOfWork = Flag()
            loop.add(
                LoopObserver(activities: .beforeWaiting) { _, _ in outOfWork.value.store(true, ordering: .releasing) },
                to: .default)
            try? loop.prepare()
            let sleepsBefore = loop.core!.sleepCount
            let kicksBefore = loop.core!.signal.kickCount
            let sender = PosixThread.start {
                // The loop announced BeforeWaiting, so it is polling (for up to 10 s).
                if waitUntil({ outOfWork.value.load(ordering: .acquiring) }) {
                    source.signal()
                    loop.wakeUp()
                }
            }
            let outcome = loop.run(mode: .default, for: .seconds(30), returnAfterSourceHandled: true)
            sender.join()
            #expect(outcome == .handledSource)
            #expect(performed.value == 1)
            #expect(loop.core!.sleepCount == sleepsBefore, "the loop slept although work came while it polled")
            #expect(loop.core!.signal.kickCount == kicksBefore, "the sender made a wake-up system call")
            #expect(loop.core!.spinHits >= 1)
        }
    }

    @Test("Polling before sleeping ends at the next timer's deadline")
    func spinBeforeSleepingKeepsTimers() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.spinBeforeSleeping = .seconds(10)
            let fired = LoopBound<MonotonicInstant?>(nil, loop: loop)
            let timer = LoopTimer(after: .milliseconds(20)) { _ in fired.value = .now }
            let due = timer.nextFireDate
            loop.add(timer, to: .default)
            #expect(loop.run(mode: .default, for: .seconds(30)) == .finished)
            #expect(fired.value != nil)
            if let fired = fired.value {
                #expect(fired >= due)
                // Not held up by the 10-second window (a second leaves room for a loaded machine).
                #expect(fired - due < .seconds(1))
            }
        }
    }

    @Test("A stop while the loop is not running has no effect, as in CFRunLoop")
    func stopOutsideRun() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopSource {}, to: .default)
            loop.stop()
            #expect(loop.run(mode: .default, for: .milliseconds(10)) == .timedOut)
        }
    }

    @Test("RingRunLoop.current is per thread and stable")
    func currentPerThread() {
        let mine = ThreadLock<[ObjectIdentifier]>([])
        for _ in 0..<2 {
            onFreshLoopThread {
                let a = RingRunLoop.current
                let b = RingRunLoop.current
                #expect(a === b)
                #expect(a.isOnLoopThread)
                #expect(!a.isMain)
                mine.withLock { $0.append(ObjectIdentifier(a)) }
            }
        }
    }
}

@Suite("Loop lifetime")
struct LoopLifetimeTests {
    @Test("A thread's loop and the items still in it go away when the thread exits")
    func loopGoesAwayWithItsThread() {
        final class Weak: @unchecked Sendable {
            // @unchecked: written by the thread before it exits, read after joining it.
            weak var loop: RingRunLoop?
            weak var timer: LoopTimer?
            weak var source: LoopSource?
        }
        let refs = Weak()
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let timer = LoopTimer(after: .seconds(3600)) { _ in }
            let source = LoopSource {}
            loop.add(timer, to: .common)
            loop.add(source, to: .default)
            loop.run(mode: .default, for: .zero)
            refs.loop = loop
            refs.timer = timer
            refs.source = source
        }
        #expect(refs.loop == nil)
        #expect(refs.timer == nil)
        #expect(refs.source == nil)
    }
}
