import RingLoopEvdev

/// A device's current state and the input core's event filter, as the kernel's
/// `drivers/input/input.c` keeps them: a key event that does not change the key's
/// state is dropped (repeats pass only while the key is down), relative events of 0
/// are dropped, absolute values are defuzzed and dropped when unchanged, multitouch
/// values go to the current slot and `ABS_MT_SLOT` is sent only before a value that
/// changed, multitouch values of a device without slots pass unfiltered, and a
/// `SYN_REPORT` with nothing before it is no frame at all.
package struct EvdevDeviceState {
    let description: InputDeviceDescription
    private(set) var keys: BitSet
    private(set) var leds: BitSet
    private(set) var switches: BitSet
    private(set) var sounds: BitSet
    private(set) var axes: [UInt16: AbsoluteAxis]
    /// Per slot, the values of ABS_MT_TOUCH_MAJOR (0x30) … ABS_MT_TOOL_Y (0x3d).
    private(set) var slots: [[Int32]]
    private var stagedSlot: Int32 = 0
    private(set) var repeatDelay: Int32
    private(set) var repeatPeriod: Int32
    /// Events of the frame being built, waiting for its SYN_REPORT.
    private var frame: [(UInt16, UInt16, Int32)] = []
    /// The value of the `SYN_REPORT` that ended the last frame: the input core passes it
    /// on as sent (1 for the frames of its own key repeat).
    package private(set) var frameEndValue: Int32 = 0
    /// Whether absolute values are defuzzed. Off when replaying a recording: recorded
    /// values already went through the filter once, and a second pass would move them.
    let appliesFuzz: Bool

    /// The per-slot codes (ABS_MT_SLOT itself is not one).
    static let firstMultitouchCode = Evdev.ABS_MT_TOUCH_MAJOR
    static let lastMultitouchCode = Evdev.ABS_MT_TOOL_Y

    package init(description: InputDeviceDescription, appliesFuzz: Bool = true) {
        self.description = description
        self.appliesFuzz = appliesFuzz
        keys = BitSet(bits: Int(Evdev.KEY_CNT), set: description.keysDown)
        leds = BitSet(bits: Int(Evdev.LED_CNT), set: Set(description.ledStates.filter { $0.value != 0 }.keys))
        switches = BitSet(bits: Int(Evdev.SW_CNT), set: Set(description.switchStates.filter { $0.value != 0 }.keys))
        sounds = BitSet(bits: Int(Evdev.SND_CNT), set: [])
        axes = description.absoluteAxes
        let slotCount = description.slotCount
        let firstValues = (Self.firstMultitouchCode...Self.lastMultitouchCode).map { code -> Int32 in
            code == Evdev.ABS_MT_TRACKING_ID ? -1 : 0  // starts unused
        }
        slots = Array(repeating: firstValues, count: slotCount)
        if slotCount > 0 { axes[Evdev.ABS_MT_SLOT]?.value = 0 }
        repeatDelay = description.keyRepeat?.delay ?? 0
        repeatPeriod = description.keyRepeat?.period ?? 0
    }

    private func supports(_ type: UInt16, _ code: UInt16) -> Bool { description.has(type: type, code: code) }

    /// Feeds one event through the filter. Returns a completed frame (events without
    /// the closing SYN_REPORT) when `event` is a SYN_REPORT that ends a non-empty frame.
    package mutating func feed(type: UInt16, code: UInt16, value: Int32) -> [(UInt16, UInt16, Int32)]? {
        switch type {
        case Evdev.EV_SYN:
            switch code {
            case Evdev.SYN_REPORT:
                guard !frame.isEmpty else { return nil }
                defer { frame.removeAll(keepingCapacity: true) }
                frameEndValue = value
                return frame
            case Evdev.SYN_MT_REPORT:
                frame.append((type, code, value))
            default:
                break  // SYN_CONFIG and SYN_DROPPED from a device are not passed on
            }
        case Evdev.EV_KEY:
            guard supports(type, code) else { return nil }
            if value == 2 {
                if keys.contains(code) { frame.append((type, code, value)) }
            } else if keys.contains(code) != (value != 0) {
                keys.set(code, value != 0)
                frame.append((type, code, value))
            }
        case Evdev.EV_REL:
            if supports(type, code), value != 0 { frame.append((type, code, value)) }
        case Evdev.EV_ABS:
            guard supports(type, code) else { return nil }
            feedAbsolute(code: code, value: value)
        case Evdev.EV_MSC:
            if supports(type, code) { frame.append((type, code, value)) }
        case Evdev.EV_SW:
            if supports(type, code), switches.contains(code) != (value != 0) {
                switches.set(code, value != 0)
                frame.append((type, code, value))
            }
        case Evdev.EV_LED:
            if supports(type, code), leds.contains(code) != (value != 0) {
                leds.set(code, value != 0)
                frame.append((type, code, value))
            }
        case Evdev.EV_SND:
            if supports(type, code), sounds.contains(code) != (value != 0) {
                sounds.set(code, value != 0)
                frame.append((type, code, value))
            }
        case Evdev.EV_REP:
            guard description.keyRepeat != nil, code <= Evdev.REP_MAX, value >= 0 else { return nil }
            if code == Evdev.REP_DELAY, repeatDelay != value {
                repeatDelay = value
                frame.append((type, code, value))
            } else if code == Evdev.REP_PERIOD, repeatPeriod != value {
                repeatPeriod = value
                frame.append((type, code, value))
            }
        case Evdev.EV_FF, Evdev.EV_PWR:
            if value >= 0 { frame.append((type, code, value)) }
        default:
            break
        }
        return nil
    }

    private mutating func feedAbsolute(code: UInt16, value: Int32) {
        let multitouch = !slots.isEmpty
        if code == Evdev.ABS_MT_SLOT {  // staged until a value in that slot changes
            if multitouch, value >= 0, Int(value) < slots.count { stagedSlot = value }
            return
        }
        let fuzz = appliesFuzz ? axes[code]?.fuzz ?? 0 : 0
        if multitouch, code >= Self.firstMultitouchCode, code <= Self.lastMultitouchCode {
            let index = Int(code - Self.firstMultitouchCode)
            let old = slots[Int(stagedSlot)][index]
            let new = Self.defuzz(value, old: old, fuzz: fuzz)
            guard new != old else { return }
            slots[Int(stagedSlot)][index] = new
            if axes[Evdev.ABS_MT_SLOT]?.value != stagedSlot {
                axes[Evdev.ABS_MT_SLOT]?.value = stagedSlot
                frame.append((Evdev.EV_ABS, Evdev.ABS_MT_SLOT, stagedSlot))
            }
            frame.append((Evdev.EV_ABS, code, new))
        } else if code >= Self.firstMultitouchCode, code <= Self.lastMultitouchCode {
            // Without slots (protocol A, or a device whose HID axes spill into these
            // codes) the input core passes multitouch values unfiltered: two contacts of
            // one frame may well share a coordinate.
            axes[code]?.value = value
            frame.append((Evdev.EV_ABS, code, value))
        } else {
            let old = axes[code]?.value ?? 0
            let new = Self.defuzz(value, old: old, fuzz: fuzz)
            guard new != old else { return }
            axes[code]?.value = new
            frame.append((Evdev.EV_ABS, code, new))
        }
    }

    /// The input core's hysteresis against noise (`input_defuzz_abs_event`).
    static func defuzz(_ value: Int32, old: Int32, fuzz: Int32) -> Int32 {
        guard fuzz > 0 else { return value }
        let v = Int64(value)
        let o = Int64(old)
        let f = Int64(fuzz)
        if v > o - f / 2 && v < o + f / 2 { return old }
        if v > o - f && v < o + f { return Int32((o * 3 + v) / 4) }
        if v > o - f * 2 && v < o + f * 2 { return Int32((o + v) / 2) }
        return value
    }

    /// What the input core sends when the device goes away (`input_disconnect_device`):
    /// with keys still down, the frame being built, a key-up for each, and a
    /// `SYN_REPORT` of value 1 (``frameEndValue``); `nil` when no key is down (the
    /// unfinished frame then never leaves).
    package mutating func releaseKeys() -> [(UInt16, UInt16, Int32)]? {
        let down = (0..<Evdev.KEY_CNT).filter { keys.contains($0) }
        guard !down.isEmpty else { return nil }
        for code in down { keys.set(code, false) }
        frameEndValue = 1
        defer { frame.removeAll() }
        return frame + down.map { (Evdev.EV_KEY, $0, 0) }
    }

    /// Changes an axis's range (EVIOCSABS).
    mutating func setAxis(_ code: UInt16, _ axis: AbsoluteAxis) { axes[code] = axis }

    /// The values of one multitouch code in every slot (EVIOCGMTSLOTS).
    func slotValues(code: UInt16) -> [Int32]? {
        if code == Evdev.ABS_MT_SLOT { return nil }
        guard !slots.isEmpty, code >= Self.firstMultitouchCode, code <= Self.lastMultitouchCode else { return nil }
        return slots.map { $0[Int(code - Self.firstMultitouchCode)] }
    }
}

/// A fixed-size bit set with the byte layout of the kernel's bit masks.
struct BitSet {
    private(set) var words: [UInt64]

    init(bits: Int, set: Set<UInt16>) {
        words = Array(repeating: 0, count: (bits + 63) / 64)
        for bit in set where Int(bit) < bits { self.set(bit, true) }
    }

    func contains(_ bit: UInt16) -> Bool {
        let word = Int(bit) / 64
        return word < words.count && words[word] & (1 << (UInt64(bit) % 64)) != 0
    }

    mutating func set(_ bit: UInt16, _ on: Bool) {
        let word = Int(bit) / 64
        guard word < words.count else { return }
        if on { words[word] |= 1 << (UInt64(bit) % 64) } else { words[word] &= ~(1 << (UInt64(bit) % 64)) }
    }

    /// The mask as bytes, as an ioctl copies it out (little-endian longs).
    var bytes: [UInt8] {
        words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } }
    }

    static func bytes(of set: Set<UInt16>, maskBytes: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: maskBytes)
        for bit in set where Int(bit) < maskBytes * 8 { out[Int(bit) / 8] |= 1 << (bit % 8) }
        return out
    }
}
