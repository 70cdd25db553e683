import RingLoop
import RingLoopEvdev

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
    /// Readers holding the node now: the open files a FUSE node serves that have read or
    /// polled it (exact, see ``FUSEEvdevNode/readerCount``), or the descriptors open on a
    /// uinput device's node (see ``UInputDevice/readerCount``).
    var readerCount: Int { get }
    /// Returns when a reader may have come or gone, or after `timeout`, whichever is
    /// first (``waitForReaders(_:timeout:shouldStop:)`` waits with it).
    func waitForReaderChange(timeout: Duration)
    /// What programs asked the device's force feedback to do, oldest first (empty for a
    /// device without `FF_RUMBLE`): a test rig's record of an app's rumble.
    var forceFeedbackRequests: [ForceFeedbackRequest] { get }
}

extension FUSEEvdevNode: VirtualInputDevice {
    public var nodePath: String { path }

    public func waitForReaderChange(timeout: Duration) {
        let bound = min(timeout, .milliseconds(100))
        let milliseconds = Int32(max(1, bound.components.seconds * 1000 + bound.components.attoseconds / 1_000_000_000_000_000))
        var ready = pollfd(fd: openings.read, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&ready, 1, milliseconds) == 1 else { return }
        var bytes = [UInt8](repeating: 0, count: 64)
        while bytes.withUnsafeMutableBytes({ Glibc.read(openings.read, $0.baseAddress, $0.count) }) > 0 {}
    }
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
