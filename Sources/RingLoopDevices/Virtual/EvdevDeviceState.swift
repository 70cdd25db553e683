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
    /// The device's keys, switches, LEDs, axis values and slots: what `EVIOCGKEY`,
    /// `EVIOCGSW`, `EVIOCGLED`, `EVIOCGABS` and `EVIOCGMTSLOTS` answer.
    private(set) var state: DeviceState
    private(set) var sounds = SmallCodeSet()
    /// The axes' ranges (their values are in ``state``).
    private var ranges: [UInt16: AbsoluteAxis]
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

    package init(description: InputDeviceDescription, appliesFuzz: Bool = true) {
        self.description = description
        self.appliesFuzz = appliesFuzz
        state = description.state
        ranges = description.absoluteAxes
        for (code, axis) in description.absoluteAxes where Evdev.isMultitouchAxis(code) { state.axes[code] = axis.value }
        if !state.contacts.slots.isEmpty { state.axes[Evdev.ABS_MT_SLOT] = 0 }
        repeatDelay = description.keyRepeat?.delay ?? 0
        repeatPeriod = description.keyRepeat?.period ?? 0
    }

    /// The keys down, switches and LEDs on (for `EVIOCGKEY`, `EVIOCGSW`, `EVIOCGLED`).
    var keys: KeyCodeSet { state.keys }
    var switches: SmallCodeSet { state.switches }
    var leds: SmallCodeSet { state.leds }

    /// An axis's range and current value (`EVIOCGABS`), for an axis the device has.
    func axis(_ code: UInt16) -> AbsoluteAxis? {
        guard var axis = ranges[code] else { return nil }
        axis.value = state.axes[code]
        return axis
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
                if state.keys.contains(code) { frame.append((type, code, value)) }
            } else if state.keys.contains(code) != (value != 0) {
                state.keys.set(code, value != 0)
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
            if supports(type, code), state.switches.contains(code) != (value != 0) {
                state.switches.set(code, value != 0)
                frame.append((type, code, value))
            }
        case Evdev.EV_LED:
            if supports(type, code), state.leds.contains(code) != (value != 0) {
                state.leds.set(code, value != 0)
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
        let multitouch = !state.contacts.slots.isEmpty
        if code == Evdev.ABS_MT_SLOT {  // staged until a value in that slot changes
            if multitouch, value >= 0, Int(value) < state.contacts.slots.count { stagedSlot = value }
            return
        }
        let fuzz = appliesFuzz ? ranges[code]?.fuzz ?? 0 : 0
        if multitouch, DeviceState.Slot.holds(code) {
            let old = state.contacts.slots[Int(stagedSlot)][code]
            let new = Self.defuzz(value, old: old, fuzz: fuzz)
            guard new != old else { return }
            state.contacts.slots[Int(stagedSlot)][code] = new
            if state.contacts.currentSlot != stagedSlot {
                state.contacts.currentSlot = stagedSlot
                state.axes[Evdev.ABS_MT_SLOT] = stagedSlot
                frame.append((Evdev.EV_ABS, Evdev.ABS_MT_SLOT, stagedSlot))
            }
            frame.append((Evdev.EV_ABS, code, new))
        } else if DeviceState.Slot.holds(code) {
            // Without slots (protocol A, or a device whose HID axes spill into these
            // codes) the input core passes multitouch values unfiltered: two contacts of
            // one frame may well share a coordinate.
            state.axes[code] = value
            frame.append((Evdev.EV_ABS, code, value))
        } else {
            let old = state.axes[code]
            let new = Self.defuzz(value, old: old, fuzz: fuzz)
            guard new != old else { return }
            state.axes[code] = new
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
        let down = state.keys.all
        guard !down.isEmpty else { return nil }
        state.keys = KeyCodeSet()
        frameEndValue = 1
        defer { frame.removeAll() }
        return frame + down.map { (Evdev.EV_KEY, $0, 0) }
    }

    /// Changes an axis's range and value (EVIOCSABS).
    mutating func setAxis(_ code: UInt16, _ axis: AbsoluteAxis) {
        ranges[code] = axis
        state.axes[code] = axis.value
    }

    /// The values of one multitouch code in every slot (EVIOCGMTSLOTS).
    func slotValues(code: UInt16) -> [Int32]? {
        guard !state.contacts.slots.isEmpty, DeviceState.Slot.holds(code) else { return nil }
        return state.contacts.slots.map { $0[code] }
    }
}

/// A kernel bit mask of a set of codes.
enum BitSet {
    static func bytes(of set: Set<UInt16>, maskBytes: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: maskBytes)
        for bit in set where Int(bit) < maskBytes * 8 { out[Int(bit) / 8] |= 1 << (bit % 8) }
        return out
    }
}
