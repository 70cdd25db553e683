/// How late this loop's sleeps end after their deadline — the kernel's timer plus the
/// thread's wake-up, as this machine delivers them — so precise timers can wake early
/// by just enough. Keeps the last ``capacity`` samples and re-estimates their 99th
/// percentile every ``interval`` samples; the early wake is twice that, between
/// ``minimumWindow`` and ``maximumWindow``. Loop thread only; allocates once.
struct WakeLatencyEstimator: ~Copyable {
    static let capacity = 256
    static let interval = 64
    static let minimumWindow: UInt64 = 50_000
    static let maximumWindow: UInt64 = 2_000_000
    /// The window before enough samples are in (the kernel's wake-up lateness here is
    /// ≈ 50 µs at p99 idle, ≈ 175 µs with the other core busy).
    static let initialWindow: UInt64 = 200_000

    private let samples = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
    private let scratch = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity)
    private var count = 0
    private var next = 0
    private var sinceEstimate = 0
    /// The current early wake, nanoseconds.
    private(set) var window = initialWindow
    /// The last estimate of the 99th percentile of wake-up lateness, nanoseconds.
    private(set) var lateness99: UInt64 = 0

    deinit {
        samples.deallocate()
        scratch.deallocate()
    }

    /// A sleep that ended `lateness` nanoseconds after its deadline.
    mutating func record(_ lateness: UInt64) {
        samples[next] = lateness
        next = (next + 1) % Self.capacity
        count = min(count + 1, Self.capacity)
        sinceEstimate += 1
        guard sinceEstimate >= Self.interval, count >= Self.interval else { return }
        sinceEstimate = 0
        scratch.update(from: samples, count: count)
        var sorted = UnsafeMutableBufferPointer(start: scratch, count: count)
        sorted.sort()
        lateness99 = scratch[min(count - 1, count * 99 / 100)]
        window = min(Self.maximumWindow, max(Self.minimumWindow, lateness99 &* 2))
    }
}
