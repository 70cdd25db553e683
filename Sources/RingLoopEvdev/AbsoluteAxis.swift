import CLibEvdev

/// One absolute axis: the kernel's `struct input_absinfo` (value, range, fuzz, flat and
/// resolution).
public struct AbsoluteAxis: Hashable, Sendable {
    public var value: Int32
    public var minimum: Int32
    public var maximum: Int32
    public var fuzz: Int32
    public var flat: Int32
    /// Units per millimetre (per radian for rotation axes); 0 when unknown.
    public var resolution: Int32

    public init(value: Int32 = 0, minimum: Int32, maximum: Int32, fuzz: Int32 = 0, flat: Int32 = 0, resolution: Int32 = 0) {
        self.value = value
        self.minimum = minimum
        self.maximum = maximum
        self.fuzz = fuzz
        self.flat = flat
        self.resolution = resolution
    }

    /// The axis the kernel's struct describes.
    public init(_ info: input_absinfo) {
        self.init(
            value: info.value, minimum: info.minimum, maximum: info.maximum, fuzz: info.fuzz, flat: info.flat,
            resolution: info.resolution)
    }

    /// The kernel's struct for this axis.
    public var kernelInfo: input_absinfo {
        input_absinfo(value: value, minimum: minimum, maximum: maximum, fuzz: fuzz, flat: flat, resolution: resolution)
    }

    /// `value` scaled to 0…1 over the range (0 for an empty range).
    @inline(__always)
    public func normalized(_ value: Int32) -> Double {
        maximum > minimum ? Double(Int64(value) - Int64(minimum)) / Double(Int64(maximum) - Int64(minimum)) : 0
    }

    /// `value` in millimetres from the minimum, when the resolution is known.
    @inline(__always)
    public func millimetres(_ value: Int32) -> Double? {
        resolution > 0 ? Double(Int64(value) - Int64(minimum)) / Double(resolution) : nil
    }
}

extension AbsoluteAxis {
    /// Bytes of the kernel's `struct input_absinfo` (`EVIOCGABS`, `EVIOCSABS`).
    public static var kernelSize: Int { MemoryLayout<input_absinfo>.size }

    /// Reads an axis from the kernel struct's bytes, which need not be aligned.
    public init(bytes: UnsafeRawPointer) {
        self.init(bytes.loadUnaligned(as: input_absinfo.self))
    }

    /// The kernel struct's bytes, as `EVIOCGABS` returns them.
    public var kernelBytes: [UInt8] {
        withUnsafeBytes(of: kernelInfo) { Array($0) }
    }
}
