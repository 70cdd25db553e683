import RingLoop

/// Tests that load both cores for long stretches — the benchmark run, the soak, the
/// recorded-speed replay of the whole real-recordings corpus — take turns: the replay
/// proves that readers keep up with devices at the kernel's buffer sizes, which says
/// nothing when another test keeps both CPUs busy meanwhile (a CI run dropped one event of
/// 318,762 that way). Everything else still runs beside them.
public enum HeavyTests {
    private static let turn = ThreadLock(0)

    /// Runs `body` when no other heavy test runs.
    public static func oneAtATime<T>(_ body: () throws -> T) rethrows -> T {
        try turn.withLock { _ in try body() }
    }
}
