/// Little-endian bytes for the event server's messages: a writer that appends fields and
/// a reader that checks every length before it reads (what it reads comes from another
/// process).
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i16(_ value: Int16) { u16(UInt16(bitPattern: value)) }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func f64(_ value: Double) { u64(value.bitPattern) }

    /// A string of at most `UInt16.max` bytes of UTF-8, its length first.
    mutating func string(_ value: String) {
        let utf8 = Array(value.utf8.prefix(Int(UInt16.max)))
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    mutating func append(_ other: [UInt8]) { bytes.append(contentsOf: other) }
}

/// Reads what a ``WireWriter`` wrote; every read checks that the bytes are there, and the
/// typed reads check their ranges, throwing ``ServerWire/Violation`` otherwise.
struct WireReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    private mutating func take(_ count: Int, _ field: StaticString) throws(ServerWire.Violation) -> Int {
        guard count <= remaining else { throw .truncated(field: "\(field)", at: offset) }
        defer { offset += count }
        return offset
    }

    mutating func u8(_ field: StaticString) throws(ServerWire.Violation) -> UInt8 { bytes[try take(1, field)] }

    mutating func u16(_ field: StaticString) throws(ServerWire.Violation) -> UInt16 {
        let at = try take(2, field)
        return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    mutating func u32(_ field: StaticString) throws(ServerWire.Violation) -> UInt32 {
        let at = try take(4, field)
        var value: UInt32 = 0
        for index in 0..<4 { value |= UInt32(bytes[at + index]) << (8 * UInt32(index)) }
        return value
    }

    mutating func u64(_ field: StaticString) throws(ServerWire.Violation) -> UInt64 {
        let at = try take(8, field)
        var value: UInt64 = 0
        for index in 0..<8 { value |= UInt64(bytes[at + index]) << (8 * UInt64(index)) }
        return value
    }

    mutating func i16(_ field: StaticString) throws(ServerWire.Violation) -> Int16 { Int16(bitPattern: try u16(field)) }
    mutating func i32(_ field: StaticString) throws(ServerWire.Violation) -> Int32 { Int32(bitPattern: try u32(field)) }
    mutating func i64(_ field: StaticString) throws(ServerWire.Violation) -> Int64 { Int64(bitPattern: try u64(field)) }

    /// A boolean: exactly 0 or 1.
    mutating func bool(_ field: StaticString) throws(ServerWire.Violation) -> Bool {
        let value = try u8(field)
        guard value <= 1 else { throw .outOfRange(field: "\(field)", value: Int64(value)) }
        return value == 1
    }

    /// A finite number (no NaN or infinity).
    mutating func f64(_ field: StaticString) throws(ServerWire.Violation) -> Double {
        let value = Double(bitPattern: try u64(field))
        guard value.isFinite else { throw .notFinite(field: "\(field)") }
        return value
    }

    /// A pointer delta or scroll amount: a finite number of magnitude at most
    /// ``ServerWire/largestAmount``.
    mutating func amount(_ field: StaticString) throws(ServerWire.Violation) -> Double {
        let value = try f64(field)
        guard abs(value) <= ServerWire.largestAmount else {
            throw .beyondBound(field: "\(field)", bound: ServerWire.largestAmount)
        }
        return value
    }

    /// An integer within `range`.
    mutating func i32(_ field: StaticString, in range: ClosedRange<Int32>) throws(ServerWire.Violation) -> Int32 {
        let value = try i32(field)
        guard range.contains(value) else { throw .outOfRange(field: "\(field)", value: Int64(value)) }
        return value
    }

    /// A code no higher than `maximum`.
    mutating func code(_ field: StaticString, maximum: UInt16) throws(ServerWire.Violation) -> UInt16 {
        let value = try u16(field)
        guard value <= maximum else { throw .outOfRange(field: "\(field)", value: Int64(value)) }
        return value
    }

    /// A string of at most `maximum` bytes of valid UTF-8.
    mutating func string(_ field: StaticString, maximum: Int) throws(ServerWire.Violation) -> String {
        let count = Int(try u16(field))
        guard count <= maximum else { throw .outOfRange(field: "\(field)", value: Int64(count)) }
        let at = try take(count, field)
        guard let text = String(validating: bytes[at..<(at + count)], as: UTF8.self) else { throw .notUTF8(field: "\(field)") }
        return text
    }

    /// A string as ``string(_:maximum:)`` reads it, with no character that controls layout
    /// (no line break, escape, NUL or bidirectional override: `isLayoutControl`): a name
    /// another process chose, that logs and terminals show.
    mutating func printableString(_ field: StaticString, maximum: Int) throws(ServerWire.Violation) -> String {
        let text = try string(field, maximum: maximum)
        guard !text.unicodeScalars.contains(where: \.isLayoutControl) else {
            throw .controlCharacter(field: "\(field)")
        }
        return text
    }

    /// Fails unless every byte was read.
    func expectEnd(_ what: StaticString) throws(ServerWire.Violation) {
        guard isAtEnd else { throw .trailingBytes(what: "\(what)", count: remaining) }
    }
}
