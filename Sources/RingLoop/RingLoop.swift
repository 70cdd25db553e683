/// RingLoop: a run loop for Linux with CFRunLoop's semantics (modes, common modes,
/// source0/source1, timers, observers, blocks, nested runs), waiting on io_uring.
///
/// This file holds module-level documentation; the wait core lives in `WaitCore/`.
public enum RingLoopVersion {
    /// The package's version: the newest entry of CHANGELOG.md, as `ringloop --version`
    /// prints it (a test keeps the three equal).
    public static let string = "0.8.3"
}
