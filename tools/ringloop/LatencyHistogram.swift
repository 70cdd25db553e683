/// Latencies counted in a fixed number of log-linear buckets, for percentiles of a stream
/// of any length in constant memory (the idea of HdrHistogram, written here).
///
/// Values are whole nanoseconds. Below 128 ns each value has its own bucket (exact);
/// above, every power of two is split into 128 equal buckets, so a bucket is at most
/// 1/128 of its values wide. A percentile is read as its bucket's midpoint: within
/// **±0.4 %** (1/256) of the value a sorted array would give, or exact below 128 ns. The
/// maximum is kept exactly. Values of 2⁴⁴ ns (about 4.9 hours) and more, and negative
/// ones (a timestamp ahead of this clock), count in the last and the first bucket.
///
/// Memory: 4,864 counters (38 KiB), allocated once; `record` allocates nothing and is O(1),
/// a percentile O(buckets).
struct LatencyHistogram {
    /// Buckets per power of two (and the values counted exactly below it).
    static let subBuckets = 128
    /// log2 of `subBuckets`.
    private static let subBucketBits = 7
    /// The first value counted in the last bucket: 2⁴⁴ ns.
    private static let ceilingExponent = 44
    static let bucketCount = subBuckets + (ceilingExponent - subBucketBits) * subBuckets

    private var counts: [UInt64]
    /// How many values were recorded.
    private(set) var count = 0
    /// The largest value recorded, exactly (nanoseconds).
    private(set) var maximum: Int64 = 0

    init() { counts = [UInt64](repeating: 0, count: Self.bucketCount) }

    var isEmpty: Bool { count == 0 }

    /// Counts one latency of `nanoseconds`.
    mutating func record(_ nanoseconds: Int64) {
        let value = max(nanoseconds, 0)
        counts[Self.bucket(of: value)] += 1
        count += 1
        maximum = max(maximum, value)
    }

    /// The bucket a value falls in.
    static func bucket(of value: Int64) -> Int {
        guard value >= subBuckets else { return Int(value) }
        let exponent = Int64.bitWidth - 1 - value.leadingZeroBitCount
        guard exponent < ceilingExponent else { return bucketCount - 1 }
        let shift = exponent - subBucketBits
        let sub = Int(value >> shift) - subBuckets
        return subBuckets + shift * subBuckets + sub
    }

    /// The values bucket `index` counts: its lowest value and its width.
    static func range(of index: Int) -> (low: Int64, width: Int64) {
        guard index >= subBuckets else { return (Int64(index), 1) }
        let shift = (index - subBuckets) / subBuckets
        let sub = (index - subBuckets) % subBuckets
        return (Int64(subBuckets + sub) << shift, Int64(1) << shift)
    }

    /// The value below which `fraction` of the values lie, as a sorted array's element at
    /// index `Int(count × fraction)` would be (within the stated error); `nil` when empty.
    func percentile(_ fraction: Double) -> Int64? {
        guard count > 0 else { return nil }
        let rank = UInt64(min(count - 1, Int(Double(count) * fraction)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            if seen > rank {
                let (low, width) = Self.range(of: index)
                return min(low + width / 2, maximum)
            }
        }
        return maximum
    }
}
