#if DEBUG
import Glibc
import RingLoopTestSupport
import Testing

@testable import RingLoop

/// The loop's debug-only invariant checks (`RingRunLoop.checkInvariants()`: the mode
/// table, each `ModeState`, each `TimerQueue`): they hold after every operation of a
/// random mix, and a structure broken on purpose stops the process.
/// Whether an exit test's process stopped with `message` on standard error (the check
/// meant, not an earlier one).
func stopped(_ result: ExitTest.Result?, saying message: String) -> Bool {
    String(decoding: result?.standardErrorContent ?? [], as: UTF8.self).contains(message)
}

@Suite("Invariants of the modes and timer queues (debug builds)")
struct InvariantTests {
    @Test("A random mix of adds, removes, reschedules, invalidations and passes keeps every invariant")
    func randomOperations() {
        onFreshLoopThread {
            var random = SeededGenerator.forTest("randomOperations")
            let loop = RingRunLoop.current
            let modes: [RingRunLoop.Mode] = [.default, .init("invariants"), .tracking, .common]
            var timers: [LoopTimer] = []
            var sources: [LoopSource] = []
            var observers: [LoopObserver] = []
            func makeTimer() -> LoopTimer {
                let precise = Int.random(in: 0..<5, using: &random) == 0
                let tolerance = Bool.random(using: &random) ? Duration.zero : .milliseconds(Int.random(in: 1...5, using: &random))
                let delay = Bool.random(using: &random) ? Duration.zero : .seconds(Int.random(in: 1...100, using: &random))
                let interval = Bool.random(using: &random) ? nil : Duration.milliseconds(Int.random(in: 1...50, using: &random))
                return LoopTimer(after: delay, repeating: interval, tolerance: tolerance, precise: precise) { _ in }
            }
            for _ in 0..<8 {
                timers.append(makeTimer())
                sources.append(LoopSource(order: Int.random(in: -2...2, using: &random)) {})
                let activities: [RingRunLoop.Activity] = [.entry, .beforeTimers, .beforeWaiting, .exit, .all]
                observers.append(
                    LoopObserver(
                        activities: activities.randomElement(using: &random)!, order: Int.random(in: -3...3, using: &random)
                    ) { _, _ in })
            }
            for step in 0..<3_000 {
                let mode = modes.randomElement(using: &random)!
                let index = Int.random(in: 0..<8, using: &random)
                switch Int.random(in: 0..<14, using: &random) {
                case 0: loop.add(timers[index], to: mode)
                case 1: loop.remove(timers[index], from: mode)
                case 2: loop.add(sources[index], to: mode)
                case 3: loop.remove(sources[index], from: mode)
                case 4: loop.add(observers[index], to: mode)
                case 5: loop.remove(observers[index], from: mode)
                case 6: timers[index].nextFireDate = .now + .milliseconds(Int.random(in: -5...5_000, using: &random))
                case 7 where !timers[index].isPrecise:
                    timers[index].tolerance = .microseconds(Int.random(in: 0...3, using: &random) * 500)
                case 8:
                    timers[index].invalidate()
                    timers[index] = makeTimer()
                case 9:
                    sources[index].invalidate()
                    sources[index] = LoopSource(order: Int.random(in: -2...2, using: &random)) {}
                case 10:
                    sources[index].signal()
                case 11 where step % 100 == 0:
                    loop.addCommonMode(.init("invariants"))
                default:
                    _ = loop.run(mode: mode == .common ? .default : mode, for: .zero)
                }
                loop.checkInvariants()
            }
            for timer in timers { timer.invalidate() }
            for source in sources { source.invalidate() }
            for observer in observers { observer.invalidate() }
            loop.checkInvariants()
            #expect(loop.modeState(.default)?.timerCount == 0)
        }
    }

    @Test("A timer's fire date changed behind its queue's back stops the process")
    func staleFireDate() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                let timer = LoopTimer(after: .seconds(60)) { _ in }
                loop.add(timer, to: .default)
                loop.checkInvariants()
                timer.fireNanoseconds += 1_000  // not rescheduled: its live entry is out of date
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "TimerQueue: a live entry in exact due at"))
    }

    @Test("A mode counting fewer timers than it holds stops the process")
    func timerCount() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                loop.add(LoopTimer(after: .seconds(60), tolerance: .milliseconds(5)) { _ in }, to: .default)
                loop.checkInvariants()
                loop.modeState(.default)!.timerCount = 0
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "timers with live entries, 0 counted"))
    }

    @Test("Observers out of order stop the process")
    func observerOrder() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                loop.add(LoopObserver(activities: .entry, order: 1) { _, _ in }, to: .default)
                loop.add(LoopObserver(activities: .entry, order: 2) { _, _ in }, to: .default)
                loop.checkInvariants()
                loop.modeState(.default)!.observers.swapAt(0, 1)
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "observers out of order at 1"))
    }

    @Test("An observer mask that misses an observer's activities stops the process")
    func observerMask() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                loop.add(LoopObserver(activities: .beforeWaiting) { _, _ in }, to: .default)
                loop.checkInvariants()
                loop.modeState(.default)!.observerMask = []
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "observer mask"))
    }

    @Test("A source held by a mode whose bit it does not carry stops the process")
    func sourceMembership() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                let source = LoopSource {}
                loop.add(source, to: .default)
                loop.checkInvariants()
                source.modeMask = 0
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "a source without the mode"))
    }

    @Test("A mode listed at another index than its own stops the process")
    func modeTable() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                loop.add(LoopSource {}, to: .default)
                loop.add(LoopSource {}, to: .tracking)
                loop.checkInvariants()
                loop.modes.list.swapAt(0, 1)
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "listed at 0, indexed 1"))
    }

    @Test("A mode flagged common that the loop's common modes do not list stops the process")
    func commonFlag() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            onFreshLoopThread {
                let loop = RingRunLoop.current
                loop.add(LoopSource {}, to: .default)
                loop.add(LoopSource {}, to: .tracking)
                loop.addCommonMode(.tracking)
                loop.checkInvariants()
                loop.modes.common.remove(.tracking)
                loop.checkInvariants()
            }
            exit(0)
        }
        #expect(stopped(result, saying: "flagged common against the loop's common modes"))
    }
}
#endif
