// The parts of a loop's state that the loop thread alone touches, each named once (the
// ports' part is `readinessSources`, `doorbellSources` and the port events in
// `RingRunLoop`).

/// A loop's modes: each mode's state, the common modes and the items added to them, and
/// the mode of the innermost run. Loop thread.
struct LoopModes {
    /// Each mode's state by name.
    var table: [RingRunLoop.Mode: ModeState] = [:]
    /// The same states, in the order the modes were made.
    var list: [ModeState] = []
    /// The common modes; each mode's state mirrors its membership (``ModeState/isCommon``).
    var common: Set<RingRunLoop.Mode> = [.default]
    /// Items added to the common modes (a set, as CFRunLoop's `_commonModeItems`).
    var commonItems: [ObjectIdentifier: LoopItem] = [:]
    /// The mode of the innermost run, while one runs.
    var current: ModeState?
}

/// A loop's completion I/O. Loop thread.
struct LoopIOOperations {
    /// I/O operations in flight by their wait-core id (each keeps its channel, and so the loop).
    var operations = IOOperationTable()
    /// Channels with operations in flight by source, to cancel when the source is invalidated.
    var busyChannels: [ObjectIdentifier: LoopIOChannel] = [:]
}

/// When a loop spins instead of sleeping: before precise timers, and before it sleeps
/// (a fixed window, or the adaptive policy). Loop thread.
struct SpinPolicy: ~Copyable {
    /// The precise timers' spin window the app set, if it set one.
    var fixedPreciseWindow: UInt64?
    /// How late this loop's sleeps end.
    var wakeLateness = WakeLatencyEstimator()
    /// Nanoseconds spent spinning to precise timers' fire dates, and fires that spun.
    var preciseSpin: (nanoseconds: UInt64, fires: UInt64) = (0, 0)
    /// How long the loop polls before it sleeps (``RingRunLoop/spinBeforeSleeping``).
    var beforeSleepingNanoseconds: UInt64 = 0
    /// The adaptive poll before sleeping (``RingRunLoop/adaptiveSpinBeforeSleeping``), while set.
    var adaptive: AdaptiveSpin?
}

/// Arrays a pass takes, fills and puts back, so a warm loop allocates nothing. Loop thread.
struct PassScratch {
    var source0: [LoopSource] = []
    var jobBatch: [JobQueue.Entry] = []
    var observers: [LoopObserver] = []
    var timers: [TimerEntry] = []
}
