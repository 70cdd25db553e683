import RingLoop

/// Runs an async test body on a loop thread of its own (a task executor preference), with
/// that loop: the body's awaits resume there, not on Swift's cooperative pool, which the
/// synchronous tests of the same process can hold for minutes on a two-core machine (an
/// async test waiting for a pool thread would fail its own time bounds). Unstructured
/// tasks the body starts do not inherit the preference: give them `driver` explicitly.
public func onDriverLoop<T: Sendable>(
    _ body: @Sendable (_ driver: RingRunLoop) async throws -> T
) async rethrows -> T {
    let thread = LoopThread(name: "test-driver")
    defer { thread.stopAndJoin() }
    let driver = thread.loop
    return try await withTaskExecutorPreference(driver) { try await body(driver) }
}
