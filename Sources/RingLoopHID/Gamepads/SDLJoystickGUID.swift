/// A joystick's identity as SDL 2 gives it on Linux (`SDL_JoystickGUID`): what
/// SDL_GameControllerDB keys its mapping lines by.
///
/// Sixteen bytes, written as 32 lowercase hex digits in memory order. For an evdev
/// device SDL's Linux backend fills them as eight little-endian 16-bit fields:
///
/// | field | bytes | value |
/// |---|---|---|
/// | 0 | 0–1 | the bus (`BUS_USB` is 3) |
/// | 1 | 2–3 | the CRC-16 of the device's name as SDL names it (see ``SDLJoystickNaming``) |
/// | 2 | 4–5 | the vendor id |
/// | 3 | 6–7 | 0 |
/// | 4 | 8–9 | the product id |
/// | 5 | 10–11 | 0 |
/// | 6 | 12–13 | the product's version |
/// | 7 | 14–15 | a driver's signature and data (0 for evdev devices) |
///
/// A device without a vendor or product id carries the name's first 11 bytes (12 without
/// a driver signature) after the CRC instead. Mapping lines carry no CRC in their GUID (its
/// field is 0; a `crc:` field may say it); matching clears it (``withoutCRC``).
///
/// Worked out from SDL 2.26's documented layout and checked against libsdl2 itself on
/// the virtual devices of the bundled recordings (tests).
public struct SDLJoystickGUID: Hashable, Sendable, CustomStringConvertible {
    /// The sixteen bytes in SDL's order.
    public private(set) var bytes: [UInt8]

    /// A GUID of these 16 bytes; `nil` unless there are exactly 16.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// SDL's GUID for a device with these ids and this name (SDL's
    /// `SDL_CreateJoystickGUID`). `name` is the name as SDL names the device, not
    /// necessarily the kernel's (``SDLJoystickNaming/name(vendor:product:productName:)``).
    public init(
        bus: UInt16, vendor: UInt16, product: UInt16, version: UInt16, name: String,
        driverSignature: UInt8 = 0, driverData: UInt8 = 0
    ) {
        var bytes = [UInt8](repeating: 0, count: 16)
        func put(_ value: UInt16, at field: Int) {
            bytes[field * 2] = UInt8(truncatingIfNeeded: value)
            bytes[field * 2 + 1] = UInt8(truncatingIfNeeded: value >> 8)
        }
        put(bus, at: 0)
        put(Self.crc16(Array(name.utf8)), at: 1)
        if vendor != 0 && product != 0 {
            put(vendor, at: 2)
            put(product, at: 4)
            put(version, at: 6)
            bytes[14] = driverSignature
            bytes[15] = driverData
        } else {
            // The name itself, NUL-terminated, in what is left (SDL_strlcpy's bound).
            var room = 12
            if driverSignature != 0 {
                room -= 2
                bytes[14] = driverSignature
                bytes[15] = driverData
            }
            for (offset, byte) in name.utf8.prefix(room - 1).enumerated() { bytes[4 + offset] = byte }
        }
        self.bytes = bytes
    }

    /// Reads 32 hex digits (either case); `nil` for anything else. (SDL itself reads any
    /// string, taking what is not a hex digit as 0: a mapping line whose GUID is not 32 hex
    /// digits is reported as malformed here instead.)
    public init?(hexString: some StringProtocol) {
        let digits = Array(hexString.utf8)
        guard digits.count == 32 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            guard let high = Self.hexValue(digits[index * 2]), let low = Self.hexValue(digits[index * 2 + 1]) else {
                return nil
            }
            bytes[index] = high << 4 | low
        }
        self.bytes = bytes
    }

    /// The 32 lowercase hex digits, as `SDL_JoystickGetGUIDString` writes them.
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(32)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    public var description: String { hexString }

    /// The 16-bit field `index` (0…7), little-endian.
    public func field(_ index: Int) -> UInt16 { UInt16(bytes[index * 2]) | UInt16(bytes[index * 2 + 1]) << 8 }

    private mutating func setField(_ index: Int, _ value: UInt16) {
        bytes[index * 2] = UInt8(truncatingIfNeeded: value)
        bytes[index * 2 + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }

    /// Whether the GUID has SDL's standard form (a bus below 0x20 or SDL's virtual bus 0xff,
    /// and zero padding after vendor and product), so that vendor, product, version and CRC
    /// can be read from it (`SDL_GetJoystickGUIDInfo`).
    public var hasStandardForm: Bool {
        let bus = field(0)
        return (bus < 0x20 || bus == 0xff) && field(3) == 0 && field(5) == 0
    }

    /// The bus field.
    public var bus: UInt16 { field(0) }
    /// The name's CRC-16 (0 in mapping lines); `SDL_GetJoystickGUIDInfo` reads it for
    /// any bus below 0x20.
    public var crc: UInt16 { hasStandardForm || field(0) < 0x20 ? field(1) : 0 }
    /// The vendor id, or 0 where the GUID does not have the standard form.
    public var vendor: UInt16 { hasStandardForm ? field(2) : 0 }
    /// The product id, or 0 where the GUID does not have the standard form.
    public var product: UInt16 { hasStandardForm ? field(4) : 0 }
    /// The version, or 0 where the GUID does not have the standard form.
    public var version: UInt16 { hasStandardForm ? field(6) : 0 }

    /// The same GUID with the CRC field 0, as mapping lines carry it.
    public var withoutCRC: SDLJoystickGUID {
        var copy = self
        copy.setField(1, 0)
        return copy
    }

    /// The same GUID with the CRC field set to `crc`.
    public func withCRC(_ crc: UInt16) -> SDLJoystickGUID {
        var copy = self
        copy.setField(1, crc)
        return copy
    }

    /// The same GUID with the version field 0, as SDL matches when no line has the version.
    public var withoutVersion: SDLJoystickGUID {
        var copy = self
        copy.setField(6, 0)
        return copy
    }

    /// The CRC SDL takes of names (`SDL_crc16`): CRC-16/ARC, the reflected polynomial
    /// 0xA001, starting at 0, over the UTF-8 bytes.
    public static func crc16(_ data: some Sequence<UInt8>, startingAt crc: UInt16 = 0) -> UInt16 {
        var crc = crc
        for byte in data {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
