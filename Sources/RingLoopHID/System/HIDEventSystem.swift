import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

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
/// Thread rules: create, start, add handlers and stop on the client loop's thread; `start`,
/// `stop`, `addHandler` and `removeHandler` check it and stop the process with a message
/// when called from another thread (as swift-nio's `preconditionInEventLoop`).
public final class HIDEventSystem {
    /// Where devices are read.
    public enum Shape: String, Sendable, CaseIterable {
        case clientLoop
        case dedicatedThread
    }

    /// Where an event system's events come from: one setting, one case per source.
    public enum Input: Sendable {
        /// The evdev nodes of a folder (and the streams attached with
        /// ``HIDEventSystem/attachStream(fileDescriptor:description:)``).
        case devices(DeviceFolder)
        /// The devices of an event server (``HIDEventServer``, `ringloop serve NAME`), whose
        /// events arrive at a port of this process.
        case server(ServerAttachment)
        /// The devices a player hosts (a `ReplaySession` of recordings): exactly its nodes
        /// are attached, read with `shape`, and the player starts once the system has every
        /// one of them; `finished` runs on the client's loop when it has played them and the
        /// handlers have had every event it sent (its nodes hold nothing unread, nothing is
        /// on its way from the event-system thread, the queue is empty), or at once if the
        /// system has stopped.
        case player(any EvdevNodePlayer, shape: Shape = .clientLoop, finished: (@Sendable () -> Void)? = nil)
        /// No device: only the events an app posts (``HIDEventSystem/post(_:)``) and the
        /// streams it attaches.
        case postedOnly
    }

    /// A folder of evdev nodes and how to read them.
    public struct DeviceFolder: Sendable, Hashable {
        /// The folder to enumerate and watch.
        public var path: String
        /// Attach only nodes with these names (`event3`…); `nil` attaches every node.
        public var nodeNames: Set<String>?
        /// Where the nodes are read: on the client's loop or on an event-system thread.
        public var shape: Shape
        /// CPUs the event-system thread may run on (`dedicatedThread` shape; `nil`: any).
        /// Putting it on the client loop's CPU turns the hand-off into a context switch
        /// instead of a wake-up of another CPU.
        public var eventThreadCPUs: [Int]?
        /// Grab the devices (EVIOCGRAB) so no one else reads them.
        public var grab: Bool
        /// Opening a new node is retried this many times (permissions settle after udev).
        public var openAttempts: Int
        /// The wait between two attempts to open a node.
        public var retryInterval: Duration
        /// How devices are read: through the ring (``DeviceReadPath/ring``, the default)
        /// for evdev nodes and stream devices (pipes and sockets), and by poll then read
        /// for virtual devices (FUSE nodes, where it costs their server fewer round trips)
        /// and wherever the kernel cannot (it falls back per device, as when the kernel
        /// predates multishot reads); ``DeviceReadPath/poll`` reads everything by poll then read.
        public var readPath: DeviceReadPath
        /// While udevd runs, a new node that udev has not initialized yet (its rules have
        /// not run: no `ID_INPUT_*`, calibration or `MOUSE_DPI` yet) waits for udev's
        /// database entry before it is attached, as libinput waits for udev's `add` event;
        /// after this long it is attached anyway, with a warning naming it. Where no udevd
        /// runs, nothing waits.
        public var udevInitializationTimeout: Duration

        /// The nodes of `path`, read as given.
        public init(
            path: String = "/dev/input", nodeNames: Set<String>? = nil, shape: Shape = .clientLoop,
            eventThreadCPUs: [Int]? = nil, grab: Bool = false, openAttempts: Int = 10,
            retryInterval: Duration = .milliseconds(50), readPath: DeviceReadPath = .ring,
            udevInitializationTimeout: Duration = .seconds(2)
        ) {
            self.path = path
            self.nodeNames = nodeNames
            self.shape = shape
            self.eventThreadCPUs = eventThreadCPUs
            self.grab = grab
            self.openAttempts = openAttempts
            self.retryInterval = retryInterval
            self.readPath = readPath
            self.udevInitializationTimeout = udevInitializationTimeout
        }
    }

    /// Settings of an event system.
    public struct Configuration: Sendable {
        /// Where events come from.
        public var input: Input
        /// Events the client's queue holds before it drops (and reports) the rest.
        public var queueCapacity: Int
        /// A dispatch later than this after the kernel's timestamp is counted and logged.
        public var lateThreshold: Duration
        /// Key repeat generated by loop timers (delay before the first repeat, then the
        /// interval), replacing the kernel's repeats; `nil` passes the kernel's through.
        public var keyRepeat: (delay: Duration, interval: Duration)?
        /// Merges the pointer motion, touch moves and motion-sensor samples of one loop
        /// pass into one event each, delivered when the loop is about to wait (like UIKit's
        /// gesture observer at BeforeWaiting); other events flush what is pending first, so
        /// order holds. A sensor at 1 kHz then reaches handlers once a pass, its newest
        /// sample counting the rest (``MotionEvent/sampleCount``); shake and orientation
        /// recognizers still see every sample.
        public var coalesceMotion: Bool
        /// Runs the client loop in `RingRunLoop.Mode.tracking` (nested, and marked
        /// common) while the user drags on a touchscreen or touchpad, as a scroll view runs
        /// the main loop in `UITrackingRunLoopMode`: timers and sources of the default mode
        /// wait until the drag ends, those in the common modes go on. A drag is a pan of
        /// any number of fingers (or any recognizer whose
        /// ``GestureRecognizer/tracksInteraction`` is set) from when it begins until it ends.
        public var tracksInteractions: Bool
        /// Gives relative devices a pointer (the pointer stage, ``PointerSettings``):
        /// acceleration, a cursor over the screens, natural scrolling and a scroll factor,
        /// debounced buttons; `nil` (the default) leaves their events raw. Each device's
        /// own settings (``HIDEventSystem/setScreens(_:)``'s files, udev's `MOUSE_DPI`)
        /// win over these. ``HIDEventSystem/setPointer(_:)`` changes it while running.
        public var pointer: PointerSettings?
        /// Touchpads as pointers from the start (the touchpad stage, as
        /// ``HIDEventSystem/setTouchpadSettings(_:)`` sets it); `nil`: touchpads give
        /// contacts only.
        public var touchpad: TouchpadSettings? = nil

        /// A system whose events come from `input`.
        public init(
            input: Input, queueCapacity: Int = 1024, lateThreshold: Duration = .milliseconds(50),
            keyRepeat: (delay: Duration, interval: Duration)? = nil, coalesceMotion: Bool = false,
            tracksInteractions: Bool = false
        ) {
            self.input = input
            self.queueCapacity = queueCapacity
            self.lateThreshold = lateThreshold
            self.keyRepeat = keyRepeat
            self.coalesceMotion = coalesceMotion
            self.tracksInteractions = tracksInteractions
        }

        /// A system that reads the evdev nodes of `deviceDirectory` (``Input/devices(_:)``),
        /// the other device settings as ``DeviceFolder`` has them.
        public init(
            deviceDirectory: String = "/dev/input", shape: Shape = .clientLoop, queueCapacity: Int = 1024,
            grabDevices: Bool = false, lateThreshold: Duration = .milliseconds(50), openAttempts: Int = 10,
            retryInterval: Duration = .milliseconds(50), nodeNames: Set<String>? = nil,
            keyRepeat: (delay: Duration, interval: Duration)? = nil, coalesceMotion: Bool = false,
            eventThreadCPUs: [Int]? = nil, tracksInteractions: Bool = false, readPath: DeviceReadPath = .ring
        ) {
            self.init(
                input: .devices(
                    DeviceFolder(
                        path: deviceDirectory, nodeNames: nodeNames, shape: shape, eventThreadCPUs: eventThreadCPUs,
                        grab: grabDevices, openAttempts: openAttempts, retryInterval: retryInterval, readPath: readPath)),
                queueCapacity: queueCapacity, lateThreshold: lateThreshold, keyRepeat: keyRepeat,
                coalesceMotion: coalesceMotion, tracksInteractions: tracksInteractions)
        }

        /// A system that reads exactly the devices `player` hosts and starts it once it has
        /// them all (``Input/player(_:shape:finished:)``): a `ReplaySession` replays its
        /// recordings into the chain in one call. `finished` runs on the client's loop once
        /// the handlers have had every event the player sent.
        public init(
            replaying player: any EvdevNodePlayer, shape: Shape = .clientLoop, queueCapacity: Int = 1024,
            keyRepeat: (delay: Duration, interval: Duration)? = nil, coalesceMotion: Bool = false,
            tracksInteractions: Bool = false, finished: (@Sendable () -> Void)? = nil
        ) {
            self.init(
                input: .player(player, shape: shape, finished: finished), queueCapacity: queueCapacity,
                keyRepeat: keyRepeat, coalesceMotion: coalesceMotion, tracksInteractions: tracksInteractions)
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
    public internal(set) var statistics = Statistics()
    /// Problems with devices (could not open, not evdev…), oldest first; they are
    /// reported here and logged, never fatal.
    public internal(set) var problems: [HIDError] = []

    let loop: RingRunLoop
    var queue: HIDEventQueue
    /// The source0 that drains the queue into the stages.
    var dispatchSource: LoopSource?
    /// The drain's stages (``stageOrder``), the handlers among them.
    var pipeline: HIDEventPipeline!
    /// Finishes each stream made by ``events(kinds:deviceClasses:buffer:)`` (at stop).
    var streamFinishers: [() -> Void] = []
    let deviceTable = DeviceTable()
    /// Whether each device is attached and as what class (the settings of ``setScreens(_:)``
    /// and udev's properties), and what each device's attach read and resolved.
    let attachPolicy: DeviceAttachPolicy
    /// The readers' `read(2)` calls (the ring path makes none), on any thread.
    let readCalls = ReadCallCounter()
    /// What the chain knows of each device at its boundaries, and what was lost since the
    /// last repair.
    var ledgers = DeliveryLedgers()
    /// Where devices are read (``Shape``), while started.
    var feed: (any DeviceFeed)?
    /// What waits for the input on its way to have been delivered (``afterInputDelivered(_:)``).
    var deliveryWaiters: [() -> Void] = []
    /// Runs ``deliveryWaiters`` at BeforeWaiting, while any wait.
    var deliveryObserver: LoopObserver?

    /// `read(2)` calls made to take events off devices so far: 0 on the ring path. Any thread.
    package var readSystemCalls: Int { readCalls.count.load(ordering: .relaxed) }
    /// Raw events read from every device so far, by either shape. Safe from any thread
    /// (for a writer that paces itself by what the chain has read).
    package var rawEventsReadAnyThread: Int { readCalls.events.load(ordering: .relaxed) }
    static let logger = Logger(label: "RingLoop.HID")

    /// Creates an event system whose handlers run on `loop` (the current thread's).
    public convenience init(configuration: Configuration = Configuration(), loop: RingRunLoop = .current) {
        self.init(configuration: configuration, loop: loop, attachPolicy: DeviceAttachPolicy())
    }

    /// A system whose devices' attaches go through `attachPolicy` (tests give one reading
    /// udev their own way).
    init(configuration: Configuration, loop: RingRunLoop, attachPolicy: DeviceAttachPolicy) {
        self.configuration = configuration
        self.loop = loop
        self.attachPolicy = attachPolicy
        self.queue = HIDEventQueue(capacity: configuration.queueCapacity)
        pipeline = HIDEventPipeline(handlers: HandlerStage(system: self))
    }

    deinit { stop() }

    /// The attached devices. Safe from any thread.
    public var devices: [HIDDeviceInfo] { deviceTable.all }

    /// The nodes not attached yet because udevd runs and has not initialized them (its
    /// rules have not run on them), by path: each is attached once udevd writes its
    /// database entry, or after ``DeviceFolder/udevInitializationTimeout``. Empty where no
    /// udevd runs. Safe from any thread.
    public var nodesWaitingForUdev: Set<String> { attachPolicy.nodesWaitingForUdev }

    /// Raw evdev events read from the kernel so far, by either shape; loop thread. With a
    /// dedicated thread, exact once a delivery notice asked since the last read is
    /// answered (``afterInputDelivered(_:)``).
    var rawEventsRead: Int { feed?.eventsRead ?? 0 }

    /// The device with `id`, if attached.
    public func device(_ id: HIDDeviceID) -> HIDDeviceInfo? { deviceTable.all.first { $0.id == id } }

    /// The other attached nodes of the physical device `id` belongs to
    /// (``HIDDeviceInfo/physicalDevice``): a DualSense's motion sensors find its gamepad
    /// and touchpad, as libinput groups devices. Empty when the kernel names no physical
    /// device for it. Safe from any thread.
    public func siblings(of id: HIDDeviceID) -> [HIDDeviceInfo] {
        let all = deviceTable.all
        guard let group = all.first(where: { $0.id == id })?.physicalDevice else { return [] }
        return all.filter { $0.id != id && $0.physicalDevice == group }
    }

    // MARK: Starting and stopping

    /// Enumerates the device folder, attaches what is there and follows hotplug.
    public func start() throws(HIDError) {
        loop.preconditionOnLoopThread("HIDEventSystem.start")
        let system = UnownedLoopReference(self, loop: loop)
        let dispatch = LoopSource(order: 0, label: "HIDEventSystem dispatch") { system.value.drainQueue() }
        dispatchSource = dispatch
        loop.add(dispatch, to: .common)
        if let keyRepeat = configuration.keyRepeat {
            pipeline.keyRepeat = KeyRepeatStage(delay: keyRepeat.delay, interval: keyRepeat.interval)
        }
        if configuration.coalesceMotion { pipeline.coalescing = CoalescingStage() }
        if let pointer = configuration.pointer, pipeline.pointer == nil { pipeline.pointer = PointerStage(defaults: pointer) }
        if let touchpad = configuration.touchpad, pipeline.touchpad == nil { pipeline.touchpad = TouchpadStage(settings: touchpad) }
        if configuration.tracksInteractions, pipeline.gestures == nil {
            pipeline.gestures = GestureStage(tracksInteractions: true)
        }
        pipeline.start(HIDStageContext(system: self))
        let feed: any DeviceFeed
        do throws(HIDError) {
            feed = try makeFeed()
        } catch {
            stop()  // takes back the sources added above
            throw error
        }
        self.feed = feed
        do throws(HIDError) { try feed.start() } catch {
            stop()
            throw error
        }
    }

    /// The feed ``Configuration/input`` asks for.
    private func makeFeed() throws(HIDError) -> any DeviceFeed {
        let sink: (HIDEvent) -> Void = { [unowned self] event in self.enqueue(event) }
        let onError: (HIDError) -> Void = { [unowned self] error in self.report(error) }
        let folder: DeviceFolder
        switch configuration.input {
        case .server(let attachment):
            return ServerDeviceFeed(attachment: attachment, loop: loop, sink: sink, onError: onError, table: deviceTable)
        case .devices(let devices):
            folder = devices
        case .postedOnly:
            folder = DeviceFolder(path: "", nodeNames: [])
        case .player(let player, let shape, let finished):
            folder = DeviceFolder(path: player.deviceFolderPath, nodeNames: player.playedNodeNames, shape: shape)
            let inner = try makeFolderFeed(folder, sink: sink, onError: onError)
            return PlayerDeviceFeed(
                inner: inner, player: player, table: deviceTable, attachPolicy: attachPolicy, loop: loop,
                finished: finished, afterInputDelivered: { [unowned self] body in self.afterInputDelivered(body) })
        }
        return try makeFolderFeed(folder, sink: sink, onError: onError)
    }

    private func makeFolderFeed(
        _ folder: DeviceFolder, sink: @escaping (HIDEvent) -> Void, onError: @escaping (HIDError) -> Void
    ) throws(HIDError) -> any DeviceFeed {
        let settings = DeviceMonitor.Settings(
            directory: folder.path.isEmpty ? nil : folder.path, grab: folder.grab, openAttempts: folder.openAttempts,
            retryInterval: folder.retryInterval, nodeNames: folder.nodeNames, readPath: folder.readPath,
            readCalls: readCalls, attachPolicy: attachPolicy, udevInitializationTimeout: folder.udevInitializationTimeout)
        switch folder.shape {
        case .clientLoop:
            return LocalDeviceFeed(settings: settings, loop: loop, sink: sink, onError: onError, table: deviceTable)
        case .dedicatedThread:
            if let cpus = folder.eventThreadCPUs {
                do { try CPUAffinity.validate(cpus: cpus) } catch { throw .configuration("eventThreadCPUs: \(error)") }
            }
            let system = UnownedLoopReference(self, loop: loop)
            return try ThreadedDeviceFeed(
                settings: settings, capacity: configuration.queueCapacity, cpus: folder.eventThreadCPUs,
                clientLoop: loop, table: deviceTable, onArrival: { system.value.takeForwarded() })
        }
    }

    /// Attaches a device whose events arrive as `struct input_event` records on a stream
    /// (a pipe, a socket pair), exactly as an evdev node delivers them, described by
    /// `description` (``HIDDeviceInfo/init(description:id:path:)`` of a description made in
    /// code or a recording's). The chain reads it as it reads a node — in the ring, decoded,
    /// queued, dispatched — without FUSE or uinput: for latency measurements, tests and
    /// programs that get input from another process. The system owns `fileDescriptor`
    /// from here (it is made non-blocking); the end of the stream is the device's
    /// removal. There is no state to read back after a loss (no ioctls): the decoder's
    /// own view is the truth. Client loop thread, while started.
    @discardableResult
    public func attachStream(fileDescriptor: FileDescriptor, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        loop.preconditionOnLoopThread("HIDEventSystem.attachStream")
        guard let feed else {
            close(fileDescriptor.rawValue)
            throw .configuration("attachStream: the event system is not started")
        }
        let id = try feed.attachStream(fd: fileDescriptor.rawValue, description: description)
        takeForwarded()
        return id
    }

    /// How each attached device is read (the ring, or poll then read). Client loop thread.
    public var readPaths: [HIDDeviceID: DeviceReadPath] {
        loop.preconditionOnLoopThread("HIDEventSystem.readPaths")
        return feed?.readPaths() ?? [:]
    }

    /// The CPUs the event-system thread may run on (`dedicatedThread` shape, while
    /// started). Waits for the thread to answer.
    func eventThreadAllowedCPUs() -> [Int]? {
        guard case .cpus(let cpus)? = try? feed?.control(.allowedCPUs) else { return nil }
        return cpus
    }

    /// Detaches every device (clients see releases, cancels and removals) and stops. Then
    /// releases every handler and finishes every ``events(kinds:deviceClasses:buffer:)``
    /// stream: a stopped system keeps nothing of its client's alive (a handler that
    /// captures the system does not keep it alive for ever). Add handlers again after a
    /// new ``start()``.
    public func stop() {
        loop.preconditionOnLoopThread("HIDEventSystem.stop")
        // What waited for delivery is dropped: nothing is read any more.
        deliveryObserver?.invalidate()
        deliveryObserver = nil
        deliveryWaiters = []
        if let feed {
            feed.stop()
            takeForwarded()  // what the thread forwarded last (nothing for a local feed)
            drainQueue()
        }
        pipeline.stop()
        feed?.finish()
        feed = nil
        // The next start numbers its devices from 1 again.
        attachPolicy.forgetAttachments()
        dispatchSource?.invalidate()
        dispatchSource = nil
        let finishers = streamFinishers
        streamFinishers = []
        for finish in finishers { finish() }
        pipeline.handlers.removeAll()
    }

}
