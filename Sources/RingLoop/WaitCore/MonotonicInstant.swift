import CLibURing
import CThreads
#if canImport(Glibc)
import Glibc
#endif

/// A point in time on the system's `CLOCK_MONOTONIC`, in nanoseconds.
///
/// This is the clock the loop's waits, its timers and the kernel's evdev timestamps
/// (after `EVIOCSCLOCKID`) share, so a deadline computed here is exactly what the
/// kernel compares against. (Swift's `ContinuousClock` reads `CLOCK_BOOTTIME` on
/// Linux and `SuspendingClock` `CLOCK_MONOTONIC`; this type names the clock outright.)
public struct MonotonicInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Nanoseconds since an unspecified start (usually boot, not counting suspend).
    public var nanoseconds: UInt64

    /// Creates an instant from a raw `CLOCK_MONOTONIC` reading in nanoseconds.
    @inlinable
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current time. Costs one vDSO call (about 20 ns), no system call.
    @inlinable
    public static var now: MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec))
    }

    /// An instant later than every other, used for "no deadline".
    public static let distantFuture = MonotonicInstant(nanoseconds: UInt64.max)

    /// The instant `duration` after this one, saturating at ``distantFuture``.
    @inlinable
    public func advanced(by duration: Duration) -> MonotonicInstant {
        let ns = duration.nanosecondsClamped
        if ns >= 0 {
            let (sum, overflow) = nanoseconds.addingReportingOverflow(UInt64(ns))
            return MonotonicInstant(nanoseconds: overflow ? .max : sum)
        }
        let magnitude = UInt64(-ns)
        return MonotonicInstant(nanoseconds: nanoseconds > magnitude ? nanoseconds - magnitude : 0)
    }

    /// The signed time from this instant to `other`.
    @inlinable
    public func duration(to other: MonotonicInstant) -> Duration {
        if other.nanoseconds >= nanoseconds {
            return .nanoseconds(Int64(clamping: other.nanoseconds - nanoseconds))
        }
        return .nanoseconds(-Int64(clamping: nanoseconds - other.nanoseconds))
    }

    @inlinable
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant { lhs.advanced(by: rhs) }

    @inlinable
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration { rhs.duration(to: lhs) }

    @inlinable
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant as a `timespec` (for `pthread_cond_timedwait` and the like).
    var asTimespec: Glibc.timespec {
        let clamped = min(nanoseconds, UInt64(Int64.max))
        return Glibc.timespec(tv_sec: Int(clamped / 1_000_000_000), tv_nsec: Int(clamped % 1_000_000_000))
    }

    public var description: String {
        "\(nanoseconds / 1_000_000_000).\(String(nanoseconds % 1_000_000_000).leftPadded(to: 9))s"
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`'s range.
    @inlinable
    var nanosecondsClamped: Int64 {
        // Under ±9.2 s (a tap's limit, a timer's interval) the attoseconds fit in 64 bits
        // and one division by a constant converts them; `components` divides 128 bits.
        if let attoseconds = Int64(exactly: self.attoseconds) { return attoseconds / 1_000_000_000 }
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
