/// Bytes a receive or stream read delivered, lent in place: the ring's buffer the kernel
/// put them in, for the duration of one ``LoopIOChannel/ReceivedHandler`` call.
///
/// Not copyable and only ever borrowed, so it cannot outlive the call; the buffer goes
/// back to the kernel after it. Read the bytes in place (``withBytes(_:)``,
/// ``withUnsafeBytes(_:)``), copy what you keep (``copied()``), or send them on with
/// ``LoopIOChannel/send(_:completion:)-(ReceivedBytes,_)``, which writes from the same buffer and
/// holds it until the kernel has sent it.
///
/// ```swift
/// try connection.receive { connection, bytes in
///     let first = bytes.withBytes { $0.byteCount > 0 ? $0.unsafeLoad(as: UInt8.self) : 0 }
///     if first == UInt8(ascii: "q") { connection.closeAfterWrites() } else { _ = try? connection.send(bytes) }
/// }
/// ```
public struct ReceivedBytes: ~Copyable {
    let buffers: ProvidedBuffers
    let id: UInt16
    /// The channel whose receive the buffer belongs to.
    let receiver: LoopIOChannel

    /// How many bytes were received.
    public let count: Int

    init(buffers: ProvidedBuffers, id: UInt16, count: Int, receiver: LoopIOChannel) {
        self.buffers = buffers
        self.id = id
        self.count = count
        self.receiver = receiver
    }

    /// Whether no byte was received.
    public var isEmpty: Bool { count == 0 }

    /// Calls `body` with the bytes as a span, valid during the call.
    public func withBytes<Result, Failure: Error>(_ body: (RawSpan) throws(Failure) -> Result) throws(Failure) -> Result {
        try body(buffers.bytes(id, length: count).bytes)
    }

    /// Calls `body` with a pointer to the bytes, valid during the call only.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(buffers.bytes(id, length: count))
    }

    /// A copy of the bytes, to keep after the call.
    public func copied() -> [UInt8] { Array(buffers.bytes(id, length: count)) }

    /// The byte at `index` (0 ..< ``count``).
    public subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "byte \(index) of \(count) received")
        return buffers.bytes(id, length: count)[index]
    }
}
