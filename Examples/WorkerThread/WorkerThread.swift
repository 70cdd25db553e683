// worker-thread: a resident worker thread fed by performs, as Foundation's
// performSelector:onThread:withObject:waitUntilDone:, afterDelay: and
// cancelPreviousPerformRequestsWithTarget: feed one.
//
//   swift run worker-thread
//
// The main thread hands the worker jobs without waiting, then one it waits for; schedules
// delayed jobs for a target and cancels them before they run; and ends the worker.
import Glibc
import RingLoop

/// Writes a line at once (a pipe would buffer `print`).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// What the delayed jobs are performed for (cancelPerforms(target:) finds them by it).
final class Report: Sendable {}

let worker = LoopThread(name: "worker")
let done = LoopBound(0, loop: worker.loop)

// Jobs queued without waiting run in order on the worker's loop.
for job in 1...3 {
    worker.loop.perform(inModes: [.default], waitUntilDone: false) {
        done.value += 1
        say("worker: job \(job)")
    }
}
// A job the main thread waits for: it runs after those queued before it.
worker.loop.perform(inModes: [.default], waitUntilDone: true) {
    say("worker: job 4, after \(done.value) others")
}
say("main: job 4 is done")

// Delayed jobs for a target, then cancelled before their time: they never run.
let report = Report()
for delay in [200, 400] {
    _ = worker.loop.perform(after: .milliseconds(delay), inModes: [.default], target: report) {
        say("worker: a cancelled job ran")
    }
}
let cancelled = worker.loop.cancelPerforms(target: report)
say("main: cancelled \(cancelled) delayed jobs")

// One delayed job that does run and tells the main thread, whose loop waits for it.
let mainLoop = RingRunLoop.current
let delayedRan = LoopBound(false, loop: mainLoop)
// A mode with nothing in it ends a run at once (CFRunLoop's rule); this source keeps the
// main loop's default mode waiting for the perform.
mainLoop.add(LoopSource {}, to: .default)
_ = worker.loop.perform(after: .milliseconds(50), inModes: [.default], target: report) {
    say("worker: delayed job")
    mainLoop.perform(inModes: [.default], waitUntilDone: false) { delayedRan.value = true }
    mainLoop.wakeUp()
}
while !delayedRan.value {
    _ = mainLoop.run(mode: .default, for: .seconds(1), returnAfterSourceHandled: true)
}
say("main: the delayed job told me")
worker.stopAndJoin()
say("main: worker ended")
