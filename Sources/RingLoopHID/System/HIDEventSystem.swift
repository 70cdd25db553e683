import Logging
import RingLoop
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What a handler did with an event.
public enum HIDHandlerResult: Sendable {
    /// Let later handlers see it too.
    case pass
    /// Stop here: later handlers do not see it.
    case consumed
}

/// A registered handler, for removal.
public struct HIDHandlerToken: Hashable, Sendable {
    let rawValue: UInt64
}

/// The input chain, as IOHIDEvents reach an app: devices are read through the ring
/// (source1), decoded into ``HIDEvent``s, queued in a bounded, allocation-free queue, and
/// delivered by a source0 to handler callbacks on the client's loop.
///
/// Two shapes:
/// - ``Shape/clientLoop``: devices are read on the client's own loop (fewest hops);
/// - ``Shape/dedicatedThread``: an event-system thread reads devices and forwards
///   events to the client's loop through a message port, so a slow handler never
///   makes the kernel drop events.
///
/// ```swift
/// let system = HIDEventSystem(configuration: .init(deviceDirectory: "/dev/input"))
/// system.addHandler(kinds: [.key]) { event in
///     if case .key(let key) = event.payload { print(key.code, key.state) }
///     return .pass
/// }
/// try system.start()
/// RingRunLoop.current.run()
/// ```
///
/// Thread rules: create, start, add handlers and stop on the client loop's thread.
public final class HIDEventSystem {
    /// Where devices are read.
    public enum Shape: String, Sendable, CaseIterable {
        case clientLoop
        case dedicatedThread
    }

    /// Settings of an event system.
    public struct Configuration: Sendable {
        /// The folder of evdev nodes to enumerate and watch.
        public var deviceDirectory: String
        public var shape: Shape
        /// Events the client's queue holds before it drops (and reports) the rest.
        public var queueCapacity: Int
        /// Grab devices (EVIOCGRAB) so no one else reads them.
        public var grabDevices: Bool
        /// A dispatch later than this after the kernel's timestamp is counted and logged.
        public var lateThreshold: Duration
        /// Opening a new node is retried this many times (permissions settle after udev).
        public var openAttempts: Int
        public var retryInterval: Duration
        /// Attach only nodes with these names (`event3`…); `nil` attaches every node.
        public var nodeNames: Set<String>?

        public init(
            deviceDirectory: String = "/dev/input", shape: Shape = .clientLoop, queueCapacity: Int = 1024,
            grabDevices: Bool = false, lateThreshold: Duration = .milliseconds(50), openAttempts: Int = 10,
            retryInterval: Duration = .milliseconds(50), nodeNames: Set<String>? = nil
        ) {
            self.nodeNames = nodeNames
            self.deviceDirectory = deviceDirectory
            self.shape = shape
            self.queueCapacity = queueCapacity
            self.grabDevices = grabDevices
            self.lateThreshold = lateThreshold
            self.openAttempts = openAttempts
            self.retryInterval = retryInterval
        }
    }

    /// Counters of an event system (client loop thread).
    public struct Statistics: Sendable, Hashable {
        /// Events handed to handlers.
        public var delivered = 0
        /// Events the queue dropped.
        public var dropped = 0
        /// Dispatches later than the configured threshold.
        public var late = 0
    }

    public let configuration: Configuration
    public private(set) var statistics = Statistics()
    /// Problems with devices (could not open, not evdev…), oldest first; they are
    /// reported here and logged, never fatal.
    public private(set) var problems: [HIDError] = []

    private let loop: RingRunLoop
    private var queue: HIDEventQueue
    private var dispatchSource: LoopSource?
    private var handlers: [(token: HIDHandlerToken, filter: Filter, body: (HIDEvent) -> HIDHandlerResult, active: Bool)] = []
    private var nextToken: UInt64 = 1
    private var dispatching = false
    private var lastLateLog = MonotonicInstant(nanoseconds: 0)
    private let deviceTable = DeviceTable()
    static let logger = Logger(label: "RingLoop.HID")

    // Shape clientLoop
    private var monitor: DeviceMonitor?
    // Shape dedicatedThread
    private var readerThread: LoopThread?
    private var forwarder: Forwarder?
    private var forwardSource: LoopPortSource?

    struct Filter {
        var kinds: Set<HIDEvent.Kind>?
        var classes: Set<HIDDeviceClass>?
        var device: HIDDeviceID?
        var usage: HIDUsage?
    }

    /// Creates an event system whose handlers run on `loop` (the current thread's).
    public init(configuration: Configuration = Configuration(), loop: RingRunLoop = .current) {
        self.configuration = configuration
        self.loop = loop
        self.queue = HIDEventQueue(capacity: configuration.queueCapacity)
    }

    deinit { stop() }

    /// The attached devices. Safe from any thread.
    public var devices: [HIDDeviceInfo] { deviceTable.all }

    /// Raw evdev events read from the kernel so far (client-loop shape; loop thread).
    var rawEventsRead: Int { monitor?.totalEventsRead ?? forwarder?.eventsRead ?? 0 }

    /// The device with `id`, if attached.
    public func device(_ id: HIDDeviceID) -> HIDDeviceInfo? { deviceTable.all.first { $0.id == id } }

    // MARK: Handlers

    /// Registers a handler for events matching every given filter (`nil`: any).
    /// Handlers run in registration order on the client loop; one that returns
    /// ``HIDHandlerResult/consumed`` stops the event. Handlers may be added or removed
    /// from inside a handler (the change applies from the next event).
    @discardableResult
    public func addHandler(
        kinds: Set<HIDEvent.Kind>? = nil, deviceClasses: Set<HIDDeviceClass>? = nil, device: HIDDeviceID? = nil,
        usage: HIDUsage? = nil, _ body: @escaping (HIDEvent) -> HIDHandlerResult
    ) -> HIDHandlerToken {
        let token = HIDHandlerToken(rawValue: nextToken)
        nextToken += 1
        handlers.append((token, Filter(kinds: kinds, classes: deviceClasses, device: device, usage: usage), body, true))
        return token
    }

    /// Removes a handler; it is not called again, even for the event being dispatched.
    public func removeHandler(_ token: HIDHandlerToken) {
        for index in handlers.indices where handlers[index].token == token { handlers[index].active = false }
        if !dispatching { handlers.removeAll { !$0.active } }
    }

    // MARK: Starting and stopping

    /// Enumerates the device folder, attaches what is there and follows hotplug.
    public func start() throws(HIDError) {
        let dispatch = LoopSource(order: 0) { [unowned self] in self.drainQueue() }
        dispatchSource = dispatch
        loop.add(dispatch, to: .common)
        let settings = DeviceMonitor.Settings(
            directory: configuration.deviceDirectory, grab: configuration.grabDevices,
            openAttempts: configuration.openAttempts, retryInterval: configuration.retryInterval,
            nodeNames: configuration.nodeNames)
        switch configuration.shape {
        case .clientLoop:
            let monitor = DeviceMonitor(
                settings: settings, loop: loop,
                sink: { [unowned self] event in self.enqueue(event) },
                onError: { [unowned self] error in self.report(error) },
                onDevicesChanged: { [deviceTable] in deviceTable.replace($0) })
            self.monitor = monitor
            try monitor.start()
        case .dedicatedThread:
            let port = loop.makeMessagePort()
            let forwarder = Forwarder(capacity: configuration.queueCapacity, port: port)
            self.forwarder = forwarder
            let source = LoopPortSource(port: port) { [unowned self] _ in self.takeForwarded() }
            forwardSource = source
            loop.add(source, to: .common)
            let thread = LoopThread(name: "hid-events")
            readerThread = thread
            let table = deviceTable
            let startError = ThreadLockValue<HIDError?>(nil)
            let started = ThreadLockValue<Bool>(false)
            thread.perform {
                let monitor = DeviceMonitor(
                    settings: settings, loop: RingRunLoop.current,
                    sink: { forwarder.push($0) },
                    onError: { forwarder.pushProblem($0) },
                    onDevicesChanged: { table.replace($0) })
                do {
                    try monitor.start()
                    forwarder.monitor = monitor
                } catch {
                    startError.set(error as? HIDError ?? .ring("\(error)"))
                }
                forwarder.flush()
                started.set(true)
            }
            while !started.get() { sched_yield() }
            if let error = startError.get() {
                stop()
                throw error
            }
        }
    }

    /// Detaches every device (clients see releases, cancels and removals) and stops.
    public func stop() {
        if let monitor {
            monitor.stop()
            self.monitor = nil
            drainQueue()
        }
        if let thread = readerThread, let forwarder {
            thread.perform {
                forwarder.monitor?.stop()
                forwarder.monitor = nil
                forwarder.flush()
            }
            thread.stopAndJoin()
            readerThread = nil
            takeForwarded()
            drainQueue()
        }
        forwardSource?.invalidate()
        forwardSource = nil
        dispatchSource?.invalidate()
        dispatchSource = nil
    }

    // MARK: The chain

    private func report(_ error: HIDError) {
        problems.append(error)
        Self.logger.warning("\(error)")
    }

    /// Source1 side: queue an event and signal the dispatch source0.
    private func enqueue(_ event: HIDEvent) {
        queue.push(event)
        dispatchSource?.signal()
    }

    /// Dedicated-thread shape: move forwarded events into the queue.
    private func takeForwarded() {
        guard let forwarder else { return }
        let (dropped, problems) = forwarder.drain { enqueue($0) }
        if dropped > 0 {
            statistics.dropped += dropped
            enqueueDropNotice(dropped)
        }
        for problem in problems { report(problem) }
    }

    private func enqueueDropNotice(_ count: Int) {
        _ = queue.push(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .eventsDropped(count: count)))
        dispatchSource?.signal()
    }

    /// Source0: deliver every queued event to the handlers.
    private func drainQueue() {
        let dropped = queue.takeDroppedCount()
        if dropped > 0 {
            statistics.dropped += dropped
            deliver(HIDEvent(device: HIDDeviceID(rawValue: 0), timestamp: .now, payload: .eventsDropped(count: dropped)))
            resyncAfterDrop()
        }
        while let event = queue.pop() { deliver(event) }
    }

    /// After the queue dropped events, tell handlers what is held now: a key-down for
    /// every key still down, per device.
    private func resyncAfterDrop() {
        guard let monitor else { return }
        for info in monitor.devices {
            guard let reader = monitor.reader(for: info.id) else { continue }
            for code in reader.heldKeys where code < 0x100 || code >= 0x160 {
                deliver(
                    HIDEvent(
                        device: info.id, timestamp: .now,
                        payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: .down, modifiers: []))))
            }
        }
    }

    private func deliver(_ event: HIDEvent) {
        statistics.delivered += 1
        let lag = MonotonicInstant.now - event.timestamp
        if lag > configuration.lateThreshold, event.kind != .eventsDropped {
            statistics.late += 1
            let now = MonotonicInstant.now
            if now - lastLateLog > .seconds(1) {
                lastLateLog = now
                Self.logger.warning("HID event dispatched \(lag) after the kernel stamped it (\(statistics.late) late so far)")
            }
        }
        let deviceClass = deviceTable.deviceClass(event.device)
        dispatching = true
        defer {
            dispatching = false
            if handlers.contains(where: { !$0.active }) { handlers.removeAll { !$0.active } }
        }
        let count = handlers.count
        var index = 0
        while index < count {
            defer { index += 1 }
            guard handlers[index].active, matches(handlers[index].filter, event, deviceClass) else { continue }
            if Self.callHandler(handlers[index].body, event) == .consumed { return }
        }
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    private static func callHandler(_ body: (HIDEvent) -> HIDHandlerResult, _ event: HIDEvent) -> HIDHandlerResult {
        body(event)
    }

    private func matches(_ filter: Filter, _ event: HIDEvent, _ deviceClass: HIDDeviceClass?) -> Bool {
        if let kinds = filter.kinds, !kinds.contains(event.kind) { return false }
        if let device = filter.device, device != event.device { return false }
        if let classes = filter.classes {
            guard let deviceClass, classes.contains(deviceClass) else { return false }
        }
        if let usage = filter.usage {
            guard case .key(let key) = event.payload, key.usage == usage else { return false }
        }
        return true
    }
}

/// Attached devices, shared between the reading loop and the client. A removed
/// device's class stays known, so its last events still match class filters.
final class DeviceTable: @unchecked Sendable {
    private let state = ThreadLockValue<(attached: [HIDDeviceInfo], classes: [HIDDeviceID: HIDDeviceClass])>(([], [:]))
    func replace(_ devices: [HIDDeviceInfo]) {
        state.mutate { state in
            state.attached = devices
            for device in devices { state.classes[device.id] = device.deviceClass }
        }
    }
    var all: [HIDDeviceInfo] { state.get().attached }
    func deviceClass(_ id: HIDDeviceID) -> HIDDeviceClass? { state.get().classes[id] }
}

/// Events crossing from the event-system thread to the client's loop: a bounded buffer
/// and a message port that rings once per batch.
final class Forwarder: @unchecked Sendable {
    // @unchecked: `monitor` is touched on the reading thread only; the rest is locked.
    private let state: ThreadLockValue<(events: [HIDEvent], dropped: Int, problems: [HIDError], pending: Bool)>
    private let capacity: Int
    private let port: MessagePort
    var monitor: DeviceMonitor?
    /// Raw events the reading thread has read (for tests).
    var eventsRead: Int { readCount.load(ordering: .acquiring) }
    let readCount = Atomic<Int>(0)

    init(capacity: Int, port: MessagePort) {
        self.capacity = capacity
        self.port = port
        state = ThreadLockValue(([], 0, [], false))
    }

    /// Reading thread: buffers an event (drops and counts it when the client lags).
    func push(_ event: HIDEvent) {
        if let monitor { readCount.store(monitor.totalEventsRead, ordering: .releasing) }
        let ring = state.mutate { state -> Bool in
            if state.events.count < capacity { state.events.append(event) } else { state.dropped += 1 }
            if state.pending { return false }
            state.pending = true
            return true
        }
        if ring { port.send(1) }
    }

    func pushProblem(_ problem: HIDError) {
        state.mutate { $0.problems.append(problem) }
        port.send(2)
    }

    func flush() {
        readCount.store(monitor?.totalEventsRead ?? readCount.load(ordering: .relaxed), ordering: .releasing)
        port.send(0)
    }

    /// Client loop: takes every buffered event, in order.
    func drain(_ body: (HIDEvent) -> Void) -> (dropped: Int, problems: [HIDError]) {
        let (events, dropped, problems) = state.mutate { state -> ([HIDEvent], Int, [HIDError]) in
            defer {
                state.events.removeAll(keepingCapacity: true)
                state.dropped = 0
                state.problems = []
                state.pending = false
            }
            return (state.events, state.dropped, state.problems)
        }
        for event in events { body(event) }
        return (dropped, problems)
    }
}

/// A value behind a pthread mutex (visible to ThreadSanitizer).
final class ThreadLockValue<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value
    init(_ value: Value) {
        self.value = value
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func get() -> Value { mutate { $0 } }
    func set(_ new: Value) { mutate { $0 = new } }
    @discardableResult
    func mutate<T>(_ body: (inout Value) -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }
}
