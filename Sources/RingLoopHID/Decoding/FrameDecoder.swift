import RingLoop
import RingLoopEvdev

extension InputEvent {
    /// The event's timestamp on the monotonic clock (the chain sets `CLOCK_MONOTONIC`).
    var instant: MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64(max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, microseconds)) &* 1000)
    }
}

/// Turns one device's evdev frames into HID events: state is applied at `SYN_REPORT`
/// only, per device and per multitouch slot; `SYN_DROPPED` discards the partial frame
/// and resyncs from the device's state, so no key stays held that is up and no touch
/// stays live that has lifted.
///
/// What a frame yields follows the device's capabilities, not only its class, so
/// nothing it reports is lost: multitouch slots become digitizer frames on any device (a
/// touch mouse too), pen tools and axes become pen events wherever there is a pen (a
/// pen-and-touch screen yields both), and every axis no other event describes (pad rings
/// and strips, `ABS_MISC`, `REL_Z`…) arrives as an ``AxisEvent``.
///
/// Allocation-free once warm: frames are built in reused buffers and events appended to
/// the caller's array.
package struct FrameDecoder {
    package let info: HIDDeviceInfo
    let deviceID: HIDDeviceID

    /// The device's state as read so far: keys, axes and switches applied at
    /// `SYN_REPORT`, the multitouch slots as their values arrive (the chain's `read`
    /// ledger; a resync is its difference to the state read back from the node).
    var read = DeviceState()
    /// Discarding events until the end of a dropped frame.
    var dropping = false

    // One decoder per family of events, each with its part of the frame being read.
    var keys: KeyDecoding
    var relative: RelativeDecoding
    var axes: AxisDecoding
    var touch: TouchDecoding
    var pen: PenDecoding
    var switches: SwitchDecoding
    /// Accelerometers and gyroscopes (`ABS_X`…`ABS_RZ` with `MSC_TIMESTAMP`): how motion
    /// samples are converted, and the sensor clock (`nil` on other devices).
    var motion: MotionDecoding?

    /// The most digitizer frames whose buffers a decoder keeps to reuse.
    static let frameBufferLimit = 32
    /// The buffers kept to reuse (for tests).
    var frameBuffers: [ContactStorage] { touch.framePool.buffers }

    package init(info: HIDDeviceInfo) {
        self.info = info
        self.deviceID = info.id
        let keyCodes = info.codes[Evdev.EV_KEY] ?? []
        let hasPen =
            info.deviceClass != .tabletPad && (keyCodes.contains(Evdev.BTN_TOOL_PEN) || keyCodes.contains(Evdev.BTN_STYLUS))
        let multitouch = info.slotCount > 0 || info.isProtocolA
        let singleTouch = !multitouch && (info.deviceClass == .touchscreen || info.deviceClass == .touchpad)
        let isGamepad = info.deviceClass == .gamepad || info.deviceClass == .joystick
        let isMotion = info.deviceClass == .motion
        let hasTouch = multitouch || singleTouch
        let slotCount = min(info.slotCount, 64)
        if slotCount > 0 {
            read.contacts.slots = Array(repeating: DeviceState.Slot(), count: slotCount)
            read.contacts.currentSlot = 0
        }
        keys = KeyDecoding(info: info, hasPen: hasPen, hasTouch: hasTouch, isGamepad: isGamepad)
        relative = RelativeDecoding(info: info)
        axes = AxisDecoding(info: info, hasPen: hasPen, hasTouch: hasTouch, isGamepad: isGamepad, isMotion: isMotion)
        touch = TouchDecoding(info: info, slotCount: slotCount, isPresent: hasTouch, isSingleTouch: singleTouch)
        pen = PenDecoding(info: info, isPresent: hasPen)
        switches = SwitchDecoding(info: info)
        motion = isMotion ? MotionDecoding(info: info) : nil
    }

    /// Whether the decoder is discarding events until the end of a dropped frame.
    package var isResyncing: Bool { dropping }

    /// Feeds one event. Returns `true` when it was `SYN_DROPPED` (the caller must resync
    /// with ``resync(from:at:into:)`` after the next `SYN_REPORT`).
    @discardableResult
    package mutating func feed(_ event: InputEvent, into out: inout [HIDEvent]) -> Bool {
        if dropping {
            // Everything up to and including the next SYN_REPORT is incomplete.
            if event.isSynReport { dropping = false }
            return false
        }
        switch event.type {
        case Evdev.EV_SYN:
            switch event.code {
            case Evdev.SYN_REPORT: finishFrame(at: event.instant, into: &out)
            case Evdev.SYN_MT_REPORT: touch.finishProtocolAContact()
            case Evdev.SYN_DROPPED:
                dropping = true
                clearPending()
                out.append(HIDEvent(device: deviceID, timestamp: event.instant, payload: .eventsDropped(count: 0)))
                return true
            default: break
            }
        case Evdev.EV_KEY: keys.pending.append((event.code, event.value))
        case Evdev.EV_REL: relative.feed(event.code, event.value)
        case Evdev.EV_ABS: feedAbsolute(event.code, event.value)
        case Evdev.EV_SW: switches.pending.append((event.code, event.value))
        case Evdev.EV_MSC:
            if event.code == Evdev.MSC_TIMESTAMP, motion != nil { motion?.pendingTimestamp = UInt32(bitPattern: event.value) }
        default: break
        }
        return false
    }

    /// An absolute value: a multitouch slot's goes to the read ledger at once (the slot
    /// is current only until the next `ABS_MT_SLOT`), a protocol-A contact's to the touch
    /// surface, any other waits for the frame's end.
    mutating func feedAbsolute(_ code: UInt16, _ value: Int32) {
        if !read.contacts.slots.isEmpty {
            if code == Evdev.ABS_MT_SLOT {
                read.contacts.currentSlot = value
                return
            }
            if DeviceState.Slot.holds(code) {
                let slot = Int(read.contacts.currentSlot ?? -1)
                guard slot >= 0, slot < read.contacts.slots.count else { return }  // out-of-range slots: ignored
                read.contacts.slots[slot][code] = value
                touch.changedSlots |= 1 << UInt64(slot)
                return
            }
        } else if info.isProtocolA, DeviceState.Slot.holds(code) {
            touch.feedProtocolA(code, value)
            return
        }
        axes.pending.append((code, value))
    }

    /// Forgets the frame being read.
    mutating func clearPending() {
        // Most frames leave most of these empty; emptying an empty array is not free.
        if !keys.pending.isEmpty { keys.pending.removeAll(keepingCapacity: true) }
        relative.clearFrame()
        axes.clearFrame()
        touch.clearFrame()
        pen.clearFrame()
        switches.clearFrame()
        motion?.pendingTimestamp = nil
    }
}
