import CLibEvdev

/// One evdev event: time, type, code and value — the kernel's `struct input_event`.
///
/// Its bytes cross the device-file boundary through ``init(bytes:)`` and
/// ``store(to:)``, which go through the C struct: ``size`` and the field offsets are the
/// C compiler's for the target (24 bytes on 64-bit Linux, 16 on 32-bit ARM), never assumed.
public struct InputEvent: Hashable, Sendable, CustomStringConvertible {
    /// Whole seconds of the timestamp.
    public var seconds: Int64
    /// Microseconds of the timestamp (0–999,999).
    public var microseconds: Int32
    /// The event type (``Evdev/EV_KEY``…).
    public var type: UInt16
    /// The event code (``Evdev/KEY_A``…).
    public var code: UInt16
    /// The value (a key's 0, 1 or 2, an axis position, a relative motion…).
    public var value: Int32

    public init(seconds: Int64 = 0, microseconds: Int32 = 0, type: UInt16, code: UInt16, value: Int32) {
        self.seconds = seconds
        self.microseconds = microseconds
        self.type = type
        self.code = code
        self.value = value
    }

    /// The event the kernel's struct holds.
    public init(_ event: input_event) {
        var copy = event
        self.init(
            seconds: Int64(ringloop_input_event_sec(&copy)), microseconds: Int32(truncatingIfNeeded: ringloop_input_event_usec(&copy)),
            type: event.type, code: event.code, value: event.value)
    }

    /// The kernel's struct for this event.
    public var kernelEvent: input_event {
        var event = input_event()
        ringloop_input_event_set_time(&event, seconds, Int(microseconds))
        event.type = type
        event.code = code
        event.value = value
        return event
    }

    /// Bytes of one event in a device file's stream (`sizeof(struct input_event)`).
    public static var size: Int { MemoryLayout<input_event>.size }

    /// Reads an event from `bytes`, which need not be aligned.
    public init(bytes: UnsafeRawPointer) {
        self.init(bytes.loadUnaligned(as: input_event.self))
    }

    /// Writes the event's ``size`` bytes at `pointer`, which need not be aligned.
    public func store(to pointer: UnsafeMutableRawPointer) {
        pointer.storeBytes(of: kernelEvent, as: input_event.self)
    }

    /// The timestamp in microseconds.
    public var timeMicroseconds: Int64 { seconds &* 1_000_000 &+ Int64(microseconds) }

    /// Whether this is the `SYN_REPORT` that ends a frame.
    public var isSynReport: Bool { type == Evdev.EV_SYN && code == Evdev.SYN_REPORT }

    /// `EV_KEY / BTN_TOUCH 1`: the names libevdev shows, or the numbers in hexadecimal.
    public var description: String {
        "\(Evdev.shownName(ofType: type)) / \(Evdev.shownName(ofCode: code, type: type)) \(value)"
    }
}
