import Testing

@testable import RingLoop

/// A kept timer re-armed by its fire date (the event-server feed's tail-acknowledgement
/// timer: armed at a near date, parked at `.distantFuture` when the acknowledgement goes
/// without it) on a loop where a stage's wake-up timer sits parked at `.distantFuture`
/// already. Each re-arm leaves its older heap entry stale; those behind the stage timer's
/// live entry (same fire date, lower sequence) never reach the top to be dropped, so the
/// loop compacts on a re-arm too, not only after a timer fires (a review found the heap
/// at 10,001 entries for 2 timers before).
@Suite("Timer heaps under re-armed kept timers") struct TimerHeapReArmTests {
    @Test("a kept timer armed then parked at distantFuture beside a parked timer, none firing, leaves bounded stale entries")
    func keptTimerParkedAtDistantFutureIsBounded() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopSource {}, to: .default)
            // A stage's wake-up timer, parked (as StageWakeUpTimer.init does).
            let stage = LoopTimer(fireDate: .distantFuture, interval: .seconds(86_400 * 365)) { _ in }
            loop.add(stage, to: .common)
            // The feed's kept ack timer (ServerDeviceFeed.armAcknowledgementTimer).
            let ack = LoopTimer(fireDate: .now + .milliseconds(20), interval: .seconds(86_400 * 365)) { _ in }
            loop.add(ack, to: .common)
            for _ in 0..<10_000 {
                ack.nextFireDate = .now + .milliseconds(20)  // acknowledge(): armed
                loop.run(mode: .default, for: .zero)
                ack.nextFireDate = .distantFuture  // the block sent it: disarmed
                loop.run(mode: .default, for: .zero)
            }
            let state = loop.modeState(.default)!
            #expect(state.timerCount == 2)
            #expect(state.timers.storedEntries <= 3 * 2 + 64, "heaps hold \(state.timers.storedEntries) entries for 2 timers")
            stage.invalidate()
            ack.invalidate()
        }
    }

    @Test("the same cycles without a parked neighbour stay bounded")
    func keptTimerWithoutParkedNeighbourIsBounded() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopSource {}, to: .default)
            let ack = LoopTimer(fireDate: .now + .milliseconds(20), interval: .seconds(86_400 * 365)) { _ in }
            loop.add(ack, to: .common)
            for _ in 0..<10_000 {
                ack.nextFireDate = .now + .milliseconds(20)
                loop.run(mode: .default, for: .zero)
                ack.nextFireDate = .distantFuture
                loop.run(mode: .default, for: .zero)
            }
            let state = loop.modeState(.default)!
            #expect(state.timers.storedEntries <= 3 * 1 + 64, "heaps hold \(state.timers.storedEntries) entries for 1 timer")
            ack.invalidate()
        }
    }

    @Test("a one-shot timer made and invalidated per cycle beside a parked timer stays bounded")
    func oneShotPerCycleIsBounded() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            loop.add(LoopSource {}, to: .default)
            let stage = LoopTimer(fireDate: .distantFuture, interval: .seconds(86_400 * 365)) { _ in }
            loop.add(stage, to: .common)
            for _ in 0..<10_000 {
                let ack = LoopTimer(fireDate: .now + .milliseconds(20)) { _ in }
                loop.add(ack, to: .common)
                loop.run(mode: .default, for: .zero)
                ack.invalidate()
                loop.run(mode: .default, for: .zero)
            }
            let state = loop.modeState(.default)!
            #expect(state.timers.storedEntries <= 3 * 1 + 64, "heaps hold \(state.timers.storedEntries) entries for 1 timer")
            stage.invalidate()
        }
    }
}
