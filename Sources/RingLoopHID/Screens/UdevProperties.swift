import Glibc
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
    /// node that is not a character device.
    static func reading(node path: String) -> (properties: [String: String], initialized: Bool) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, let library = Library.shared else { return ([:], true) }
        return library.properties(ofCharacterDevice: info.st_rdev)
    }

    /// Whether libudev could be loaded.
    public static var isAvailable: Bool { Library.shared != nil }

    /// libudev's entry points, looked up once.
    private final class Library: Sendable {
        typealias New = @convention(c) () -> OpaquePointer?
        typealias Unref = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias DeviceFromNumber = @convention(c) (OpaquePointer?, CChar, dev_t) -> OpaquePointer?
        typealias FirstProperty = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias NextEntry = @convention(c) (OpaquePointer?) -> OpaquePointer?
        typealias EntryText = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
        typealias IsInitialized = @convention(c) (OpaquePointer?) -> Int32

        let new: New
        let unref: Unref
        let deviceFromNumber: DeviceFromNumber
        let deviceUnref: Unref
        let firstProperty: FirstProperty
        let nextEntry: NextEntry
        let entryName: EntryText
        let entryValue: EntryText
        let isInitialized: IsInitialized
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
            // The library stays loaded for the process's life (its functions are kept).
        }

        /// The properties of the character device `number`, and whether udev has
        /// initialized it, under the lock (one lookup at a time on one udev context, made
        /// at the first).
        func properties(ofCharacterDevice number: dev_t) -> (properties: [String: String], initialized: Bool) {
            context.withLock { address in
                if address == 0, let made = new() { address = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(made))) }
                guard address != 0, let raw = UnsafeRawPointer(bitPattern: address) else { return ([:], true) }
                let udev = OpaquePointer(raw)
                guard let device = deviceFromNumber(udev, CChar(UInt8(ascii: "c")), number) else { return ([:], true) }
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
                return (properties, isInitialized(device) != 0)
            }
        }
    }
}
