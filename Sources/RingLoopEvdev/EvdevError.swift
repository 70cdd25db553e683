import SystemPackage

/// Why a request to an evdev node failed: which request, and the errno the kernel (or
/// libevdev, or a FUSE node's server) answered.
///
/// The one error of this layer: ``EvdevDevice``'s requests and
/// ``InputDeviceDescription/init(fileDescriptor:)`` throw it.
public struct EvdevError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A request to an evdev node, by the name of its `EVIOC*` macro (or of the call that
    /// made it).
    public enum Request: Hashable, Sendable, CustomStringConvertible {
        /// `open(2)` of a node.
        case open(path: String)
        /// libevdev's reading of a node (`libevdev_new_from_fd`, which makes the queries
        /// below).
        case describe
        /// `EVIOCGVERSION`.
        case driverVersion
        /// `EVIOCGID`.
        case identity
        /// `EVIOCGNAME`.
        case name
        /// `EVIOCGPHYS`.
        case physicalLocation
        /// `EVIOCGUNIQ`.
        case uniqueIdentifier
        /// `EVIOCGPROP`.
        case properties
        /// `EVIOCGBIT(type)`: the codes of one event type (of the types for `EV_SYN`).
        case codes(type: UInt16)
        /// `EVIOCGABS(axis)`.
        case absoluteAxis(UInt16)
        /// `EVIOCGKEY`.
        case keyState
        /// `EVIOCGSW`.
        case switchState
        /// `EVIOCGLED`.
        case ledState
        /// `EVIOCGMTSLOTS` for one axis.
        case slotValues(axis: UInt16)
        /// `EVIOCGRAB` with a non-zero argument.
        case grab
        /// `EVIOCGRAB` with 0.
        case ungrab
        /// `EVIOCSCLOCKID`.
        case setClock
        /// `EVIOCGREP`.
        case keyRepeat
        /// `EVIOCSREP`.
        case setKeyRepeat
        /// A `write(2)` of events (an LED's state).
        case write
        /// `EVIOCGEFFECTS`.
        case effectCount
        /// `EVIOCSFF`.
        case uploadEffect
        /// `EVIOCRMFF`.
        case eraseEffect(Int16)

        public var description: String {
            switch self {
            case .open(let path): return "open \(path)"
            case .describe: return "libevdev_new_from_fd"
            case .driverVersion: return "EVIOCGVERSION"
            case .identity: return "EVIOCGID"
            case .name: return "EVIOCGNAME"
            case .physicalLocation: return "EVIOCGPHYS"
            case .uniqueIdentifier: return "EVIOCGUNIQ"
            case .properties: return "EVIOCGPROP"
            case .codes(let type): return "EVIOCGBIT(\(Evdev.shownName(ofType: type)))"
            case .absoluteAxis(let code): return "EVIOCGABS(\(Evdev.shownName(ofCode: code, type: Evdev.EV_ABS)))"
            case .keyState: return "EVIOCGKEY"
            case .switchState: return "EVIOCGSW"
            case .ledState: return "EVIOCGLED"
            case .slotValues(let axis): return "EVIOCGMTSLOTS(\(Evdev.shownName(ofCode: axis, type: Evdev.EV_ABS)))"
            case .grab: return "EVIOCGRAB(1)"
            case .ungrab: return "EVIOCGRAB(0)"
            case .setClock: return "EVIOCSCLOCKID"
            case .keyRepeat: return "EVIOCGREP"
            case .setKeyRepeat: return "EVIOCSREP"
            case .write: return "write"
            case .effectCount: return "EVIOCGEFFECTS"
            case .uploadEffect: return "EVIOCSFF"
            case .eraseEffect(let id): return "EVIOCRMFF(\(id))"
            }
        }
    }

    /// The request that failed.
    public var request: Request
    /// What the node answered (`ENOTTY`: not an evdev node; `EINVAL`: a code it does not
    /// have; `EBADF`: a closed descriptor; `EBUSY`: grabbed by another reader).
    public var errno: Errno

    /// An error for `request`, answered with `errno`.
    public init(request: Request, errno: Errno) {
        self.request = request
        self.errno = errno
    }

    /// The request and the errno, as `EVIOCGABS(ABS_X): Invalid argument`.
    public var description: String { "\(request): \(errno)" }
}
