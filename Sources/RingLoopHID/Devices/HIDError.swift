import RingLoop
import RingLoopEvdev
import SystemPackage

/// Why the event system could not do something. Errors from the kernel carry its `Errno`;
/// a failure of the ring under the event system carries the ring's `RingError`.
public enum HIDError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A device node could not be opened.
    case open(path: String, errno: Errno)
    /// A node opened but libevdev could not describe it: not an evdev device.
    case describe(path: String, errno: Errno)
    /// The device folder could not be watched.
    case directory(path: String, errno: Errno)
    /// Writing to a device (an LED) failed.
    case write(path: String, errno: Errno)
    /// The ring under the event system failed.
    case ring(RingError)
    /// A setting of the event system that cannot be honoured, and why.
    case configuration(String)
    /// No attached device has this id.
    case noSuchDevice(HIDDeviceID)
    /// The device has no LED with this code; `available` lists those it has.
    case noSuchLED(code: UInt16, device: HIDDeviceID, available: Set<UInt16>)
    /// An event server could not be served or reached: its port name, and why.
    case server(name: String, reason: String)

    public var description: String {
        switch self {
        case .open(let path, let errno):
            let hint = errno == .permissionDenied || errno == .notPermitted ? " (add the user to group 'input', or run as root)" : ""
            return "\(path): cannot open: \(errno)\(hint)"
        case .describe(let path, let errno): return "\(path): not an evdev device: \(errno)"
        case .directory(let path, let errno): return "\(path): cannot watch: \(errno)"
        case .write(let path, let errno): return "\(path): cannot write: \(errno)"
        case .ring(let error): return "the event system's ring failed: \(error)"
        case .configuration(let message): return message
        case .noSuchDevice(let id): return "no attached device has id \(id.rawValue)"
        case .server(let name, let reason): return "event server '\(name)': \(reason)"
        case .noSuchLED(let code, let device, let available):
            let names = available.sorted().map { Evdev.shownName(ofCode: $0, type: Evdev.EV_LED) }
            return "device \(device.rawValue) has no LED \(Evdev.shownName(ofCode: code, type: Evdev.EV_LED))"
                + (names.isEmpty ? " (it has none)" : "; it has \(names.joined(separator: ", "))")
        }
    }
}
