import Dispatch
import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

actor Beater {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    let loop: RingRunLoop
    var beats = 0
    var naps = 0
    private var tasks: [Task<Void, Never>] = []
    init(loop: RingRunLoop) {
        self.loop = loop
        unownedExecutor = loop.asUnownedSerialExecutor()
    }
    /// A tick sequence and a sleep loop, both tasks that prefer the loop.
    func start() {
        let loop = self.loop
        tasks.append(Task(executorPreference: loop) { for await _ in loop.ticks(every: .milliseconds(5)) { await self.beat() } })
        tasks.append(
            Task(executorPreference: loop) {
                while !Task.isCancelled {
                    try? await loop.clock.sleep(for: .milliseconds(5))
                    await self.nap()
                }
            })
    }
    /// Cancels the tasks and waits until they have ended: a task still suspended on the
    /// loop when its thread stops would never resume (and keep the loop alive).
    func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
    private func beat() { beats += 1 }
    private func nap() { naps += 1 }
}

/// Swift's cooperative pool has one thread per core; code that blocks them all must not
/// stop async code that lives on a loop.
@Suite("Async code on a loop needs no pool thread")
struct PoolIndependenceTests {
    @Test("Tasks that prefer a LoopThread's loop keep ticking and sleeping there while every pool thread is blocked")
    func actorWithBlockedPool() async {
        await onDriverLoop { driver in
            let worker = LoopThread(name: "beater")
            defer { worker.stopAndJoin() }
            let beater = Beater(loop: worker.loop)
            let release = DispatchSemaphore(value: 0)
            let blocked = ThreadLock(0)
            let width = 16  // more than the pool's threads
            for _ in 0..<width {
                Task.detached {
                    blocked.withLock { $0 += 1 }
                    release.wait()
                }
            }
            await beater.start()
            var seen = 0
            let limit = MonotonicInstant.now + TestWait.bound
            while MonotonicInstant.now < limit {
                let (beats, naps) = await Task(executorPreference: worker.loop) { (await beater.beats, await beater.naps) }.value
                seen = min(beats, naps)
                if seen >= 3 { break }
                try? await driver.clock.sleep(for: .milliseconds(5))
            }
            await beater.stop()
            for _ in 0..<width { release.signal() }
            #expect(seen >= 3, "blocked pool threads: \(blocked.withLock { $0 })")
        }
    }
}
