/// RingLoop: a run loop for Linux with CFRunLoop's semantics (modes, common modes,
/// source0/source1, timers, observers, blocks, nested runs), waiting on io_uring.
///
/// This file holds module-level documentation; the wait core lives in `WaitCore/`.
public enum RingLoopVersion {
    /// The package's version string.
    public static let string = "0.1.0-dev"
}
