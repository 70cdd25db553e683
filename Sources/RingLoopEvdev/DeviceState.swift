/// The state of one device as seen at one boundary on its way from the kernel to an app:
/// keys and buttons down, switches and LEDs on, the absolute axes' values, and its
/// contacts. The one ledger type: every place that keeps such a view of a device keeps one
/// of these, and they differ only in what they record of contacts (`Contacts`).
///
/// In the kernel's terms (``DeviceState``, contacts as multitouch slots):
/// - the kernel's own (a FUSE node's model of the input core, which answers `EVIOCGKEY`,
///   `EVIOCGSW`, `EVIOCGLED`, `EVIOCGABS` and `EVIOCGMTSLOTS` from it),
/// - what a description says the device was in (``InputDeviceDescription/state``: a
///   recording's `L:`/`S:` lines and axis values),
/// - what the input chain reads back from a node when it attaches and after
///   `SYN_DROPPED` (the read-back), and
/// - what the chain's decoder has applied so far (its `read` ledger); a resync is the
///   difference between the last two.
///
/// In events' terms (RingLoopHID's `VisibleState`: every ledger from the decoder's events
/// to an app, and between an event server and its clients) the contacts are the touches
/// and the pen as the events carried them (normalized, on a screen), and each key down is
/// tagged with the kind of event it was delivered as (``keyTags``: a key, a button, a
/// gamepad button; the kind of a code follows the device, so only the events say it).
///
/// Of fixed size except for what `Contacts` holds (the kernel's slots): reading or
/// changing it allocates nothing.
package struct DeviceLedger<Contacts: LedgerContacts>: Sendable {
    /// Keys and buttons down (`EV_KEY` codes).
    package var keys = KeyCodeSet()
    /// What each key down was recorded as, where a boundary tells kinds of key apart (0
    /// for every key in the kernel's terms); 0 for a key not down.
    package var keyTags = KeyTags()
    /// Switches on (`EV_SW` codes).
    package var switches = SmallCodeSet()
    /// LEDs on (`EV_LED` codes).
    package var leds = SmallCodeSet()
    /// The absolute axes' values, and which were read.
    package var axes = AxisValues()
    /// The contacts, as this boundary records them.
    package var contacts = Contacts()

    @inlinable package init() {}
}

/// What a ledger records of a device's contacts (the kernel's multitouch slots, or the
/// touches and pen of delivered events): a value that starts empty.
package protocol LedgerContacts: Sendable {
    /// No contact.
    init()
}

/// The ledger in the kernel's terms: contacts as multitouch slots.
package typealias DeviceState = DeviceLedger<MultitouchSlots>

/// A device's multitouch slots and which of them takes the next values.
package struct MultitouchSlots: LedgerContacts {
    /// The slots (empty for a device without them).
    package var slots: [MultitouchSlot] = []
    /// The slot the next multitouch values go to (`ABS_MT_SLOT`), when known.
    package var currentSlot: Int32?

    @inlinable package init() {}
}

extension DeviceLedger where Contacts == MultitouchSlots {
    /// One multitouch slot.
    package typealias Slot = MultitouchSlot

    /// The multitouch slots (empty for a device without them).
    @inlinable package var slots: [MultitouchSlot] {
        get { contacts.slots }
        _modify { yield &contacts.slots }
        set { contacts.slots = newValue }
    }

    /// The slot the next multitouch values go to (`ABS_MT_SLOT`), when known.
    @inlinable package var currentSlot: Int32? {
        get { contacts.currentSlot }
        set { contacts.currentSlot = newValue }
    }
}

/// One multitouch slot: the value of each per-slot code, `ABS_MT_TOUCH_MAJOR` (0x30) …
/// `ABS_MT_TOOL_Y` (0x3d); a slot starts unused (tracking id -1, the rest 0).
package struct MultitouchSlot: Sendable {
    @usableFromInline var values = InlineArray<14, Int32>(repeating: 0)

    package init() { self[Evdev.ABS_MT_TRACKING_ID] = -1 }

    /// A slot with a tracking id and a position (what a read-back asks for).
    package init(trackingID: Int32, x: Int32, y: Int32) {
        self[Evdev.ABS_MT_TRACKING_ID] = trackingID
        self[Evdev.ABS_MT_POSITION_X] = x
        self[Evdev.ABS_MT_POSITION_Y] = y
    }

    /// Whether `code` is a per-slot code (`ABS_MT_SLOT` itself is not one).
    @inlinable
    package static func holds(_ code: UInt16) -> Bool {
        code >= Evdev.ABS_MT_TOUCH_MAJOR && code <= Evdev.ABS_MT_TOOL_Y
    }

    /// The value of a per-slot code; any other code reads 0 and is not kept.
    @inlinable
    package subscript(code: UInt16) -> Int32 {
        get { Self.holds(code) ? values[Int(code &- Evdev.ABS_MT_TOUCH_MAJOR)] : 0 }
        set { if Self.holds(code) { values[Int(code &- Evdev.ABS_MT_TOUCH_MAJOR)] = newValue } }
    }

    @inlinable package var trackingID: Int32 {
        get { self[Evdev.ABS_MT_TRACKING_ID] }
        set { self[Evdev.ABS_MT_TRACKING_ID] = newValue }
    }
    @inlinable package var x: Int32 { self[Evdev.ABS_MT_POSITION_X] }
    @inlinable package var y: Int32 { self[Evdev.ABS_MT_POSITION_Y] }
    @inlinable package var pressure: Int32 { self[Evdev.ABS_MT_PRESSURE] }
    @inlinable package var major: Int32 { self[Evdev.ABS_MT_TOUCH_MAJOR] }
    @inlinable package var minor: Int32 { self[Evdev.ABS_MT_TOUCH_MINOR] }
    @inlinable package var orientation: Int32 { self[Evdev.ABS_MT_ORIENTATION] }
    @inlinable package var distance: Int32 { self[Evdev.ABS_MT_DISTANCE] }
    @inlinable package var toolType: Int32 { self[Evdev.ABS_MT_TOOL_TYPE] }
}

/// A tag of two bits (0…3) per key code (`KEY_CNT`), inline, as two bit planes: what a
/// ledger records each key down as where it tells kinds of key apart.
package struct KeyTags: Sendable, Equatable {
    @usableFromInline var low = KeyCodeSet()
    @usableFromInline var high = KeyCodeSet()

    package init() {}

    /// The tag of `code` (0 for a code never tagged or beyond `KEY_MAX`); only the low two
    /// bits of a tag set are kept.
    @inlinable
    package subscript(code: UInt16) -> UInt8 {
        get { (low.contains(code) ? 1 : 0) | (high.contains(code) ? 2 : 0) }
        set {
            low.set(code, newValue & 1 != 0)
            high.set(code, newValue & 2 != 0)
        }
    }
}

extension InputDeviceDescription {
    /// The state the description says the device was in: its keys down, switches and
    /// LEDs on, its axes' values (not the per-slot ones) and, for a multitouch device,
    /// every slot unused with slot 0 current (as the kernel creates a device).
    package var state: DeviceState {
        var state = DeviceState()
        state.keys = KeyCodeSet(keysDown)
        state.switches = SmallCodeSet(switchStates.filter { $0.value != 0 }.keys)
        state.leds = SmallCodeSet(ledStates.filter { $0.value != 0 }.keys)
        for (code, axis) in absoluteAxes where !Evdev.isMultitouchAxis(code) { state.axes[code] = axis.value }
        if slotCount > 0 {
            state.slots = Array(repeating: DeviceState.Slot(), count: slotCount)
            state.currentSlot = 0
        }
        return state
    }
}

/// The absolute axes' values by code (`ABS_CNT`, 64), inline, with which of them were
/// set: a read-back sets only the axes the device has.
package struct AxisValues: Sendable {
    @usableFromInline var values = InlineArray<64, Int32>(repeating: 0)
    /// A bit per code that was set.
    @usableFromInline var present: UInt64 = 0

    package init() {}

    /// The value of `code` (0 for one never set or beyond `ABS_MAX`); setting one beyond
    /// `ABS_MAX` does nothing.
    @inlinable
    package subscript(code: UInt16) -> Int32 {
        get { code < 64 ? values[Int(code)] : 0 }
        set {
            guard code < 64 else { return }
            values[Int(code)] = newValue
            present |= 1 << UInt64(code)
        }
    }

    /// The codes set, in ascending order.
    package var codes: [UInt16] {
        (0..<UInt16(64)).filter { present & (1 << UInt64($0)) != 0 }
    }
}

/// The key codes (`KEY_CNT`, 768 bits) of a set, inline: no allocation.
package struct KeyCodeSet: Sendable, Equatable {
    @usableFromInline static let wordCount = 12
    @usableFromInline var words = InlineArray<12, UInt64>(repeating: 0)

    package init() {}

    /// A set of the codes given (those beyond `KEY_MAX` are left out).
    package init(_ codes: some Sequence<UInt16>) {
        for code in codes { set(code, true) }
    }

    @inlinable
    package func contains(_ code: UInt16) -> Bool {
        code < Evdev.KEY_CNT && words[Int(code) / 64] & (1 << (UInt64(code) % 64)) != 0
    }

    @inlinable
    package var isEmpty: Bool {
        var any: UInt64 = 0
        for word in 0..<Self.wordCount { any |= words[word] }
        return any == 0
    }

    @inlinable
    package mutating func set(_ code: UInt16, _ on: Bool) {
        guard code < Evdev.KEY_CNT else { return }
        if on { words[Int(code) / 64] |= 1 << (UInt64(code) % 64) } else { words[Int(code) / 64] &= ~(1 << (UInt64(code) % 64)) }
    }

    /// The codes in the set, in ascending order.
    package var all: [UInt16] {
        var codes: [UInt16] = []
        for word in 0..<Self.wordCount where words[word] != 0 {
            for bit in 0..<64 where words[word] & (1 << UInt64(bit)) != 0 { codes.append(UInt16(word * 64 + bit)) }
        }
        return codes
    }

    /// The set as the kernel's bit mask (`EVIOCGKEY`: little-endian longs).
    package var bytes: [UInt8] { (0..<Self.wordCount).flatMap { KernelMask.bytes(of: words[$0]) } }

    package static func == (lhs: KeyCodeSet, rhs: KeyCodeSet) -> Bool {
        (0..<wordCount).allSatisfy { lhs.words[$0] == rhs.words[$0] }
    }
}

/// The codes of a type with at most 64 of them (switches, LEDs, sounds), as bits.
package struct SmallCodeSet: Sendable, Equatable {
    package private(set) var bits: UInt64 = 0

    package init() {}

    /// A set of the codes given (those beyond 63 are left out).
    package init(_ codes: some Sequence<UInt16>) {
        for code in codes { set(code, true) }
    }

    @inlinable
    package func contains(_ code: UInt16) -> Bool { code < 64 && bits & (1 << UInt64(code)) != 0 }

    package var isEmpty: Bool { bits == 0 }

    @inlinable
    package mutating func set(_ code: UInt16, _ on: Bool) {
        guard code < 64 else { return }
        if on { bits |= 1 << UInt64(code) } else { bits &= ~(1 << UInt64(code)) }
    }

    /// The codes in the set, in ascending order.
    package var all: [UInt16] { (0..<UInt16(64)).filter { contains($0) } }

    /// The codes in one set and not the other, in ascending order.
    package func changed(from other: SmallCodeSet) -> [UInt16] { SmallCodeSet(bits: bits ^ other.bits).all }

    /// The set as the kernel's bit mask (`EVIOCGSW`, `EVIOCGLED`, `EVIOCGSND`: one long).
    package var bytes: [UInt8] { KernelMask.bytes(of: bits) }

    private init(bits: UInt64) { self.bits = bits }
}

/// The kernel's layout of a bit mask: little-endian 64-bit words.
enum KernelMask {
    static func bytes(of word: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } }
}
