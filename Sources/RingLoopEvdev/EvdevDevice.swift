import CLibEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// An open evdev node and every `EVIOC*` request the package makes to it: the one place
/// outside the FUSE and uinput code where the package talks `ioctl` to an input device.
///
/// A value that names a descriptor: ``init(fileDescriptor:)`` borrows one (its owner
/// closes it), ``open(path:writable:)`` opens one that ``close()`` closes. Each request
/// is one system call, retried on `EINTR`, and throws an ``EvdevError`` that names the
/// request and carries the errno.
///
/// ```swift
/// let device = try EvdevDevice.open(path: "/dev/input/event3")
/// defer { device.close() }
/// try device.setClock(CLOCK_MONOTONIC)
/// let x = try device.absoluteAxis(Evdev.ABS_X)
/// ```
public struct EvdevDevice: Hashable, Sendable {
    /// The node's descriptor.
    public let fileDescriptor: Int32

    /// Makes requests to a descriptor someone else owns and closes.
    public init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Opens a node (`O_RDONLY` or `O_RDWR`, non-blocking, close-on-exec); ``close()``
    /// closes it.
    public static func open(path: String, writable: Bool = false) throws(EvdevError) -> EvdevDevice {
        let flags = (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC
        let fd = Glibc.open(path, flags)
        guard fd >= 0 else { throw EvdevError(request: .open(path: path), errno: Errno(rawValue: errno)) }
        return EvdevDevice(fileDescriptor: fd)
    }

    /// Closes the descriptor (for a device from ``open(path:writable:)``).
    public func close() { _ = Glibc.close(fileDescriptor) }

    /// One `ioctl`, retried on `EINTR`; returns its non-negative result or throws.
    @discardableResult
    func request(_ request: EvdevError.Request, _ command: UInt, _ argument: UnsafeMutableRawPointer?) throws(EvdevError) -> Int32 {
        while true {
            // A null argument is passed as the integer 0 (`EVIOCGRAB`'s "ungrab").
            let result = argument.map { ioctl(fileDescriptor, command, $0) } ?? ioctl(fileDescriptor, command, Int32(0))
            if result >= 0 { return result }
            guard errno == EINTR else { throw EvdevError(request: request, errno: Errno(rawValue: errno)) }
        }
    }

    /// A variable-length read into `count` bytes (the bit masks, the strings); returns
    /// the bytes, zero-filled past what the node wrote.
    func read(_ request: EvdevError.Request, count: Int, _ command: (UInt32) -> UInt) throws(EvdevError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { buffer in
            Swift.Result { () throws(EvdevError) in try self.request(request, command(UInt32(count)), buffer.baseAddress) }
        }
        _ = try result.get()
        return bytes
    }

    /// A string request (`EVIOCGNAME`, `EVIOCGPHYS`, `EVIOCGUNIQ`), up to 256 bytes.
    func string(_ request: EvdevError.Request, _ command: (UInt32) -> UInt) throws(EvdevError) -> String {
        let bytes = try read(request, count: 256, command)
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// The codes whose bits are set in a mask.
    static func codes(in mask: [UInt8]) -> Set<UInt16> {
        var set = Set<UInt16>()
        for (index, byte) in mask.enumerated() where byte != 0 {
            for bit in 0..<8 where byte & (1 << bit) != 0 { set.insert(UInt16(index * 8 + bit)) }
        }
        return set
    }
}
