import Glibc
import Synchronization
import Testing

@testable import RingLoop

/// A scenario: builds items on a driver, runs it, and leaves its callouts in the trace.
struct Scenario: Sendable, CustomTestStringConvertible {
    let name: String
    /// Entries the trace must contain (so a scenario that ran nothing cannot pass).
    let mustContain: [String]
    /// Entries the trace must not contain.
    let mustNotContain: [String]
    let body: @Sendable (LoopDriver) -> Void

    init(
        _ name: String, contains: [String] = [], excludes: [String] = [],
        _ body: @escaping @Sendable (LoopDriver) -> Void
    ) {
        self.name = name
        self.mustContain = contains
        self.mustNotContain = excludes
        self.body = body
    }

    var testDescription: String { name }
}

/// Runs `body` on a new thread (so each run gets a fresh loop of each kind) and waits.
func onFreshThread(_ body: @escaping @Sendable () -> Void) {
    PosixThread.start(name: "scenario", body).join()
}

/// Starts `body` on another thread; join the result after the run.
func fromAnotherThread(_ body: @escaping @Sendable () -> Void) -> PosixThread {
    PosixThread.start(name: "other", body)
}

/// Waits (bounded) until the loop says it sleeps, its BeforeWaiting observers run; true if
/// it did. Both loops say so just before they enter the kernel, and a wake-up sent in
/// between is kept for that wait (an eventfd or a pending MSG_RING here, CF's wake-up
/// eventfd there: each stays readable until the loop takes it), so what follows is the
/// same as for a loop already asleep.
func untilWaiting(_ driver: LoopDriver) -> Bool {
    let limit = MonotonicInstant.now + .seconds(20)
    while !driver.isWaiting {
        if MonotonicInstant.now > limit { return false }
        sched_yield()
    }
    return true
}

let scenarios: [Scenario] = [
    Scenario("an empty mode finishes at once", contains: ["run default → finished"]) { d in
        _ = d.run(milliseconds: 50)
    },
    Scenario("observers alone do not keep a run alive", contains: ["run default → finished"], excludes: ["observer o entry"]) { d in
        d.add(d.observer("o"), "default")
        _ = d.run(milliseconds: 50)
    },
    Scenario("returnAfterSourceHandled with a source0", contains: ["source a", "run default → handledSource"]) { d in
        let a = d.source("a")
        d.add(a, "default")
        d.add(d.observer("o"), "default")
        d.signal(a)
        _ = d.run(milliseconds: 1000, returnAfterSourceHandled: true)
    },
    Scenario("a signalled source0, then sleeping until the deadline", contains: ["source a", "run default → timedOut"]) { d in
        let a = d.source("a")
        d.add(a, "default")
        d.add(d.observer("o"), "default")
        d.signal(a)
        // Long enough that a first pass late on a loaded machine still ends before the
        // deadline, and the run sleeps (BeforeWaiting, AfterWaiting) in both loops.
        _ = d.run(milliseconds: 300)
    },
    Scenario("sources0 perform by order, then by signal time", contains: ["source b"]) { d in
        let b = d.source("b", order: 2)
        let a = d.source("a", order: 1)
        let c = d.source("c", order: 1)
        for s in [b, a, c] { d.add(s, "default") }
        d.signal(b)
        d.signal(a)
        // c's signal time is after a's: the clock has moved on since a was signalled.
        let afterA = MonotonicInstant.now
        while MonotonicInstant.now == afterA {}
        d.signal(c)
        _ = d.run(milliseconds: 0)
    },
    Scenario("a timer in the default mode does not fire while a custom mode runs", contains: ["run custom → timedOut", "timer t"]) { d in
        let t = d.timer("t", afterMilliseconds: 10)
        d.add(t, "default")
        d.add(d.source("keep"), "custom")
        _ = d.run("custom", milliseconds: 60)
        _ = d.run(milliseconds: 1000)
    },
    Scenario("a timer in the common modes fires in a mode marked common", contains: ["timer t", "run custom → finished"]) { d in
        d.addCommonMode("custom")
        d.add(d.timer("t", afterMilliseconds: 10), "common")
        _ = d.run("custom", milliseconds: 1000)
    },
    Scenario("a common-modes timer does not fire in a mode not marked common", contains: ["run custom → timedOut"], excludes: ["timer t"]) {
        d in
        d.add(d.timer("t", afterMilliseconds: 10), "common")
        d.add(d.source("keep"), "custom")
        _ = d.run("custom", milliseconds: 60)
    },
    Scenario("items in the common modes join a mode marked common later", contains: ["timer t", "run late → finished"]) { d in
        let t = d.timer("t", afterMilliseconds: 10)
        d.add(t, "common")
        d.addCommonMode("late")
        d.trace.record("contains late: \(d.contains(t, "late"))")
        _ = d.run("late", milliseconds: 1000)
    },
    Scenario(
        "a nested run in another mode from a timer callout, stopped inside; the outer run continues",
        contains: ["timer inner", "run inner → stopped", "timer t3"]
    ) { d in
        let inner = d.timer("inner", afterMilliseconds: 40) { d in d.stop() }
        d.add(inner, "inner")
        d.add(d.observer("io", [.entry, .exit]), "inner")
        d.add(d.observer("oo", [.entry, .exit]), "default")
        let outer = d.timer("outer", afterMilliseconds: 10) { d in
            _ = d.run("inner", milliseconds: 5000)
            d.trace.record("current mode \(d.currentMode ?? "none")")
        }
        d.add(outer, "default")
        d.add(d.timer("t3", afterMilliseconds: 90), "default")
        _ = d.run(milliseconds: 5000)
    },
    Scenario("nested runs in the same mode with two timers", contains: ["timer t2", "run default → stopped", "run default → finished"]) {
        d in
        let t2 = d.timer("t2", afterMilliseconds: 40) { d in d.stop() }
        let t1 = d.timer("t1", afterMilliseconds: 10) { d in
            _ = d.run(milliseconds: 5000)
        }
        d.add(t1, "default")
        d.add(t2, "default")
        _ = d.run(milliseconds: 5000)
    },
    Scenario("the full observer trace around one timer fire", contains: ["observer o afterWaiting", "timer t", "observer o exit"]) { d in
        d.add(d.observer("o"), "default")
        d.add(d.timer("t", afterMilliseconds: 10), "default")
        _ = d.run(milliseconds: 5000)
    },
    Scenario("returnAfterSourceHandled with a source1", contains: ["port p", "run default → handledSource"]) { d in
        let p = d.portSource("p", action: nil)
        d.add(p, "default")
        d.add(d.observer("o"), "default")
        d.signal(p)
        _ = d.run(milliseconds: 5000, returnAfterSourceHandled: true)
    },
    Scenario("a source1 made ready from another thread wakes the loop", contains: ["port p", "run default → stopped"]) { d in
        let p = d.portSource("p") { d in d.stop() }
        d.add(p, "default")
        d.add(d.observer("o", [.beforeWaiting, .afterWaiting, .exit]), "default")
        let other = fromAnotherThread { if untilWaiting(d) { d.signal(p) } }
        _ = d.run(milliseconds: 5000)
        other.join()
    },
    Scenario("stop from another thread", contains: ["run default → stopped"]) { d in
        d.add(d.source("keep"), "default")
        d.add(d.observer("o", [.beforeWaiting, .afterWaiting, .exit]), "default")
        let other = fromAnotherThread { if untilWaiting(d) { d.stop() } }
        _ = d.run(milliseconds: 5000)
        other.join()
    },
    Scenario("source0 signal plus wakeUp from another thread", contains: ["source s", "run default → stopped"]) { d in
        let s = d.source("s", order: 0) { d in d.stop() }
        d.add(s, "default")
        d.add(d.observer("o"), "default")
        let other = fromAnotherThread {
            if untilWaiting(d) {
                d.signal(s)
                d.wakeUp()
            }
        }
        _ = d.run(milliseconds: 5000)
        other.join()
    },
    Scenario("observer order ties keep the order they were added in", contains: ["observer c entry"]) { d in
        d.add(d.observer("a", [.entry, .exit], order: 0), "default")
        d.add(d.observer("b", [.entry, .exit], order: 0), "default")
        d.add(d.observer("c", [.entry, .exit], order: -1), "default")
        d.add(d.observer("d", [.entry, .exit], order: 5), "default")
        d.add(d.observer("e", [.entry, .exit], order: 0), "default")
        d.add(d.timer("t", afterMilliseconds: 5), "default")
        _ = d.run(milliseconds: 5000)
    },
    Scenario("invalidating timers from another timer's callout", contains: ["timer t1", "timer t4"], excludes: ["timer t2", "timer t3"]) {
        d in
        let t2 = d.timer("t2", afterMilliseconds: 40)
        let t3 = d.timer("t3", afterMilliseconds: 30, intervalMilliseconds: 10)
        let t1 = d.timer("t1", afterMilliseconds: 10) { d in
            d.invalidate(t2)
            d.invalidate(t3)
            d.trace.record("valid t2 \(d.isValid(t2))")
        }
        for t in [t1, t2, t3] { d.add(t, "default") }
        d.add(d.timer("t4", afterMilliseconds: 60), "default")
        _ = d.run(milliseconds: 5000)
    },
    Scenario("a repeating timer invalidated from its own callout", contains: ["timer r", "run default → finished"]) { d in
        // The timer invalidates itself at its third firing; the mode is then empty. (Not
        // from a second timer due near its fourth firing: under load the two fell due in
        // one pass on one loop and not on the other.)
        let count = Atomic<Int>(0)
        let itself = Mutex<Handle?>(nil)
        let r = d.timer("r", afterMilliseconds: 5, intervalMilliseconds: 15) { d in
            guard count.add(1, ordering: .relaxed).newValue == 3, let r = itself.withLock({ $0 }) else { return }
            d.trace.record("third")
            d.invalidate(r)
        }
        itself.withLock { $0 = r }
        d.add(r, "default")
        _ = d.run(milliseconds: 5000)
        itself.withLock { $0 = nil }  // the box holds the item whose closure holds the box
    },
    Scenario("blocks run in FIFO order and keep the mode alive", contains: ["block b3", "run default → timedOut"]) { d in
        d.perform("b1", modes: ["default"], action: nil)
        d.perform("b2", modes: ["default"], action: nil)
        d.perform("b3", modes: ["default"], action: nil)
        _ = d.run(milliseconds: 1000)
    },
    Scenario("a block for another mode waits for that mode", contains: ["block y", "block x"]) { d in
        d.perform("x", modes: ["other"], action: nil)
        d.perform("y", modes: ["default"], action: nil)
        _ = d.run(milliseconds: 1000)
        _ = d.run("other", milliseconds: 1000)
    },
    Scenario("a block in the common modes runs in the default mode", contains: ["block c"]) { d in
        d.perform("c", modes: ["common"], action: nil)
        _ = d.run(milliseconds: 1000)
    },
    Scenario(
        "a block in the common modes runs in a mode that existed before it was marked common",
        contains: ["block c", "run late → timedOut"]
    ) { d in
        d.add(d.source("keep"), "late")
        _ = d.run("late", milliseconds: 10)
        d.addCommonMode("late")
        d.perform("c", modes: ["common"], action: nil)
        _ = d.run("late", milliseconds: 30)
    },
    Scenario("a block enqueued by a block runs at the next blocks phase", contains: ["block b2", "run default → timedOut"]) { d in
        d.add(d.source("keep"), "default")
        d.add(d.observer("o", [.beforeWaiting, .afterWaiting]), "default")
        d.perform("b1", modes: ["default"]) { d in d.perform("b2", modes: ["default"], action: nil) }
        _ = d.run(milliseconds: 30)
    },
    Scenario("stop from inside a block", contains: ["block s", "run default → stopped"]) { d in
        d.add(d.source("keep"), "default")
        d.add(d.observer("o", [.beforeWaiting, .afterWaiting, .exit]), "default")
        d.perform("s", modes: ["default"]) { d in d.stop() }
        _ = d.run(milliseconds: 5000)
    },
    Scenario("a source removing itself from its mode in its perform", contains: ["source s", "run default → finished"]) { d in
        let box = Mutex<Handle?>(nil)
        let s = d.source("s", order: 0) { d in
            if let me = box.withLock({ $0 }) { d.remove(me, "default") }
        }
        box.withLock { $0 = s }
        d.add(s, "default")
        d.signal(s)
        _ = d.run(milliseconds: 1000)
        box.withLock { $0 = nil }  // the box holds the item whose closure holds the box
    },
    Scenario("a source invalidated by another source's perform does not perform", contains: ["source a"], excludes: ["source b"]) { d in
        let b = d.source("b", order: 1)
        let a = d.source("a", order: 0) { d in d.invalidate(b) }
        d.add(a, "default")
        d.add(b, "default")
        d.signal(a)
        d.signal(b)
        _ = d.run(milliseconds: 0)
        d.trace.record("valid b \(d.isValid(b))")
    },
    Scenario("a later fire date set in the callout replaces the repeat", contains: ["timer t"]) { d in
        let fired = Atomic<Int>(0)
        let box = Mutex<Handle?>(nil)
        let t = d.timer("t", afterMilliseconds: 10, intervalMilliseconds: 5000) { d in
            guard let me = box.withLock({ $0 }) else { return }
            if fired.add(1, ordering: .relaxed).newValue == 1 {
                d.setNextFire(me, millisecondsFromNow: 20)
            } else {
                d.invalidate(me)
            }
        }
        box.withLock { $0 = t }
        d.add(t, "default")
        _ = d.run(milliseconds: 3000)
        box.withLock { $0 = nil }  // the box holds the item whose closure holds the box
    },
    Scenario(
        "a run with a deadline already passed makes one pass", contains: ["observer o exit", "run default → timedOut"],
        excludes: ["observer o beforeWaiting"]
    ) { d in
        d.add(d.source("keep"), "default")
        d.add(d.observer("o"), "default")
        _ = d.run(milliseconds: 0)
    },
    Scenario("a non-repeating observer is called once", contains: ["observer once beforeTimers"]) { d in
        let once = d.observer("once", [.beforeTimers], repeats: false)
        d.add(once, "default")
        d.add(d.timer("t", afterMilliseconds: 10), "default")
        _ = d.run(milliseconds: 1000)
        d.trace.record("valid once \(d.isValid(once))")
    },
    Scenario("the current mode inside callouts", contains: ["mode in timer: inner"]) { d in
        let inner = d.timer("inner", afterMilliseconds: 5) { d in d.trace.record("mode in timer: \(d.currentMode ?? "none")") }
        d.add(inner, "inner")
        d.trace.record("mode outside: \(d.currentMode ?? "none")")
        _ = d.run("inner", milliseconds: 1000)
    },
    Scenario("removing a timer from one of its modes", contains: ["run a → timedOut", "timer t"]) { d in
        let t = d.timer("t", afterMilliseconds: 10)
        d.add(t, "a")
        d.add(t, "b")
        d.remove(t, "a")
        d.add(d.source("keep"), "a")
        d.trace.record("contains a \(d.contains(t, "a")) b \(d.contains(t, "b"))")
        _ = d.run("a", milliseconds: 40)
        _ = d.run("b", milliseconds: 1000)
    },
    Scenario("timers due together fire in fire-date order, in one pass", contains: ["timer t1", "timer t3"]) { d in
        d.add(d.observer("o", [.beforeWaiting]), "default")
        d.add(d.timer("t3", afterMilliseconds: 30), "default")
        d.add(d.timer("t1", afterMilliseconds: 10), "default")
        d.add(d.timer("t2", afterMilliseconds: 20), "default")
        usleep(60_000)  // all three are due before the run starts
        _ = d.run(milliseconds: 5000)
    },
    Scenario("a repeating timer late by several intervals fires once and skips to the future", contains: ["timer r", "future true"]) { d in
        let box = Mutex<Handle?>(nil)
        let fires = Atomic<Int>(0)
        let lateCalloutReturned = Mutex<Double?>(nil)
        let r = d.timer("r", afterMilliseconds: 5, intervalMilliseconds: 10) { d in
            let count = fires.add(1, ordering: .relaxed).newValue
            if count == 1 {
                usleep(45_000)  // miss four intervals
                lateCalloutReturned.withLock { $0 = d.now }
            } else if count == 2, let me = box.withLock({ $0 }) {
                d.invalidate(me)
            }
        }
        box.withLock { $0 = r }
        d.add(r, "default")
        // Both loops fire timers after waiting, so the first BeforeWaiting comes before the
        // first fire; the next fire date is judged at the BeforeWaiting after the late
        // callout, against the instant that callout returned (not against now, which a
        // preempted thread could see pass the next date too).
        d.add(
            d.observer("o", activities: [.beforeWaiting], repeats: true, order: 0) { d, _ in
                guard let returned = lateCalloutReturned.withLock({ $0.take() }) else { return }
                d.trace.record("future \(d.nextFireDate(r) > returned)")
            }, "default")
        _ = d.run(milliseconds: 5000)
        box.withLock { $0 = nil }  // the box holds the item whose closure holds the box
    },
    Scenario("a timer fires at most once per pass", contains: ["timer r"]) { d in
        let fires = Atomic<Int>(0)
        let box = Mutex<Handle?>(nil)
        let r = d.timer("r", afterMilliseconds: 1, intervalMilliseconds: 2) { d in
            if fires.add(1, ordering: .relaxed).newValue == 3, let me = box.withLock({ $0 }) { d.invalidate(me) }
        }
        box.withLock { $0 = r }
        d.add(r, "default")
        d.add(d.observer("o", [.beforeTimers]), "default")
        usleep(20_000)  // ten intervals overdue
        _ = d.run(milliseconds: 5000)
        box.withLock { $0 = nil }  // the box holds the item whose closure holds the box
    },
    Scenario("running the common pseudo-mode finishes", contains: ["run common → finished"]) { d in
        d.add(d.source("keep"), "common")
        _ = d.run("common", milliseconds: 10)
    },
]

@Suite("Differential: RingRunLoop against Foundation's CFRunLoop")
struct DifferentialTests {
    @Test("Same callout trace", arguments: scenarios)
    func sameTrace(_ scenario: Scenario) {
        let reference = Mutex<[String]>([])
        let ours = Mutex<[String]>([])
        onFreshThread {
            let driver = CFDriver()
            scenario.body(driver)
            reference.withLock { $0 = driver.trace.all }
        }
        onFreshThread {
            let driver = RingDriver()
            scenario.body(driver)
            ours.withLock { $0 = driver.trace.all }
        }
        let expected = reference.withLock { $0 }
        let actual = ours.withLock { $0 }
        #expect(actual == expected, "\n  Foundation: \(expected)\n  RingLoop:   \(actual)")
        for entry in scenario.mustContain {
            #expect(expected.contains(entry), "Foundation's trace lacks '\(entry)': \(expected)")
        }
        for entry in scenario.mustNotContain {
            #expect(!expected.contains(entry), "Foundation's trace has '\(entry)': \(expected)")
        }
    }
}
