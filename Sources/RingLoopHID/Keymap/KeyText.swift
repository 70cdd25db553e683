/// The UTF-8 text a key typed, held inline (no allocation): up to ``capacity`` bytes, which
/// covers any one character and every sequence of the system's Compose tables (the longest
/// in libX11's `en_US.UTF-8` table is 6 bytes).
///
/// A longer result (a user's own Compose file can name any string) is cut after its last
/// whole character that fits, and ``isTruncated`` says so; ``KeyboardState`` keeps the whole
/// of its last composed text.
public struct KeyText: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes held.
    public static let capacity = 15

    // Bytes 0…7 in `low`, 8…14 in `high`'s low bytes; the count in `high`'s top byte (its
    // top bit: truncated).
    private var low: UInt64 = 0
    private var high: UInt64 = 0

    /// No text.
    public init() {}

    /// `string`'s UTF-8, cut after its last whole character within ``capacity`` bytes.
    public init(_ string: String) {
        var copy = string
        copy.withUTF8 { self = KeyText(utf8: $0) }
    }

    /// The text of `utf8` (UTF-8 bytes), cut after its last whole character within
    /// ``capacity`` bytes.
    ///
    /// - Parameter utf8: UTF-8 bytes; invalid sequences are kept as they are (libxkbcommon
    ///   writes only valid UTF-8).
    public init(utf8: UnsafeBufferPointer<UInt8>) {
        var count = utf8.count
        var truncated = false
        if count > Self.capacity {
            truncated = true
            count = Self.capacity
            // Back up to the start of the character that did not fit.
            while count > 0 && utf8[count] & 0xC0 == 0x80 { count -= 1 }
        }
        var bytes: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<count { raw[index] = utf8[index] }
            raw[15] = UInt8(count) | (truncated ? 0x80 : 0)
        }
        low = bytes.0
        high = bytes.1
    }

    /// The number of UTF-8 bytes.
    public var count: Int { Int((high >> 56) & 0x7F) }

    /// Whether there is no text.
    public var isEmpty: Bool { count == 0 }

    /// Whether the text was longer than ``capacity`` bytes and was cut.
    public var isTruncated: Bool { high >> 63 != 0 }

    /// Calls `body` with the UTF-8 bytes (no allocation).
    ///
    /// - Parameter body: Reads the bytes; they are valid only during the call.
    /// - Returns: What `body` returns.
    public func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        var bytes = (low, high)
        let count = self.count
        return try withUnsafeBytes(of: &bytes) { raw in
            try body(UnsafeBufferPointer(start: raw.bindMemory(to: UInt8.self).baseAddress, count: count))
        }
    }

    /// The text as a `String` (15 bytes or fewer: Swift keeps it inline, no allocation).
    public var string: String { withUTF8 { String(decoding: $0, as: UTF8.self) } }

    public var description: String { string }
}
