import Glibc
import RingLoop

/// The tests' bounded waits, one set for every target: how long any of them waits for a
/// condition before the test reports it as never met. Generous: the bound is reached only
/// when the behaviour is broken (or a sanitizer on a loaded machine is very slow), and a
/// pass never waits for it.
public enum TestWait {
    public static let bound: Duration = .seconds(20)
}

/// Checks `condition` until it holds or `timeout` passes; whether it held. For effects
/// that other threads or processes bring about: it yields the CPU between checks for the
/// first millisecond, then sleeps a millisecond between them, so that on a loaded
/// two-core machine it does not take the CPU from the thread it waits for.
public func waitUntil(timeout: Duration = TestWait.bound, _ condition: () -> Bool) -> Bool {
    let start = MonotonicInstant.now
    let limit = start + timeout
    while !condition() {
        let now = MonotonicInstant.now
        if now > limit { return false }
        if now - start < .milliseconds(1) { sched_yield() } else { usleep(1000) }
    }
    return true
}

/// Runs `loop` (in the default mode, returning after each handled source) until
/// `condition` holds or `timeout` passes; whether it held. For effects the loop itself
/// brings about: the condition is checked after each of its passes that handled something.
public func runUntil(
    _ loop: RingRunLoop, mode: RingRunLoop.Mode = .default, timeout: Duration = TestWait.bound, _ condition: () -> Bool
) -> Bool {
    let limit = MonotonicInstant.now + timeout
    while !condition() {
        if MonotonicInstant.now > limit { return false }
        loop.run(mode: mode, for: .milliseconds(20), returnAfterSourceHandled: true)
    }
    return true
}

/// Polls `condition` until it holds or `timeout` passes, sleeping a millisecond on
/// `driver`'s clock between tries (not on the global executor's timer); whether it held.
public func waitUntilAsync(
    _ driver: RingRunLoop, timeout: Duration = TestWait.bound, _ condition: () async -> Bool
) async -> Bool {
    let limit = MonotonicInstant.now + timeout
    while await !condition() {
        if MonotonicInstant.now > limit { return false }
        try? await driver.clock.sleep(for: .milliseconds(1))
    }
    return true
}
