import Glibc
import RingLoop
import Synchronization

/// udev's properties of a device node, read through libudev when the machine has it.
///
/// libudev is loaded at run time (`dlopen("libudev.so.1")`), not linked: the package
/// builds and runs without it, and where it is missing (some containers), or where udev
/// does not know the node (a FUSE virtual device, the booted-kernel stage without udevd),
/// a device simply has no properties. Only this type touches libudev's handles.
public enum UdevProperties {
    /// The properties of the character device at `path` (`/dev/input/event3`): what udev's
    /// database and the kernel's `uevent` say (`ID_PATH`, `WL_OUTPUT`,
    /// `LIBINPUT_CALIBRATION_MATRIX`, `ID_INPUT_TOUCHSCREEN`…); empty when the path is not a
    /// character device, libudev is absent, or udev does not know the device.
    public static func of(node path: String) -> [String: String] { reading(node: path).properties }

    /// The properties of the character device at `path`, as ``of(node:)`` reads them, and
    /// whether they are final: `false` only while udev knows the device but has not
    /// initialized it yet (its rules have not run, or no udevd runs and nothing wrote its
    /// database entry), when only the kernel's `uevent` values are there and udev's own
    /// (`LIBINPUT_CALIBRATION_MATRIX`, `ID_INPUT_*`…) may still come, as libinput's udev
    /// backend waits for them. `true` when there is nothing to wait for: no libudev, or a
    /// node that is not a character device. With an initialized device, when udev
    /// initialized it (its database entry's `I:` time, through libudev's
    /// `udev_device_get_usec_since_initialized`), `nil` where libudev does not say.
    static func reading(node path: String) -> UdevReading {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, let library = Library.shared else {
            return ([:], true, nil)
        }
        return library.properties(ofCharacterDevice: info.st_rdev)
    }

    /// Whether libudev could be loaded.
    public static var isAvailable: Bool { Library.shared != nil }

    /// Whether udevd runs, as libudev's `udev_queue_get_udev_is_active` says (its control
    /// socket, `/run/udev/control`, is there): then a node udev has not initialized yet
    /// will be, once udevd has run its rules on it. `false` without libudev.
    static var isDaemonRunning: Bool { Library.shared?.isDaemonActive() ?? false }

    /// The folder udevd keeps its database in: one file per device, `c13:67` for the
    /// character device 13:67, written (by a rename) once udevd has run its rules on it.
    static let databaseDirectory = "/run/udev/data"

    /// The name of the character device at `path`'s entry in udev's database
    /// (``databaseDirectory``): `c` and its major and minor numbers (`c13:67`); `nil` for
    /// anything else (a FUSE virtual device is a regular file: udev never knows it).
    static func databaseEntryName(node path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR else { return nil }
        // The kernel's split of a character device's number (glibc's gnu_dev_major and
        // gnu_dev_minor formula), which udev names its entries by; majors below 4096.
        let number = UInt64(info.st_rdev)
        let major = ((number >> 8) & 0xfff) | ((number >> 32) & ~UInt64(0xfff))
        let minor = (number & 0xff) | ((number >> 12) & ~UInt64(0xff))
        return "c\(major):\(minor)"
    }

    /// libudev's entry points, looked up once.
    private final class Library: Sendable {
        typealias New = @convention(c) () -> OpaquePointer?
        typealias Unref = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias DeviceFromNumber = @convention(c) (OpaquePointer?, CChar, dev_t) -> OpaquePointer?
        typealias FirstProperty = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias NextEntry = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias EntryText = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
        typealias IsInitialized = @convention(c) (OpaquePointer?) -> Int32
        typealias QueueNew = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias SinceInitialized = @convention(c) (OpaquePointer?) -> UInt64

        let new: New
        let unref: Unref
        let deviceFromNumber: DeviceFromNumber
        let deviceUnref: Unref
        let firstProperty: FirstProperty
        let nextEntry: NextEntry
        let entryName: EntryText
        let entryValue: EntryText
        let isInitialized: IsInitialized
        /// `udev_device_get_usec_since_initialized` (`nil` if missing: no initialization
        /// time is known).
        let sinceInitialized: SinceInitialized?
        /// `udev_queue_new`, `udev_queue_get_udev_is_active` and `udev_queue_unref` (every
        /// libudev has them; `nil` if one is missing: udevd then counts as not running).
        let queue: (new: QueueNew, isActive: IsInitialized, unref: Unref)?
        /// One context for every lookup (libudev's contexts are not thread-safe).
        private let context = Mutex<UInt>(0)

        static let shared: Library? = Library()

        private init?() {
            guard let handle = dlopen("libudev.so.1", RTLD_NOW | RTLD_LOCAL) else { return nil }
            func symbol<T>(_ name: String, as type: T.Type) -> T? {
                dlsym(handle, name).map { unsafeBitCast($0, to: type) }
            }
            guard let new = symbol("udev_new", as: New.self), let unref = symbol("udev_unref", as: Unref.self),
                let deviceFromNumber = symbol("udev_device_new_from_devnum", as: DeviceFromNumber.self),
                let deviceUnref = symbol("udev_device_unref", as: Unref.self),
                let firstProperty = symbol("udev_device_get_properties_list_entry", as: FirstProperty.self),
                let nextEntry = symbol("udev_list_entry_get_next", as: NextEntry.self),
                let entryName = symbol("udev_list_entry_get_name", as: EntryText.self),
                let entryValue = symbol("udev_list_entry_get_value", as: EntryText.self),
                let isInitialized = symbol("udev_device_get_is_initialized", as: IsInitialized.self)
            else {
                dlclose(handle)
                return nil
            }
            (self.new, self.unref, self.deviceFromNumber, self.deviceUnref) = (new, unref, deviceFromNumber, deviceUnref)
            (self.firstProperty, self.nextEntry, self.entryName, self.entryValue) = (firstProperty, nextEntry, entryName, entryValue)
            self.isInitialized = isInitialized
            sinceInitialized = symbol("udev_device_get_usec_since_initialized", as: SinceInitialized.self)
            if let queueNew = symbol("udev_queue_new", as: QueueNew.self),
                let isActive = symbol("udev_queue_get_udev_is_active", as: IsInitialized.self),
                let queueUnref = symbol("udev_queue_unref", as: Unref.self)
            {
                queue = (queueNew, isActive, queueUnref)
            } else {
                queue = nil
            }
            // The library stays loaded for the process's life (its functions are kept).
        }

        /// Whether udevd runs (`udev_queue_get_udev_is_active`), under the lock.
        func isDaemonActive() -> Bool {
            withContext { udev in
                guard let udev, let queue, let made = queue.new(udev) else { return false }
                defer { _ = queue.unref(made) }
                return queue.isActive(made) > 0
            }
        }

        /// Runs `body` with the one udev context (`nil` if it cannot be made), under the
        /// lock: one call at a time on it, made at the first.
        private func withContext<T>(_ body: (OpaquePointer?) -> T) -> T {
            context.withLock { address in
                if address == 0, let made = new() { address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(made))) }
                return body(UnsafeRawPointer(bitPattern: address).map { OpaquePointer($0) })
            }
        }

        /// The properties of the character device `number`, whether udev has initialized
        /// it, and when, under the lock (one lookup at a time on one udev context, made at
        /// the first).
        func properties(ofCharacterDevice number: dev_t) -> UdevReading {
            withContext { udev in
                guard let udev else { return ([:], true, nil) }
                guard let device = deviceFromNumber(udev, CChar(UInt8(ascii: "c")), number) else { return ([:], true, nil) }
                defer { _ = deviceUnref(device) }
                var properties: [String: String] = [:]
                var entry = firstProperty(device)
                var count = 0
                while let current = entry, count < 1024 {
                    if let name = entryName(current) {
                        properties[String(cString: name)] = entryValue(current).map { String(cString: $0) } ?? ""
                    }
                    entry = nextEntry(current)
                    count += 1
                }
                guard isInitialized(device) != 0 else { return (properties, false, nil) }
                // libudev's answer is now minus the entry's `I:` (both CLOCK_MONOTONIC,
                // in microseconds); 0 when it has none.
                let since = sinceInitialized.map { $0(device) } ?? 0
                let initializedAt =
                    since == 0 ? nil : MonotonicInstant.now.advanced(by: .microseconds(-Int64(clamping: since)))
                return (properties, true, initializedAt)
            }
        }
    }
}
