import CLibEvdev
import RingLoop
import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A kernel device created through `/dev/uinput` with libevdev.
///
/// Its node gives exactly the events sent, filtered by the kernel's input core as any
/// device's are: the kernel adds nothing. A kernel device with `EV_REP` normally gets the
/// input core's software key repeat (the kernel sends its own `value 2` events while a
/// key is held), and uinput cannot create a device without it (the driver would have to
/// set its repeat settings before registering, which uinput has no request for). So a
/// device described with key repeat is created, then its repeat period is set to 0,
/// which turns the software repeat off: `EVIOCGREP` answers the described delay and a
/// period of 0 (the one difference from the description; ``repeatSettings``). A reader
/// that sets both non-zero again (`EVIOCSREP`) turns the kernel's repeat back on, as on
/// any keyboard.
///
/// A device described with force feedback (`EV_FF`; libevdev gives it room for 10
/// effects) answers the kernel's upload and erase handshake (`UI_BEGIN_FF_UPLOAD`…) on a
/// thread of its own, as a driver does: rumbles are accepted, and every upload, play,
/// stop, erase and gain a program asks for is kept in ``forceFeedbackRequests`` (what a
/// test rig asserts of an app's rumble, as with a FUSE node).
public final class UInputDevice: VirtualInputDevice, Sendable {
    public let nodePath: String
    public let deviceDescription: InputDeviceDescription
    /// The repeat settings the kernel gives the device (`EVIOCGREP` on its node): the
    /// described delay and a period of 0; `nil` without `EV_REP`.
    public let repeatSettings: (delay: Int32, period: Int32)?
    // The uinput handle (a C pointer) is used only under its lock.
    private let handle: ThreadLock<OpaquePointer?>
    /// Who holds the node (see ``readerCount``).
    private let readers: NodeReaders
    /// Answers force-feedback requests (a device with `EV_FF` only).
    private let forceFeedback: UInputForceFeedback?

    /// Creates the device through `/dev/uinput`, in the described key, switch and LED
    /// state, with the kernel's software key repeat off.
    public init(_ description: InputDeviceDescription) throws(VirtualDeviceError) {
        deviceDescription = description
        guard let device = libevdev_new() else { throw .uinput(operation: "libevdev_new", errno: .noMemory) }
        defer { libevdev_free(device) }
        libevdev_set_name(device, description.name)
        libevdev_set_id_bustype(device, Int32(description.busType))
        libevdev_set_id_vendor(device, Int32(description.vendor))
        libevdev_set_id_product(device, Int32(description.product))
        libevdev_set_id_version(device, Int32(description.version))
        for property in description.properties { libevdev_enable_property(device, UInt32(property)) }
        for type in description.codes[Evdev.EV_SYN] ?? [] where type != Evdev.EV_SYN && type != Evdev.EV_REP {
            libevdev_enable_event_type(device, UInt32(type))
        }
        for (type, codes) in description.codes where type != Evdev.EV_SYN && type != Evdev.EV_REP {
            libevdev_enable_event_type(device, UInt32(type))
            for code in codes {
                if type == Evdev.EV_ABS, let axis = description.absoluteAxes[code] {
                    var info = input_absinfo(
                        value: axis.value, minimum: axis.minimum, maximum: axis.maximum, fuzz: axis.fuzz,
                        flat: axis.flat, resolution: axis.resolution)
                    libevdev_enable_event_code(device, UInt32(type), UInt32(code), &info)
                } else {
                    libevdev_enable_event_code(device, UInt32(type), UInt32(code), nil)
                }
            }
        }
        if let keyRepeat = description.keyRepeat {
            // EV_REP's "codes" are its two settings (REP_DELAY, REP_PERIOD).
            var delay = keyRepeat.delay
            var period = keyRepeat.period
            libevdev_enable_event_code(device, UInt32(Evdev.EV_REP), UInt32(Evdev.REP_DELAY), &delay)
            libevdev_enable_event_code(device, UInt32(Evdev.EV_REP), UInt32(Evdev.REP_PERIOD), &period)
        }
        var created: OpaquePointer?
        let result = libevdev_uinput_create_from_device(device, Int32(LIBEVDEV_UINPUT_OPEN_MANAGED.rawValue), &created)
        guard result == 0, let created else { throw .uinput(operation: "create", errno: Errno(rawValue: -result)) }
        let path = libevdev_uinput_get_devnode(created).map { String(cString: $0) } ?? ""
        nodePath = path
        // Before any reader can have opened the node (its path is known only now), one
        // frame that reaches no one: the software repeat off, and the keys, switches and
        // LEDs the description has on (a new kernel device has them all off; a FUSE
        // node starts as described).
        var initial: [(UInt16, UInt16, Int32)] = []
        if let keyRepeat = description.keyRepeat {
            initial += [(Evdev.EV_REP, Evdev.REP_DELAY, keyRepeat.delay), (Evdev.EV_REP, Evdev.REP_PERIOD, 0)]
        }
        initial += description.keysDown.sorted().map { (Evdev.EV_KEY, $0, 1) }
        initial += description.switchStates.filter { $0.value != 0 }.keys.sorted().map { (Evdev.EV_SW, $0, 1) }
        initial += description.ledStates.filter { $0.value != 0 }.keys.sorted().map { (Evdev.EV_LED, $0, 1) }
        if !initial.isEmpty {
            if let failure = Self.write(initial + [(Evdev.EV_SYN, Evdev.SYN_REPORT, 0)], to: libevdev_uinput_get_fd(created)) {
                libevdev_uinput_destroy(created)
                throw failure
            }
        }
        repeatSettings = description.keyRepeat.map { ($0.delay, 0) }
        readers = NodeReaders(path: path)
        // From here on the uinput device is used only under the lock; libevdev's handle
        // it was made from is freed on return and keeps no reference to it.
        handle = ThreadLock(nil)
        handle.withLock { $0 = created }
        // The kernel hands the LED and repeat settings above back to the driver (this
        // device's descriptor); they are not readers' requests.
        _ = Self.readAvailable(libevdev_uinput_get_fd(created))
        forceFeedback = description.codes[Evdev.EV_FF] != nil ? UInputForceFeedback(descriptor: libevdev_uinput_get_fd(created)) : nil
    }

    deinit { remove() }

    /// Sends the events in one `write(2)` (a frame at a time is one system call).
    public func send(_ events: [(type: UInt16, code: UInt16, value: Int32)]) throws(VirtualDeviceError) {
        let failure: VirtualDeviceError? = handle.withLock { handle in
            guard let handle else { return .removed(nodePath) }
            return Self.write(events, to: libevdev_uinput_get_fd(handle))
        }
        if let failure { throw failure }
    }

    private static func write(_ events: [(type: UInt16, code: UInt16, value: Int32)], to fd: Int32) -> VirtualDeviceError? {
        guard !events.isEmpty else { return nil }
        let size = InputEvent.size
        var bytes = [UInt8](repeating: 0, count: events.count * size)
        bytes.withUnsafeMutableBytes { raw in
            for (index, event) in events.enumerated() {
                InputEvent(type: event.type, code: event.code, value: event.value).store(to: raw.baseAddress! + index * size)
            }
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                return .uinput(operation: "write", errno: Errno(rawValue: errno))
            }
            written += count
        }
        return nil
    }

    /// Events readers wrote back to the device since the last call, as the kernel hands
    /// them to its driver: `EV_LED` (a reader set an LED), `EV_SND`, `EV_REP` (a reader's
    /// `EVIOCSREP`), `EV_FF` plays. Does not wait.
    public func receivedEvents() -> [InputEvent] {
        if let forceFeedback { return forceFeedback.takeReceived() }
        return handle.withLock { handle -> [InputEvent] in
            guard let handle else { return [] }
            return Self.readAvailable(libevdev_uinput_get_fd(handle))
        }
    }

    /// The events waiting on the uinput descriptor `fd`, without waiting.
    private static func readAvailable(_ fd: Int32) -> [InputEvent] {
        var received: [InputEvent] = []
        var buffer = [UInt8](repeating: 0, count: 64 * InputEvent.size)
        while true {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&ready, 1, 0) == 1, ready.revents & Int16(POLLIN) != 0 else { break }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { raw in
                for index in 0..<(count / InputEvent.size) {
                    received.append(InputEvent(bytes: raw.baseAddress! + index * InputEvent.size))
                }
            }
        }
        return received
    }

    /// Descriptors open on the node in every process this one can see: what `fuser`
    /// would say, found in `/proc/PID/fd` by the node's device number. It counts
    /// descriptors, not readers (a `dup` counts twice, udev's probe counts while it
    /// looks); without root, other users' processes are not seen. A reader counts from
    /// its `open`: one that then sets its clock (`EVIOCSCLOCKID`) after events were
    /// queued still loses them to a `SYN_DROPPED`.
    public var readerCount: Int { readers.count() }

    /// Returns when the node was opened or closed (an inotify watch on it), or after
    /// `timeout` (at most 100 ms: a node opened through another inode is seen then).
    public func waitForReaderChange(timeout: Duration) { readers.waitForChange(timeout: timeout) }

    /// What programs asked the device's force feedback to do, oldest first: uploads of
    /// rumbles (with the id the kernel gave them), plays, stops, erasures and the gain
    /// (empty for a device without `EV_FF`). A reader's `EVIOCSFF` of another effect type
    /// is refused (`EINVAL`) and not kept.
    public var forceFeedbackRequests: [ForceFeedbackRequest] { forceFeedback?.requests ?? [] }

    public func remove() {
        handle.withLock { handle in
            // The thread answering force feedback ends first: it uses the descriptor.
            if handle != nil { forceFeedback?.stop() }
            if let current = handle { libevdev_uinput_destroy(current) }
            handle = nil
        }
    }
}
