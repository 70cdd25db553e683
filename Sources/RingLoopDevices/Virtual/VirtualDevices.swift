import CLibEvdev
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A virtual evdev device, whatever backs it: events sent to it come out of its node
/// exactly as from a kernel device.
public protocol VirtualInputDevice: AnyObject, Sendable {
    /// The device node readers open (`/dev/input/eventN` or a FUSE folder's `eventN`).
    var nodePath: String { get }
    /// What the device says about itself.
    var deviceDescription: InputDeviceDescription { get }
    /// Sends events (end frames with `SYN_REPORT`: type 0, code 0, value 0).
    func send(_ events: [(type: UInt16, code: UInt16, value: Int32)]) throws(VirtualDeviceError)
    /// Removes the device; readers get `ENODEV`.
    func remove()
}

extension FUSEEvdevNode: VirtualInputDevice {
    public var nodePath: String { path }
}

/// The two ways to make a virtual device.
public enum VirtualDeviceBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A real kernel device through `/dev/uinput` (libevdev's uinput API): every program
    /// on the machine sees it.
    case uinput
    /// A node in a FUSE folder served by this process: works without `/dev/uinput`,
    /// readers open the folder's files.
    case fuse

    public var description: String { rawValue }

    /// Whether the backend can be used here, and if not, why.
    public static func availability(_ backend: VirtualDeviceBackend) -> Result<Void, VirtualDeviceError> {
        let node = backend == .uinput ? "/dev/uinput" : "/dev/fuse"
        let fd = open(node, O_RDWR | O_CLOEXEC)
        if fd >= 0 {
            close(fd)
            return .success(())
        }
        let reason = errno
        let fix =
            backend == .uinput
            ? "load the uinput module (modprobe uinput) and run as root or in group input"
            : "install fuse3 and run as root (apt-get install fuse3)"
        return .failure(.noBackend("\(node): \(String(cString: strerror(reason))); \(fix)"))
    }
}

/// Creates virtual devices with the best backend available: uinput where `/dev/uinput`
/// is usable, otherwise a FUSE folder.
///
/// ```swift
/// let host = try VirtualDeviceHost()
/// let mouse = try host.create(description)
/// try mouse.send([(2, 0, 5), (0, 0, 0)])
/// ```
public final class VirtualDeviceHost: Sendable {
    /// The backend in use.
    public let backend: VirtualDeviceBackend
    /// Where FUSE nodes appear (when the backend is FUSE).
    public let folderPath: String
    /// The FUSE folder (created on first use) and the devices made so far.
    private let state = ThreadLock<(folder: FUSEDeviceFolder?, devices: [any VirtualInputDevice])>((nil, []))

    /// Picks `backend`, or the best available when `nil`.
    /// - Parameters:
    ///   - backend: `uinput` or FUSE; `nil` for uinput where usable, FUSE otherwise.
    ///   - folderPath: The FUSE folder to mount (default: a fresh folder under /tmp).
    public init(backend: VirtualDeviceBackend? = nil, folderPath: String? = nil) throws(VirtualDeviceError) {
        let chosen: VirtualDeviceBackend
        if let backend {
            if case .failure(let error) = VirtualDeviceBackend.availability(backend) { throw error }
            chosen = backend
        } else if case .success = VirtualDeviceBackend.availability(.uinput) {
            chosen = .uinput
        } else if case .success = VirtualDeviceBackend.availability(.fuse) {
            chosen = .fuse
        } else {
            throw .noBackend(
                "neither /dev/uinput nor /dev/fuse is usable: load the uinput module, or install fuse3, and run as root")
        }
        self.backend = chosen
        self.folderPath = folderPath ?? "/tmp/ringloop-devices-\(getpid())"
    }

    deinit { close() }

    /// Creates a device.
    /// - Parameters:
    ///   - description: What the device says about itself.
    ///   - bufferSize: FUSE only: events each reader's buffer holds.
    ///   - forReplay: The device will replay a recording: FUSE nodes skip the input
    ///     core's fuzz pass (recorded values already had it); uinput devices are created
    ///     with fuzz 0 for the same reason (the kernel would apply it again).
    public func create(
        _ description: InputDeviceDescription, bufferSize: Int? = nil, forReplay: Bool = false
    )
        throws(VirtualDeviceError) -> any VirtualInputDevice
    {
        let device: any VirtualInputDevice
        switch backend {
        case .uinput:
            var uinputDescription = description
            if forReplay {
                for code in uinputDescription.absoluteAxes.keys { uinputDescription.absoluteAxes[code]?.fuzz = 0 }
            }
            device = try UInputDevice(uinputDescription)
        case .fuse:
            let folder: FUSEDeviceFolder
            do {
                folder = try state.withLock { state throws(VirtualDeviceError) -> FUSEDeviceFolder in
                    if let folder = state.folder { return folder }
                    let created = try FUSEDeviceFolder(path: folderPath)
                    state.folder = created
                    return created
                }
            } catch let error as VirtualDeviceError {
                throw error
            } catch {
                throw .mount(path: folderPath, reason: "\(error)")
            }
            device = try folder.addDevice(description, bufferSize: bufferSize, appliesFuzz: !forReplay)
        }
        state.withLock { $0.devices.append(device) }
        return device
    }

    /// Removes every device and unmounts the FUSE folder.
    public func close() {
        let (folder, all) = state.withLock { state in
            defer { state = (nil, []) }
            return state
        }
        for device in all { device.remove() }
        folder?.close()
    }
}

/// A kernel device created through `/dev/uinput` with libevdev.
public final class UInputDevice: VirtualInputDevice, Sendable {
    // The uinput handle (a C pointer) is used only under its lock.
    public let nodePath: String
    public let deviceDescription: InputDeviceDescription
    private let handle: ThreadLock<OpaquePointer?>

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
        for (type, codes) in description.codes where type != Evdev.EV_SYN {
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
        nodePath = libevdev_uinput_get_devnode(created).map { String(cString: $0) } ?? ""
        // From here on the uinput device is used only under the lock; libevdev's handle
        // it was made from is freed on return and keeps no reference to it.
        handle = ThreadLock(nil)
        handle.withLock { $0 = created }
    }

    deinit { remove() }

    public func send(_ events: [(type: UInt16, code: UInt16, value: Int32)]) throws(VirtualDeviceError) {
        let failure: VirtualDeviceError? = handle.withLock { handle in
            guard let handle else { return .removed(nodePath) }
            for event in events {
                let result = libevdev_uinput_write_event(handle, UInt32(event.type), UInt32(event.code), event.value)
                if result != 0 { return .uinput(operation: "write", errno: Errno(rawValue: -result)) }
            }
            return nil
        }
        if let failure { throw failure }
    }

    public func remove() {
        handle.withLock { handle in
            if let current = handle { libevdev_uinput_destroy(current) }
            handle = nil
        }
    }
}
