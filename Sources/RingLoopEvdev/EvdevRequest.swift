/// An evdev `ioctl` request, taken apart as the kernel's `_IOC` encodes it: direction,
/// type (`'E'` for evdev), number and argument size. The numbers are the `EVIOC*` macros'
/// (`linux/input.h`); those that take an argument add it to a base (`EVIOCGBIT` + type,
/// `EVIOCGABS` + axis), and those that take a length carry it in ``size``.
public struct EvdevRequest: Hashable, Sendable {
    /// Which way the argument goes (`_IOC_NONE`, `_IOC_WRITE`, `_IOC_READ`).
    public enum Direction: UInt32, Sendable {
        case none = 0
        /// The caller passes data in (`_IOW`).
        case write = 1
        /// The caller reads data out (`_IOR`).
        case read = 2
        case readWrite = 3
    }

    public var direction: Direction
    /// `'E'` for evdev.
    public var type: UInt8
    public var number: UInt8
    /// The argument's size in bytes, as the request encodes it (the buffer length for
    /// `EVIOCGNAME(len)` and the other variable-length reads).
    public var size: Int

    /// Takes apart a request number as a driver's `ioctl` receives it.
    public init(command: UInt32) {
        number = UInt8(truncatingIfNeeded: command)
        type = UInt8(truncatingIfNeeded: command >> 8)
        size = Int((command >> 16) & 0x3fff)  // _IOC_SIZEBITS: 14
        direction = Direction(rawValue: command >> 30)!
    }

    /// Whether the request is evdev's (`'E'`).
    public var isEvdev: Bool { type == UInt8(ascii: "E") }

    public static let EVIOCGVERSION: UInt8 = 0x01
    public static let EVIOCGID: UInt8 = 0x02
    /// `EVIOCGREP` (read) and `EVIOCSREP` (write).
    public static let EVIOCGREP: UInt8 = 0x03
    public static let EVIOCSREP: UInt8 = 0x03
    public static let EVIOCGKEYCODE: UInt8 = 0x04
    public static let EVIOCGNAME: UInt8 = 0x06
    public static let EVIOCGPHYS: UInt8 = 0x07
    public static let EVIOCGUNIQ: UInt8 = 0x08
    public static let EVIOCGPROP: UInt8 = 0x09
    public static let EVIOCGMTSLOTS: UInt8 = 0x0a
    public static let EVIOCGKEY: UInt8 = 0x18
    public static let EVIOCGLED: UInt8 = 0x19
    public static let EVIOCGSND: UInt8 = 0x1a
    public static let EVIOCGSW: UInt8 = 0x1b
    /// `EVIOCGBIT(type, len)`: this plus the event type (0 for the type mask).
    public static let EVIOCGBIT: UInt8 = 0x20
    /// `EVIOCGABS(axis)`: this plus the axis code.
    public static let EVIOCGABS: UInt8 = 0x40
    public static let EVIOCSFF: UInt8 = 0x80
    public static let EVIOCRMFF: UInt8 = 0x81
    public static let EVIOCGEFFECTS: UInt8 = 0x84
    public static let EVIOCGRAB: UInt8 = 0x90
    public static let EVIOCREVOKE: UInt8 = 0x91
    public static let EVIOCGMASK: UInt8 = 0x92
    public static let EVIOCSMASK: UInt8 = 0x93
    /// `EVIOCSABS(axis)`: this plus the axis code.
    public static let EVIOCSABS: UInt8 = 0xc0
    public static let EVIOCSCLOCKID: UInt8 = 0xa0

    /// The requests whose reply is a length, not 0: the variable-length reads
    /// (`EVIOCGNAME` and after, except `EVIOCGMTSLOTS`, which fills the caller's buffer).
    public var repliesWithLength: Bool {
        direction == .read && number >= Self.EVIOCGNAME && number != Self.EVIOCGMTSLOTS
    }
}

extension Evdev {
    /// The evdev protocol version `EVIOCGVERSION` reports (`EV_VERSION`).
    public static let EV_VERSION: Int32 = 0x010001
}
