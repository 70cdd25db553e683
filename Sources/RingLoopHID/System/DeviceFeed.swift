import Dispatch
import RingLoop

#if canImport(Glibc)
import Glibc
#endif

/// Where an event system's devices are read: a `DeviceMonitor` with its readers and
/// decoders, on the client's loop or on an event-system thread. Both deliver decoded events
/// toward the client's queue and report problems; the threaded one also hands over what it
/// had to drop, with each affected device's state after it, for the client's resync.
protocol DeviceFeed: AnyObject {
    /// Enumerates the device folder, attaches what is there and follows hotplug.
    func start() throws(HIDError)
    /// Detaches every device (releases, cancels and removals go out) and stops reading.
    func stop()
    /// Raw evdev events read so far.
    var eventsRead: Int { get }
    /// Attaches a stream of `input_event` records as a device (see
    /// ``HIDEventSystem/attachStream(fileDescriptor:description:)``).
    func attachStream(fd: Int32, description: HIDDeviceInfo) -> HIDDeviceID?
    /// How each device is read.
    func readPaths() -> [HIDDeviceID: DeviceReadPath]
    /// Called each time the client's queue has been drained (a server's client
    /// acknowledges the batches its handlers took).
    func drained()
}

extension DeviceFeed {
    func drained() {}
}

/// The `.clientLoop` shape: devices are read on the client's own loop, and decoded events
/// go straight into its queue.
final class LocalDeviceFeed: DeviceFeed {
    private let monitor: DeviceMonitor

    init(
        settings: DeviceMonitor.Settings, loop: RingRunLoop, sink: @escaping (HIDEvent) -> Void,
        onError: @escaping (HIDError) -> Void, table: DeviceTable
    ) {
        monitor = DeviceMonitor(
            settings: settings, loop: loop, sink: sink, onError: onError, onDevicesChanged: { table.replace($0) })
    }

    func start() throws(HIDError) { try monitor.start() }
    func stop() { monitor.stop() }
    var eventsRead: Int { monitor.totalEventsRead }
    func attachStream(fd: Int32, description: HIDDeviceInfo) -> HIDDeviceID? {
        monitor.attachStream(fd: fd, description: description)
    }
    func readPaths() -> [HIDDeviceID: DeviceReadPath] { monitor.readPaths }
}

/// The `.dedicatedThread` shape: an event-system thread (`hid-events`) reads the devices
/// and forwards events to the client's loop through a message port, so a slow handler
/// never makes the kernel drop events. A full hand-off is a loss like any other.
final class ThreadedDeviceFeed: DeviceFeed {
    let forwarder: Forwarder
    private let thread: LoopThread
    private let source: LoopPortSource
    private let settings: DeviceMonitor.Settings
    private let table: DeviceTable

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
        let forwarder = forwarder
        thread.perform {
            forwarder.monitor?.stop()
            forwarder.monitor = nil
            forwarder.flush()
        }
        thread.stopAndJoin()
    }

    func attachStream(fd: Int32, description: HIDDeviceInfo) -> HIDDeviceID? {
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
        return answer.withLock { $0 }
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

    /// Takes the client-side port source off the loop (after the last batch was taken).
    func invalidate() { source.invalidate() }

    var eventsRead: Int { forwarder.eventsRead }

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
