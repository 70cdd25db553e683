/// How late this loop's sleeps end after their deadline — the kernel's timer plus the
/// thread's wake-up, as this machine delivers them — so precise timers can wake early
/// by just enough. Keeps the last ``capacity`` samples and re-estimates their 99th
/// percentile every ``interval`` samples; the early wake aims at twice that, between
/// ``minimumWindow`` and ``maximumWindow``. A wake-up later than the window widens it at
/// once (this machine drifts into a slower state for seconds at a time, and a precise
/// timer must not wait for the next estimate to be on time again); it narrows by at most
/// a quarter per estimate. Loop thread only; allocates once.
struct WakeLatencyEstimator: ~Copyable {
    static let capacity = 256
    static let interval = 64
    static let minimumWindow: UInt64 = 50_000
    static let maximumWindow: UInt64 = 2_000_000
    /// The window before enough samples are in (the kernel's wake-up lateness here is
    /// ≈ 50 µs at p99 idle, ≈ 175 µs with the other core busy).
    static let initialWindow: UInt64 = 200_000
    /// What a wake-up needs beyond its lateness to still spin to the fire date.
    static let margin: UInt64 = 20_000

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
        if lateness &+ Self.margin > window {
            window = min(Self.maximumWindow, (lateness &+ Self.margin) &* 3 / 2)
        }
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
        let aim = min(Self.maximumWindow, max(Self.minimumWindow, lateness99 &* 2))
        window = aim >= window ? aim : max(aim, window - window / 4)
    }
}
