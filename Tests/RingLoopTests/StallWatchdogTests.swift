import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// Reports a watchdog made, kept under a pthread lock (ThreadSanitizer sees it).
final class StallLog: Sendable {
    let reports = ThreadLock<[LoopStallReport]>([])
    var all: [LoopStallReport] { reports.withLock { $0 } }
    func add(_ report: LoopStallReport) { reports.withLock { $0.append(report) } }
}

@Suite("Stall watchdog")
struct StallWatchdogTests {
    @Test("a source0 that blocks its pass is reported with the mode, the callout kind and the item")
    func source0Stall() {
        let log = StallLog()
        let seen = Atomic<Bool>(false)
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let watchdog = LoopStallWatchdog(loop: loop, threshold: .milliseconds(80)) { report in
                log.add(report)
            }
            let started = MonotonicInstant.now
            // Blocks its pass until the watchdog has reported it (bounded): no guessing how
            // long is long enough.
            let slow = LoopSource(label: "slow source") {
                let limit = MonotonicInstant.now + .seconds(10)
                while log.all.isEmpty && MonotonicInstant.now < limit { usleep(1000) }
                seen.store(true, ordering: .releasing)
            }
            loop.add(slow, to: .default)
            slow.signal()
            loop.run(mode: .default, for: .milliseconds(50), returnAfterSourceHandled: true)
            #expect(MonotonicInstant.now - started >= .milliseconds(80))
            watchdog.stop()
            #expect(watchdog.stallCount == 1)
            slow.invalidate()
        }
        let wasSeen = seen.load(ordering: .acquiring)
        #expect(wasSeen)
        let report = log.all.first
        #expect(report?.callout == .source0)
        #expect(report?.item == "slow source")
        #expect(report?.mode == .default)
        #expect((report?.duration ?? .zero) >= .milliseconds(80))
        #expect(report?.description.contains("in a source0 callout (slow source)") == true, "\(report?.description ?? "")")
    }

    @Test("stalls within the minimum interval are counted, not reported")
    func rateLimited() {
        let log = StallLog()
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let watchdog = LoopStallWatchdog(loop: loop, threshold: .milliseconds(40), minimumInterval: .seconds(30)) {
                log.add($0)
            }
            let target = LoopBound(1, loop: loop)
            // Each firing blocks until the watchdog has counted it.
            let timer = LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { timer in
                let limit = MonotonicInstant.now + .seconds(10)
                while watchdog.stallCount < target.value && MonotonicInstant.now < limit { usleep(1000) }
                target.value += 1
                if target.value > 3 { timer.invalidate() }
            }
            loop.add(timer, to: .common)
            loop.run(mode: .default, for: .seconds(20))
            watchdog.stop()
            // The three blocked firings; a pass descheduled past 40 ms on a loaded machine
            // may add one or two (a stall counted twice would make six). Only the first is
            // reported either way.
            #expect((3...5).contains(watchdog.stallCount), "\(watchdog.stallCount) stalls")
        }
        #expect(log.all.count == 1)
        #expect(log.all.first?.callout == .timer)
        #expect(log.all.first?.item?.hasPrefix("LoopTimer (every ") == true, "\(log.all.first?.item ?? "none")")
    }

    @Test("short passes and sleep are not stalls; a nested run's stall names its mode")
    func quietAndNested() {
        let log = StallLog()
        onFreshLoopThread {
            let loop = RingRunLoop.current
            // A pass is microseconds long; a thread descheduled mid-pass on a loaded machine
            // is not, and under a sanitizer the bound leaves it a second.
            let threshold: Duration = runningUnderSanitizer ? .seconds(1) : .milliseconds(150)
            let watchdog = LoopStallWatchdog(loop: loop, threshold: threshold) { log.add($0) }
            let ticks = LoopBound(0, loop: loop)
            let quick = LoopTimer(after: .milliseconds(1), repeating: .milliseconds(1)) { _ in ticks.value += 1 }
            loop.add(quick, to: .common)
            // Fifty passes that fired the timer, however long a slow machine takes for them.
            #expect(runUntil(loop) { ticks.value > 50 })
            quick.invalidate()
            #expect(watchdog.stallCount == 0, "passes of a 1 kHz timer are microseconds long")
            let modal = RingRunLoop.Mode("modal")
            let inner = LoopSource(label: "modal work") {
                let limit = MonotonicInstant.now + .seconds(10)
                while log.all.isEmpty && MonotonicInstant.now < limit { usleep(1000) }
                RingRunLoop.current.stop()
            }
            loop.addCommonMode(modal)
            loop.add(inner, to: modal)
            let outer = LoopSource(label: "opens a modal run") {
                inner.signal()
                RingRunLoop.current.run(mode: modal, for: .seconds(15))
            }
            loop.add(outer, to: .default)
            outer.signal()
            loop.run(mode: .default, for: .milliseconds(10), returnAfterSourceHandled: true)
            watchdog.stop()
            inner.invalidate()
            outer.invalidate()
        }
        let report = log.all.first
        #expect(report?.mode == RingRunLoop.Mode("modal"))
        #expect(report?.item == "modal work")
    }

    @Test("stop() from inside the report closure returns, no report follows, and the watchdog's thread ends")
    func stopFromReport() {
        let reporter = Atomic<Int32>(0)
        let returned = Atomic<Bool>(false)
        let current = ThreadLock<LoopStallWatchdog?>(nil)
        onFreshLoopThread {
            let loop = RingRunLoop.current
            let watchdog = LoopStallWatchdog(loop: loop, threshold: .milliseconds(40), minimumInterval: .zero) { _ in
                reporter.store(ProcessThreads.currentID, ordering: .releasing)
                current.withLock { $0 }?.stop()
                returned.store(true, ordering: .releasing)
            }
            current.withLock { $0 = watchdog }
            // Two stalls, each held until the report closure has returned (bounded): the
            // second must not be seen, the watchdog having been stopped by the first.
            let slow = LoopSource(label: "slow") {
                let limit = MonotonicInstant.now + .seconds(10)
                while !returned.load(ordering: .acquiring) && MonotonicInstant.now < limit { usleep(1000) }
                usleep(100_000)
            }
            loop.add(slow, to: .default)
            for _ in 0..<2 {
                slow.signal()
                loop.run(mode: .default, for: .milliseconds(10), returnAfterSourceHandled: true)
            }
            let stopReturned = returned.load(ordering: .acquiring)
            #expect(stopReturned, "stop() inside the report returned")
            #expect(watchdog.stallCount == 1)
            let thread = reporter.load(ordering: .acquiring)
            #expect(thread != 0 && waitUntil { !ProcessThreads.isRunning(thread) }, "the watchdog's thread ended")
            watchdog.stop()
            current.withLock { $0 = nil }
            slow.invalidate()
        }
    }
}
