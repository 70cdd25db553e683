import Glibc
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoop

/// An actor whose executor is a loop.
actor LoopCounter {
    let loop: RingRunLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    var count = 0
    var offLoopThread = 0

    init(loop: RingRunLoop) { self.loop = loop }

    func increment() {
        if !loop.isOnLoopThread { offLoopThread += 1 }
        count += 1
    }
}

/// Runs `body` on `loop`'s thread as a job and returns its result.
func onLoop<T: Sendable>(_ loop: RingRunLoop, _ body: @escaping @Sendable () -> T) async -> T {
    await Task(executorPreference: loop) { body() }.value
}

@LoopActor final class LoopActorState {
    var presses = 0
    func press() -> Bool {
        presses += 1
        return LoopActor.loop.isOnLoopThread
    }
}

@Suite("Swift concurrency on the loop")
struct ConcurrencyTests {
    @Test("@LoopActor code runs on the LoopActor's loop thread, and its loop callbacks can assume the isolation")
    func loopActor() async {
        await onDriverLoop { driver in
            let state = LoopActorState()
            #expect(await state.press())
            let seen = Atomic<Int>(-1)
            let source = LoopSource {
                let presses = LoopActor.assumeIsolated { state.presses }
                seen.store(presses, ordering: .releasing)
            }
            LoopActor.loop.add(source, to: .default)
            source.signal()
            LoopActor.loop.wakeUp()
            #expect(waitUntil { seen.load(ordering: .acquiring) == 1 })
            source.invalidate()
        }
    }

    @Test("An actor on a LoopThread's loop runs every call on that thread, one at a time")
    func actorOnLoop() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "actor")
            let counter = LoopCounter(loop: worker.loop)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<1000 { group.addTask { await counter.increment() } }
            }
            #expect(await counter.count == 1000)
            #expect(await counter.offLoopThread == 0)
            worker.stopAndJoin()
        }
    }

    @Test("assumeIsolated holds in a loop callback on the actor's loop thread")
    func assumeIsolatedInCallback() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "assume")
            let counter = LoopCounter(loop: worker.loop)
            await counter.increment()
            let seen = Atomic<Int>(-1)
            let source = LoopSource { seen.store(counter.assumeIsolated { $0.count }, ordering: .releasing) }
            worker.loop.add(source, to: .default)
            source.signal()
            worker.loop.wakeUp()
            #expect(waitUntil { seen.load(ordering: .acquiring) == 1 })
            #expect(worker.loop.serialExecutor.isIsolatingCurrentContext() == false)
            worker.stopAndJoin()
        }
    }

    @Test("Tasks that prefer the loop, and withTaskExecutorPreference, run on its thread")
    func taskExecutorPreference() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "prefer")
            let loop = worker.loop
            #expect(await Task(executorPreference: loop) { loop.isOnLoopThread }.value)
            let inside = await withTaskExecutorPreference(loop) { loop.isOnLoopThread }
            #expect(inside)
            worker.stopAndJoin()
        }
    }

    @Test("Within a pass, jobs run after the blocks, before version-0 sources and again after timers, highest priority first")
    func orderWithinAPass() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let trace = ThreadLock<[String]>([])
            let source = LoopSource { trace.withLock { $0.append("source") } }
            loop.add(source, to: .default)
            source.signal()
            loop.perform { trace.withLock { $0.append("block") } }
            Task(executorPreference: loop, priority: .low) { trace.withLock { $0.append("low") } }
            Task(executorPreference: loop, priority: .high) { trace.withLock { $0.append("high") } }
            Task(executorPreference: loop, priority: .medium) { trace.withLock { $0.append("medium") } }
            Task(executorPreference: loop, priority: .high) { trace.withLock { $0.append("high 2") } }
            // A due timer fires after the sources; a job it enqueues runs in the blocks
            // phase after timers and ports, in the same pass.
            let timer = LoopTimer(fireDate: .now) { _ in
                trace.withLock { $0.append("timer") }
                Task(executorPreference: loop) { trace.withLock { $0.append("job from timer") } }
            }
            loop.add(timer, to: .default)
            #expect(loop.run(mode: .default, for: .zero) == .timedOut)
            #expect(
                trace.withLock { $0 } == ["block", "high", "high 2", "medium", "low", "source", "timer", "job from timer"])
        }
    }

    @Test("Jobs wait while the loop runs in a mode outside the common modes, and keep a common-mode run alive")
    func jobsRunInCommonModesOnly() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let ran = ThreadLock(false)
            Task(executorPreference: loop) { ran.withLock { $0 = true } }
            loop.add(LoopTimer(after: .milliseconds(1)) { _ in }, to: "private")
            #expect(loop.run(mode: "private", for: .seconds(10)) == .finished)
            #expect(!ran.withLock { $0 })
            // The default mode has nothing but the job: it still runs, not `.finished` at once.
            #expect(loop.itemCount(in: .default) == 0)
            loop.run(mode: .default, for: .zero)
            #expect(ran.withLock { $0 })
        }
    }

    @Test("An executor for chosen modes runs its jobs only in those modes, and its waiting jobs do not keep the loop awake")
    func executorInModes() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            try? loop.prepare()
            let trace = ThreadLock<[String]>([])
            let tracking = loop.taskExecutor(inModes: ["tracking"])
            Task(executorPreference: tracking) { trace.withLock { $0.append("tracking job") } }
            Task(executorPreference: loop) { trace.withLock { $0.append("common job") } }
            loop.add(LoopTimer(after: .seconds(3600)) { _ in }, to: .common)
            loop.add(LoopTimer(after: .seconds(3600)) { _ in }, to: "tracking")
            let passes = loop.passCount
            let sleeps = loop.sleepCount
            #expect(loop.run(mode: .default, for: .milliseconds(50)) == .timedOut)
            #expect(trace.withLock { $0 } == ["common job"])
            // The waiting tracking job did not make the loop poll: it slept.
            #expect(loop.sleepCount > sleeps)
            #expect(loop.passCount - passes < 10)
            #expect(loop.run(mode: "tracking", for: .zero) == .timedOut)
            #expect(trace.withLock { $0 } == ["common job", "tracking job"])
        }
    }

    @Test("A nested run inside a job keeps running jobs")
    func nestedRun() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let trace = ThreadLock<[String]>([])
            Task(executorPreference: loop) {
                trace.withLock { $0.append("outer") }
                Task(executorPreference: loop) { trace.withLock { $0.append("inner") } }
                loop.run(mode: .default, for: .zero)
                trace.withLock { $0.append("outer done") }
            }
            loop.run(mode: .default, for: .zero)
            #expect(trace.withLock { $0 } == ["outer", "inner", "outer done"])
        }
    }

    @Test("A job enqueued from another thread wakes the sleeping loop")
    func jobWakesLoop() {
        let loop = ThreadLock<RingRunLoop?>(nil)
        let outcome = ThreadLock<(RingRunLoop.RunResult, UInt64)?>(nil)
        let thread = PosixThread.start(name: "sleeper") {
            let current = RingRunLoop.current
            try? current.prepare()
            current.add(LoopTimer(after: .seconds(3600)) { _ in }, to: .default)
            loop.withLock { $0 = current }
            let result = current.run(mode: .default, for: .seconds(30))
            outcome.withLock { $0 = (result, current.sleepCount) }
        }
        #expect(waitUntil { loop.withLock { $0?.isWaiting ?? false } })
        let target = loop.withLock { $0! }
        Task(executorPreference: target) { target.stop() }
        thread.join()
        let (result, sleeps) = outcome.withLock { $0! }
        #expect(result == .stopped)
        #expect(sleeps >= 1)
    }
}

@Suite("The loop clock")
struct LoopClockTests {
    @Test("A sleep on the loop clock lasts at least its duration and resumes on the loop")
    func sleepLasts() async throws {
        try await onDriverLoop { driver in
            let worker = LoopThread(name: "clock")
            let loop = worker.loop
            let (slept, onLoop) = try await Task(executorPreference: loop) {
                let start = MonotonicInstant.now
                try await loop.clock.sleep(for: .milliseconds(5))
                return (MonotonicInstant.now - start, loop.isOnLoopThread)
            }.value
            #expect(slept >= .milliseconds(5))
            #expect(onLoop)
            // Task.sleep takes the clock, with a tolerance.
            let start = MonotonicInstant.now
            try await Task.sleep(for: .milliseconds(2), tolerance: .milliseconds(1), clock: LoopClock(loop: loop))
            #expect(MonotonicInstant.now - start >= .milliseconds(2))
            worker.stopAndJoin()
        }
    }

    @Test("Cancelling a sleeping task throws CancellationError and takes its timer off the loop")
    func cancellation() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "clock")
            let loop = worker.loop
            let baseline = await onLoop(loop) { loop.itemCount(in: .default) }
            let sleeper = Task(executorPreference: driver) { try await loop.clock.sleep(for: .seconds(3600)) }
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == baseline + 1 })
            let started = MonotonicInstant.now
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
            #expect(MonotonicInstant.now - started < .seconds(10))
            #expect(await onLoop(loop) { loop.itemCount(in: .default) } == baseline)
            worker.stopAndJoin()
        }
    }

    @Test("A task cancelled before it sleeps throws at once and schedules nothing")
    func cancelledBefore() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "clock")
            let loop = worker.loop
            let sleeper = Task(executorPreference: driver) {
                withUnsafeCurrentTask { $0?.cancel() }
                try await loop.clock.sleep(for: .seconds(3600))
            }
            await #expect(throws: CancellationError.self) { try await sleeper.value }
            #expect(await onLoop(loop) { loop.itemCount(in: .default) } == 1)  // the thread's own port
            worker.stopAndJoin()
        }
    }

    @Test("5,000 tasks sleeping on the loop clock all wake, none early, and leave no timer")
    func manySleepers() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "sleepers")
            let loop = worker.loop
            let early = ThreadLock(0)
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<5000 {
                    group.addTask {
                        let duration = Duration.microseconds(500 + (index % 40) * 250)
                        let start = MonotonicInstant.now
                        try? await loop.clock.sleep(for: duration)
                        if MonotonicInstant.now - start < duration { early.withLock { $0 += 1 } }
                    }
                }
            }
            #expect(early.withLock { $0 } == 0)
            #expect(await onLoop(loop) { loop.itemCount(in: .default) } == 1)
            worker.stopAndJoin()
        }
    }
}

@Suite("Async sequences of loop sources")
struct AsyncSourceTests {
    @Test("ticks(every:) yields repeatedly; leaving the loop removes its timer")
    func ticks() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "ticks")
            let loop = worker.loop
            var seen: [MonotonicInstant] = []
            for await tick in loop.ticks(every: .milliseconds(2)) {
                seen.append(tick)
                if seen.count == 3 { break }
            }
            #expect(seen.count == 3)
            #expect(seen == seen.sorted())
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 1 })
            worker.stopAndJoin()
        }
    }

    @Test("readiness(of:) reports a readable pipe; cancelling the consumer removes its source")
    func readiness() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "readiness")
            let loop = worker.loop
            let pipe = TestPipe()
            let reports = Atomic<Int>(0)
            let consumer = Task(executorPreference: driver) {
                for await events in loop.readiness(of: FileDescriptor(rawValue: pipe.readEnd)) where events.contains(.readable) {
                    pipe.drain()
                    reports.add(1, ordering: .relaxed)
                }
            }
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 2 })
            pipe.writeByte()
            #expect(await waitUntilAsync(driver) { reports.load(ordering: .relaxed) == 1 })
            consumer.cancel()
            await consumer.value
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 1 })
            worker.stopAndJoin()
        }
    }

    @Test("messages(of:) delivers 1,000 messages in order")
    func messages() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "messages")
            let loop = worker.loop
            let port = loop.makeDoorbell()
            let stream = loop.messages(of: port)
            for index in 0..<1000 { #expect(port.send(UInt64(index))) }
            var received: [UInt64] = []
            for await message in stream {
                received.append(message.payload)
                if received.count == 1000 { break }
            }
            #expect(received == (0..<1000).map { UInt64($0) })
            worker.stopAndJoin()
        }
    }

    @Test("signals(_:) delivers a signal sent to the loop's thread; the signalfd goes when the iteration ends")
    func signals() async throws {
        try await onDriverLoop { driver in
            let worker = LoopThread(name: "signals")
            defer { worker.stopAndJoin() }
            let loop = worker.loop
            do {  // the stream lives in this scope: leaving it ends the sequence
                // Blocked in the loop's thread only: the signal is sent to that thread alone.
                let (stream, thread) = try await Task(executorPreference: loop) { () throws -> (AsyncStream<Int32>, pthread_t) in
                    (try loop.signals([SIGUSR1, SIGUSR2]), pthread_self())
                }.value
                #expect(await onLoop(loop) { loop.itemCount(in: .default) } == 2)
                #expect(pthread_kill(thread, SIGUSR2) == 0)
                var received: [Int32] = []
                for await signal in stream {
                    received.append(signal)
                    if received.count == 1 { #expect(pthread_kill(thread, SIGUSR1) == 0) }
                    if received.count == 2 { break }
                }
                #expect(received == [SIGUSR2, SIGUSR1])
            }
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 1 })
        }
    }

    @Test("signals(_:) rejects a number that is not a signal it can watch")
    func signalsRejectsInvalid() {
        #expect(throws: Errno.invalidArgument) { _ = try RingRunLoop.current.signals([SIGKILL]) }
        #expect(throws: Errno.invalidArgument) { _ = try RingRunLoop.current.signals([0]) }
    }

    @Test("fileChanges(at:) reports entries created and deleted, and ends when the directory goes")
    func fileChanges() async throws {
        try await onDriverLoop { driver in
            let worker = LoopThread(name: "inotify")
            defer { worker.stopAndJoin() }
            let loop = worker.loop
            let directory = "/tmp/ringloop-inotify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            #expect(mkdir(directory, 0o700) == 0)
            let stream = try loop.fileChanges(at: directory)
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 2 })
            let file = directory + "/entry"
            let fd = open(file, O_CREAT | O_WRONLY, 0o600)
            #expect(fd >= 0)
            close(fd)
            #expect(unlink(file) == 0)
            #expect(rmdir(directory) == 0)
            var changes: [FileChange] = []
            for await change in stream { changes.append(change) }  // ends with IN_IGNORED
            let created = changes.first { $0.name == "entry" && $0.mask & UInt32(IN_CREATE) != 0 }
            let deleted = changes.first { $0.name == "entry" && $0.mask & UInt32(IN_DELETE) != 0 }
            #expect(created != nil && deleted != nil, "\(changes)")
            #expect(changes.last.map { $0.mask & UInt32(IN_IGNORED) != 0 } == true)
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 1 })
        }
    }

    @Test("fileChanges(at:) on a missing directory throws ENOENT")
    func fileChangesMissing() {
        #expect(throws: Errno.noSuchFileOrDirectory) { _ = try RingRunLoop.current.fileChanges(at: "/nonexistent/ringloop") }
    }

    @Test("A sequence dropped without being iterated takes its source off the loop")
    func droppedSequence() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "dropped")
            let loop = worker.loop
            do {
                let stream = loop.ticks(every: .seconds(3600))
                _ = stream
            }
            #expect(await waitUntilAsync(driver) { await onLoop(loop) { loop.itemCount(in: .default) } == 1 })
            worker.stopAndJoin()
        }
    }
}

@Suite("LoopSignalSource")
struct LoopSignalSourceTests {
    @Test("A signal sent to the loop's thread calls the handler there; invalidate takes the source off and closes the signalfd")
    func handlerOnLoopThread() throws {
        let worker = LoopThread(name: "signal-source")
        defer { worker.stopAndJoin() }
        let loop = worker.loop
        let state = ThreadLock<(signals: [Int32], onLoopThread: Bool, source: LoopSignalSource?, thread: pthread_t?)>(
            ([], true, nil, nil))
        worker.perform {
            // Blocked in the loop's thread only: the signal is sent to that thread alone.
            let source = try? LoopSignalSource([SIGUSR1, SIGUSR2], on: loop) { signal in
                let here = loop.isOnLoopThread
                state.withLock {
                    $0.signals.append(signal)
                    $0.onLoopThread = $0.onLoopThread && here
                }
            }
            state.withLock {
                $0.source = source
                $0.thread = pthread_self()
            }
        }
        let limit = MonotonicInstant.now + TestWait.bound
        while state.withLock({ $0.thread == nil }) && MonotonicInstant.now < limit { sched_yield() }
        let (source, thread) = state.withLock { ($0.source, $0.thread) }
        let signalSource = try #require(source)
        let target = try #require(thread)
        #expect(signalSource.signals == [SIGUSR1, SIGUSR2])
        #expect(pthread_kill(target, SIGUSR2) == 0)
        while state.withLock({ $0.signals.count }) < 1 && MonotonicInstant.now < limit { sched_yield() }
        #expect(pthread_kill(target, SIGUSR1) == 0)
        while state.withLock({ $0.signals.count }) < 2 && MonotonicInstant.now < limit { sched_yield() }
        #expect(state.withLock { $0.signals } == [SIGUSR2, SIGUSR1])
        #expect(state.withLock { $0.onLoopThread })
        func items() -> Int {
            let count = ThreadLock(0)
            loop.perform(inModes: [.common], waitUntilDone: true) { count.withLock { $0 = loop.itemCount(in: .default) } }
            return count.withLock { $0 }
        }
        let before = items()
        signalSource.invalidate()
        signalSource.invalidate()
        while items() >= before && MonotonicInstant.now < limit { sched_yield() }
        #expect(items() == before - 1, "the source is off the loop")
        state.withLock { $0.source = nil }
    }

    @Test("A number that is not a signal it can watch is refused")
    func invalid() {
        let loop = RingRunLoop.current
        #expect(throws: Errno.invalidArgument) { _ = try LoopSignalSource([SIGSTOP], on: loop) { _ in } }
        #expect(throws: Errno.invalidArgument) { _ = try LoopSignalSource([65], on: loop) { _ in } }
    }
}
