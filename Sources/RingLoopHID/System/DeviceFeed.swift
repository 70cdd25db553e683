import Dispatch
import RingLoop
import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Where an event system's events come from: a `DeviceMonitor` with its readers and
/// decoders, on the client's loop or on an event-system thread, or an event server. Every
/// feed delivers decoded events toward the client's queue and reports problems; what only
/// some feeds can do (the focus, the CPUs of a thread, LEDs) is asked through
/// ``control(_:)``, which a feed answers or refuses with an error saying why.
protocol DeviceFeed: AnyObject {
    /// Enumerates the device folder, attaches what is there and follows hotplug (or
    /// attaches to the server).
    func start() throws(HIDError)
    /// Detaches every device (releases, cancels and removals go out) and stops reading.
    func stop()
    /// After the last drain at stop: takes the feed's own items off the client's loop.
    func finish()
    /// Raw evdev events read so far.
    var eventsRead: Int { get }
    /// Attaches a stream of `input_event` records as a device (see
    /// ``HIDEventSystem/attachStream(fileDescriptor:description:)``); the feed owns `fd`
    /// from here, also when it refuses.
    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID
    /// How each device is read.
    func readPaths() -> [HIDDeviceID: DeviceReadPath]
    /// Someone waits for the input on its way to reach the client's queue
    /// (``HIDEventSystem/afterInputDelivered(_:)``): a feed whose devices are read on
    /// another thread has that thread wake the client's loop once it has read what its
    /// devices hold (a feed that reads on the client's loop does nothing: a readable
    /// device wakes that loop itself). Client loop thread.
    func expectDeliveryCheck()
    /// Whether input is still on its way to the client's queue: in a device, not yet read
    /// (``DeviceReader/hasUnreadInput``), or read by a ring read whose completion the
    /// loop has not handled yet (``DeviceMonitor/hasInputNotYetDecoded``), or, on the
    /// event-system thread, not yet read since the last ``expectDeliveryCheck()`` or read
    /// and not yet taken from the hand-off. Client loop thread. Waits for no thread of
    /// this process; the feed that reads on the client's loop asks its devices with
    /// `poll(2)`, which for a FUSE node waits for the node's server to answer.
    func hasInputOnTheWay() -> Bool
    /// Called each time the client's queue has been drained (a server's client
    /// acknowledges the batches its handlers took).
    func drained()
    /// Hands what crossed from another thread to `enqueue`, and returns what was lost on
    /// the way (`nil`: nothing crosses threads in this feed).
    func takeForwarded(_ enqueue: (HIDEvent) -> Void) -> Forwarder.Taken?
    /// Whether a server's client is attached and focused (`nil`: the feed reads its own
    /// devices, which are always its own).
    var serverState: (attached: Bool, focused: Bool)? { get }
    /// The layouts of the keymap a server's client's server holds, as its welcome named
    /// them (empty for a feed that reads its own devices).
    var serverLayoutNames: [String] { get }
    /// Does what only some feeds can do, or says why this one cannot.
    func control(_ request: FeedRequest) throws(HIDError) -> FeedAnswer
    /// Decides again which nodes are attached and as what class, the attach policy's
    /// settings having changed (a feed without nodes of its own does nothing).
    func reconsiderDevices()
}

/// What a feed is asked to do beyond reading (``DeviceFeed/control(_:)``).
enum FeedRequest {
    /// A server's client asks its server for the focus.
    case requestFocus
    /// An LED of a device on or off.
    case setLED(code: UInt16, on: Bool, device: HIDDeviceInfo)
    /// The CPUs the feed's thread may run on.
    case allowedCPUs
    /// A rumble on a device with `FF_RUMBLE`, replacing one it plays.
    case rumble(RumbleEffect, device: HIDDeviceInfo)
    /// The device's rumble stopped.
    case stopRumble(device: HIDDeviceInfo)
}

/// A feed's answer to a ``FeedRequest``.
enum FeedAnswer {
    case done
    case cpus([Int])
}

extension DeviceFeed {
    func drained() {}
    func expectDeliveryCheck() {}
    func hasInputOnTheWay() -> Bool { false }
    func finish() {}
    func takeForwarded(_ enqueue: (HIDEvent) -> Void) -> Forwarder.Taken? { nil }
    var serverState: (attached: Bool, focused: Bool)? { nil }
    var serverLayoutNames: [String] { [] }
    func reconsiderDevices() {}

    /// What a feed that reads its own nodes does: LEDs are written to the node as a
    /// compositor writes them (opened write-only for the write), rumbles played through
    /// `rumbles`, the rest is refused.
    func controlOwnNodes(_ request: FeedRequest, rumbles: RumbleOutputs) throws(HIDError) -> FeedAnswer {
        switch request {
        case .rumble(let effect, let device):
            try rumbles.play(effect, on: device)
            return .done
        case .stopRumble(let device):
            rumbles.finish(device.id)
            return .done
        case .requestFocus:
            throw .configuration("requestFocus: this event system is not a client of an event server")
        case .allowedCPUs:
            throw .configuration("the CPUs of the event-system thread: this system reads its devices on the client's loop")
        case .setLED(let code, let on, let info):
            let fd = open(info.path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .open(path: info.path, errno: Errno(rawValue: errno)) }
            defer { close(fd) }
            // Write-only, as a compositor opens it: EvdevDevice borrows the descriptor.
            do throws(EvdevError) {
                try EvdevDevice(fileDescriptor: fd).setLED(code, on: on)
            } catch {
                throw .write(path: info.path, errno: error.errno)
            }
            return .done
        }
    }
}

/// The `.clientLoop` shape: devices are read on the client's own loop, and decoded events
/// go straight into its queue.
final class LocalDeviceFeed: DeviceFeed {
    private let monitor: DeviceMonitor
    private let rumbles: RumbleOutputs

    init(
        settings: DeviceMonitor.Settings, loop: RingRunLoop, sink: @escaping (HIDEvent) -> Void,
        onError: @escaping (HIDError) -> Void, table: DeviceTable
    ) {
        monitor = DeviceMonitor(
            settings: settings, loop: loop, sink: sink, onError: onError, onDevicesChanged: { table.replace($0) })
        rumbles = RumbleOutputs(loop: loop)
    }

    func start() throws(HIDError) { try monitor.start() }
    func stop() {
        rumbles.finishAll()
        monitor.stop()
    }
    var eventsRead: Int { monitor.totalEventsRead }
    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        monitor.attachStream(fd: fd, description: description)
    }
    func readPaths() -> [HIDDeviceID: DeviceReadPath] { monitor.readPaths }
    func hasInputOnTheWay() -> Bool { monitor.hasInputNotYetDecoded }
    func reconsiderDevices() { monitor.reconsider() }
    func control(_ request: FeedRequest) throws(HIDError) -> FeedAnswer { try controlOwnNodes(request, rumbles: rumbles) }
}

/// The `.dedicatedThread` shape: an event-system thread (`hid-events`) reads the devices
/// and forwards events to the client's loop through a message port, so a slow handler
/// never makes the kernel drop events. A full hand-off is a loss like any other.
final class ThreadedDeviceFeed: DeviceFeed {
    let forwarder: Forwarder
    /// The event-system thread (internal for tests that hold it up).
    let thread: LoopThread
    private let source: LoopPortSource
    private let settings: DeviceMonitor.Settings
    private let table: DeviceTable
    /// Rumbles are played from the client's loop (where the app asks for them).
    private let rumbles: RumbleOutputs

    /// Creates the thread (on `cpus` when given) and the client-side port source, which
    /// calls `onArrival` on the client's loop when a batch has been forwarded.
    init(
        settings: DeviceMonitor.Settings, capacity: Int, cpus: [Int]?, clientLoop: RingRunLoop, table: DeviceTable,
        onArrival: @escaping @Sendable () -> Void
    ) throws(HIDError) {
        if let cpus {
            do { thread = try LoopThread(name: "hid-events", cpus: cpus) } catch {
                throw .configuration("eventThreadCPUs: \(error)")
            }
        } else {
            thread = LoopThread(name: "hid-events")
        }
        let port = clientLoop.makeDoorbell()
        forwarder = Forwarder(capacity: capacity, port: port)
        source = LoopPortSource(doorbell: port) { _ in onArrival() }
        self.settings = settings
        self.table = table
        rumbles = RumbleOutputs(loop: clientLoop)
        clientLoop.add(source, to: .common)
    }

    func start() throws(HIDError) {
        let forwarder = forwarder
        let settings = settings
        let table = table
        let startError = ThreadLock<HIDError?>(nil)
        // The thread says when its monitor is up (or failed); start() waits without spinning.
        let started = DispatchSemaphore(value: 0)
        thread.perform {
            let monitor = DeviceMonitor(
                settings: settings, loop: RingRunLoop.current,
                sink: { forwarder.push($0) },
                onError: { forwarder.pushProblem($0) },
                onDevicesChanged: { table.replace($0) })
            // After each pass of the thread's loop: a client waiting for delivery is told
            // once nothing is left unread (what was read is pushed by then).
            let answering = LoopObserver(activities: [.beforeWaiting], label: "hid-events delivery notice") { _, _ in
                forwarder.answerDeliveryRequest()
            }
            forwarder.deliveryObserver = answering
            RingRunLoop.current.add(answering, to: .common)
            do throws(HIDError) {
                try monitor.start()
                forwarder.monitor = monitor
            } catch {
                startError.withLock { $0 = error }
            }
            forwarder.flush()
            started.signal()
        }
        started.wait()
        if let error = startError.withLock({ $0 }) { throw error }
    }

    func stop() {
        rumbles.finishAll()
        let forwarder = forwarder
        thread.perform {
            forwarder.monitor?.stop()
            forwarder.monitor = nil
            forwarder.deliveryObserver?.invalidate()
            forwarder.deliveryObserver = nil
            forwarder.flush()
        }
        thread.stopAndJoin()
    }

    func attachStream(fd: Int32, description: HIDDeviceInfo) throws(HIDError) -> HIDDeviceID {
        let forwarder = forwarder
        let answer = ThreadLock<HIDDeviceID?>(nil)
        let answered = DispatchSemaphore(value: 0)
        thread.perform {
            let id = forwarder.monitor?.attachStream(fd: fd, description: description)
            if id == nil { close(fd) }
            answer.withLock { $0 = id }
            forwarder.flush()
            answered.signal()
        }
        answered.wait()
        guard let id = answer.withLock({ $0 }) else {
            throw .configuration("attachStream: the event system's thread is not reading devices")
        }
        return id
    }

    func readPaths() -> [HIDDeviceID: DeviceReadPath] {
        let forwarder = forwarder
        let answer = ThreadLock<[HIDDeviceID: DeviceReadPath]>([:])
        let answered = DispatchSemaphore(value: 0)
        thread.perform {
            answer.withLock { $0 = forwarder.monitor?.readPaths ?? [:] }
            answered.signal()
        }
        answered.wait()
        return answer.withLock { $0 }
    }

    /// Asks the thread to ring the client's port once nothing is left unread, and wakes
    /// it to look (it may be asleep with nothing to read); it looks again after each pass
    /// of its loop until it can answer. No waiting for the thread.
    func expectDeliveryCheck() {
        let forwarder = forwarder
        forwarder.askForDeliveryNotice()
        thread.perform { forwarder.answerDeliveryRequest() }
    }

    /// From what the thread published: the request of ``expectDeliveryCheck()`` not yet
    /// answered, or events it pushed not yet taken.
    func hasInputOnTheWay() -> Bool { forwarder.isDeliveryNoticePending || forwarder.hasWaiting }

    func reconsiderDevices() {
        let forwarder = forwarder
        thread.perform {
            forwarder.monitor?.reconsider()
            forwarder.flush()
        }
    }

    /// Takes the client-side port source off the loop (after the last batch was taken).
    func finish() { source.invalidate() }

    func takeForwarded(_ enqueue: (HIDEvent) -> Void) -> Forwarder.Taken? { forwarder.drain(enqueue) }

    func control(_ request: FeedRequest) throws(HIDError) -> FeedAnswer {
        if case .allowedCPUs = request { return .cpus(allowedCPUs()) }
        return try controlOwnNodes(request, rumbles: rumbles)
    }

    /// Counted by the readers as they read, on the thread (exact on the client's loop once
    /// a delivery notice it asked for is answered: ``expectDeliveryCheck()``).
    var eventsRead: Int { settings.readCalls.events.load(ordering: .relaxed) }

    /// The CPUs the thread may run on. Waits for the thread to answer.
    func allowedCPUs() -> [Int] {
        let answer = ThreadLock<[Int]>([])
        let answered = DispatchSemaphore(value: 0)
        thread.perform {
            answer.withLock { $0 = CPUAffinity.allowedCPUs() }
            answered.signal()
        }
        answered.wait()
        return answer.withLock { $0 }
    }
}
