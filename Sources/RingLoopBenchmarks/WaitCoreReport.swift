import RingLoop

/// A one-line description of the wait core this kernel gives: ring flags, wait style and
/// wake-up mechanism.
public enum WaitCoreReport {
    /// Creates a wait core on the calling thread, describes it and tears it down.
    public static func probe() throws(RingError) -> String {
        let core = try WaitCore()
        return core.debugDescription
    }
}
