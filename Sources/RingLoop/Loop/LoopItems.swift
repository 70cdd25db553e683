import Synchronization
import SystemPackage

/// What every loop item (source, port source, observer, timer) has: validity, the loop it
/// belongs to, and the modes of that loop it is in.
///
/// The loop's tables and its add and remove paths take items as `LoopItem`; those four
/// classes are its only subclasses (its initializer is internal).
///
/// Thread rules: the loop reference is set and cleared on the loop's thread and read from
/// any thread (to route `invalidate()` and reschedules); while set it holds the loop
/// strongly, as CFRunLoop's items retain their run loop. `modeMask` is read and written
/// on the loop's thread only.
public class LoopItem: @unchecked Sendable {
    private let owner = Atomic<Unmanaged<RingRunLoop>?>(nil)
    private let valid = Atomic<Bool>(true)
    /// Bit `i` set: the item is in the loop's mode with index `i` (loop thread only).
    var modeMask: UInt64 = 0

    init() {}

    deinit {
        owner.exchange(nil, ordering: .acquiringAndReleasing)?.release()
    }

    /// Whether the item can still be scheduled and called.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Marks the item invalid; returns `false` if it already was.
    func markInvalid() -> Bool { valid.exchange(false, ordering: .sequentiallyConsistent) }

    /// The loop the item belongs to, if any.
    var loop: RingRunLoop? { owner.load(ordering: .acquiring)?.takeUnretainedValue() }

    /// The item itself, as the record of its loop membership.
    var membership: LoopItem { self }

    /// Binds the item to `loop`; returns `false` if it already belongs to another loop.
    func bind(to loop: RingRunLoop) -> Bool {
        if let current = owner.load(ordering: .acquiring) { return current.takeUnretainedValue() === loop }
        let retained = Unmanaged.passRetained(loop)
        let (exchanged, current) = owner.compareExchange(
            expected: nil, desired: retained, ordering: .acquiringAndReleasing)
        if exchanged { return true }
        retained.release()
        return current?.takeUnretainedValue() === loop
    }

    /// How a stall report names the item: its label if it has one, else its kind and
    /// identity. Any thread (reads constants only).
    var stallDescription: String { "\(type(of: self)) \(ObjectIdentifier(self))" }

    /// Releases the binding once the item is in no mode (so it can join another loop).
    func unbindIfUnused() {
        if modeMask == 0 { owner.exchange(nil, ordering: .acquiringAndReleasing)?.release() }
    }
}

/// A version-0 source (`CFRunLoopSource` with a version 0 context): signalled by hand from
/// any thread, performed by its loop in the sources phase, by `order` and then by the
/// time it was signalled.
///
/// ```swift
/// let source = LoopSource(order: 0) { print("performed") }
/// loop.add(source, to: .default)
/// source.signal()      // from any thread
/// loop.wakeUp()        // if the loop may be asleep
/// ```
///
/// Callbacks run on the loop's thread. They are `@Sendable`, since the loop may run on
/// another thread than the one that made the source: keep their state in a ``LoopBound``.
/// Signalling does not wake the loop, as in CoreFoundation: call ``RingRunLoop/wakeUp()``
/// after signalling from another thread.
public final class LoopSource: LoopItem, @unchecked Sendable {
    // @unchecked: a subclass cannot be checked (its superclass is unchecked); its own
    // state is constants, `@Sendable` closures and atomics.

    /// Lower orders are performed first.
    public let order: Int
    /// A name for diagnostics (stall reports).
    public let label: String?
    let perform: @Sendable () -> Void
    let schedule: (@Sendable (RingRunLoop, RingRunLoop.Mode) -> Void)?
    let cancel: (@Sendable (RingRunLoop, RingRunLoop.Mode) -> Void)?

    private let signalled = Atomic<Bool>(false)
    /// When the source was last signalled (monotonic nanoseconds), for ordering ties.
    let signalTime = Atomic<UInt64>(0)

    /// Creates a source.
    /// - Parameters:
    ///   - order: Sources with lower orders are performed first in one pass.
    ///   - label: A name for diagnostics: stall reports name the source by it.
    ///   - schedule: Called on the loop's thread when the source is added to a mode.
    ///   - cancel: Called on the loop's thread when the source leaves a mode (removal or
    ///     invalidation).
    ///   - perform: Called on the loop's thread when the loop performs the signalled source.
    public init(
        order: Int = 0, label: String? = nil,
        schedule: (@Sendable (RingRunLoop, RingRunLoop.Mode) -> Void)? = nil,
        cancel: (@Sendable (RingRunLoop, RingRunLoop.Mode) -> Void)? = nil,
        perform: @escaping @Sendable () -> Void
    ) {
        self.order = order
        self.label = label
        self.schedule = schedule
        self.cancel = cancel
        self.perform = perform
    }

    override var stallDescription: String { label ?? "LoopSource (order \(order)) \(ObjectIdentifier(self))" }

    /// Marks the source ready to perform. Safe from any thread; does not wake the loop.
    public func signal() {
        if !signalled.load(ordering: .relaxed) {
            signalTime.store(MonotonicInstant.now.nanoseconds, ordering: .relaxed)
        }
        signalled.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether the source is signalled and not yet performed.
    public var isSignalled: Bool { signalled.load(ordering: .sequentiallyConsistent) }

    /// Whether, both signalled, it is performed before `other` in a pass: lower order
    /// first, then the one signalled first (loop thread).
    func isPerformed(before other: LoopSource) -> Bool {
        order != other.order
            ? order < other.order
            : signalTime.load(ordering: .relaxed) < other.signalTime.load(ordering: .relaxed)
    }

    /// Clears the signal; returns whether it was set (loop thread).
    func consumeSignal() -> Bool {
        signalled.load(ordering: .relaxed) && signalled.exchange(false, ordering: .sequentiallyConsistent)
    }

    /// Removes the source from every mode of its loop, calling `cancel` for each, and
    /// keeps it from ever performing again. Safe from any thread.
    public func invalidate() {
        guard markInvalid() else { return }
        loop?.removeEverywhere(self)
    }
}

/// A port-backed source (`CFRunLoopSource` version 1): performed by its loop in the
/// handle-message phase, once per message or readiness report, with what the port
/// delivered.
///
/// Two kinds of port:
/// - **readiness** of a file descriptor, watched by a multishot poll on the loop's ring;
///   reports arrive like `EPOLLET` (one per change), so drain the descriptor in the callout;
/// - **messages** rung on a ``LoopDoorbell``, sent from any thread, delivered in order, none
///   lost; messages that arrive while the source is not in the running mode wait for it.
public final class LoopPortSource: LoopItem, @unchecked Sendable {
    // @unchecked: the pending state is used on the loop's thread only; the callbacks are
    // `@Sendable`.

    /// What the source watches.
    public enum Port: Sendable {
        /// Readiness of a file descriptor for `poll` events.
        case readiness(fileDescriptor: FileDescriptor, events: PollEvents)
        /// Messages rung on a doorbell.
        case doorbell(LoopDoorbell)
        /// Completions of the I/O operations of a ``LoopIOChannel`` on a descriptor.
        case operations(fileDescriptor: FileDescriptor)
    }

    /// Lower orders are listed first; performs follow arrival order.
    public let order: Int
    /// The port the source watches.
    public let port: Port

    let onReadiness: (@Sendable (Int16) -> Void)?
    let onMessage: (@Sendable (LoopDoorbell.Message) -> Void)?

    /// The ring registration while the source is in a mode of its loop (loop thread).
    var readinessPort: PortID?
    /// Readiness reported and not yet performed, OR-ed together (loop thread).
    var pendingReadiness: Int16 = 0
    /// Why the descriptor could not be watched, when `perform` got `POLLNVAL` because
    /// arming, re-arming or the poll itself failed (loop thread; `nil` otherwise).
    public var failure: RingError? {
        loop?.preconditionOnLoopThread("LoopPortSource.failure")
        return armingFailure
    }
    var armingFailure: RingError?

    /// A source performed whenever `fileDescriptor` reports `events` (by default
    /// ``PollEvents/readable``). `perform` receives the reported events;
    /// ``PollEvents/invalid`` means the descriptor is no longer watchable (for example
    /// closed), and the source stops watching it. The loop does not own the descriptor:
    /// invalidate the source before closing it.
    public init(
        fileDescriptor: FileDescriptor, events: PollEvents = .readable, order: Int = 0,
        perform: @escaping @Sendable (_ events: PollEvents) -> Void
    ) {
        self.order = order
        self.port = .readiness(fileDescriptor: fileDescriptor, events: events)
        self.onReadiness = { mask in perform(PollEvents(rawValue: mask)) }
        self.onMessage = nil
    }

    /// The source of a ``LoopIOChannel``: performed once per completion of its operations.
    init(channelOf fileDescriptor: FileDescriptor, order: Int) {
        self.order = order
        self.port = .operations(fileDescriptor: fileDescriptor)
        self.onReadiness = nil
        self.onMessage = nil
    }

    /// The source whose modes this one is performed in, instead of its own (loop thread;
    /// set once, before the source's first operation): a named port's transport follows
    /// the port's source into every mode it is in. Such a source is never added to a mode
    /// itself.
    private weak var leader: LoopPortSource?

    /// Whether performing the source counts as handling a source for
    /// `returnAfterSourceHandled`. A transport's internal completions do not; the callout
    /// they make to the user's callback does (``RingRunLoop/noteSourceHandled()``).
    private(set) var countsAsHandled = true

    /// Makes the source follow `leader`'s modes and not count as handled by itself.
    func follow(_ leader: LoopPortSource) {
        self.leader = leader
        countsAsHandled = false
    }

    override var membership: LoopItem { leader ?? self }

    /// A source performed once per message rung on `port`, in order.
    public init(doorbell port: LoopDoorbell, order: Int = 0, perform: @escaping @Sendable (LoopDoorbell.Message) -> Void) {
        self.order = order
        self.port = .doorbell(port)
        self.onReadiness = nil
        self.onMessage = perform
    }

    /// Removes the source from every mode of its loop and stops watching its port.
    /// Safe from any thread.
    public func invalidate() {
        guard markInvalid() else { return }
        loop?.removeEverywhere(self)
    }

}

/// An observer of a loop's activities (`CFRunLoopObserver`): called at the stages in
/// `activities` of every run in the modes it is in, by `order`.
///
/// ```swift
/// let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
///     print(activity)
/// }
/// loop.add(observer, to: .common)
/// ```
public final class LoopObserver: LoopItem, @unchecked Sendable {
    // @unchecked: `firing` is used on the loop's thread only; the callback is `@Sendable`.

    /// The stages the observer is called for.
    public let activities: RingRunLoop.Activity
    /// Whether it is called more than once; a non-repeating observer is invalidated after
    /// its first call.
    public let repeats: Bool
    /// Lower orders are called first; equal orders in the order they were added.
    public let order: Int
    /// A name for diagnostics (stall reports).
    public let label: String?
    let callback: @Sendable (LoopObserver, RingRunLoop.Activity) -> Void
    /// Set while the callback runs, so a nested run does not call it again (loop thread).
    var firing = false

    /// Creates an observer of `activities`; `label` names it in stall reports.
    public init(
        activities: RingRunLoop.Activity, repeats: Bool = true, order: Int = 0, label: String? = nil,
        _ callback: @escaping @Sendable (LoopObserver, RingRunLoop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.label = label
        self.callback = callback
    }

    override var stallDescription: String { label ?? "LoopObserver (order \(order)) \(ObjectIdentifier(self))" }

    /// Removes the observer from its loop; it is never called again. Safe from any thread.
    public func invalidate() {
        guard markInvalid() else { return }
        loop?.removeEverywhere(self)
    }
}
