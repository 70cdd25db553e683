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

    /// Where an absolute axis's values go.
    enum AbsoluteRoute: UInt8 { case axisEvent, pen, touch, pointer, gamepad, motion }
    /// Per `ABS_*` code (0…63).
    let absoluteRoutes: InlineArray<64, AbsoluteRoute>
    /// The device has a pen (`BTN_TOOL_PEN` or `BTN_STYLUS`, and is not a tablet pad).
    let hasPen: Bool
    /// Touches come from `ABS_MT_*` slots, protocol A, or a single-touch surface.
    let hasTouch: Bool
    /// A touchscreen or touchpad without multitouch: one contact from `ABS_X`/`ABS_Y`.
    let isSingleTouch: Bool
    /// Gamepads and joysticks: every axis is a gamepad axis.
    let isGamepad: Bool
    /// Accelerometers and gyroscopes: `ABS_X`…`ABS_RZ` are motion, with `MSC_TIMESTAMP`.
    let isMotion: Bool
    /// How motion samples are converted, and the sensor clock (motion nodes only).
    var motion: MotionDecoding

    /// The device's state as read so far: keys and switches applied at `SYN_REPORT`,
    /// axis values, and the multitouch slots as their values arrive (the chain's `read`
    /// ledger; a resync is its difference to the state read back from the node).
    var read = DeviceState()
    /// Per slot, the tracking id the last digitizer frame reported (-1: none).
    var reportedIDs: [Int32]
    /// A bit per slot whose values changed in the frame being read.
    var changedSlots: UInt64 = 0
    var modifiers: KeyModifiers = []
    var toolFingers = 0
    var touching = false
    var penTool: PenEvent.Tool?
    var penButtons: UInt8 = 0
    var penTouching = false
    /// The pen is in proximity only because it touched (the device names no tool).
    var implicitPenTool = false
    var wheelRemainder = 0
    var horizontalWheelRemainder = 0
    var clickDown = false

    // The frame being read.
    var pendingKeys: [(UInt16, Int32)] = []
    var pendingAbsolute: [(UInt16, Int32)] = []
    var pendingSwitches: [(UInt16, Int32)] = []
    var pendingRelative: [(UInt16, Int32)] = []
    var relX: Int32 = 0
    var relY: Int32 = 0
    var wheel: Int32 = 0
    var horizontalWheel: Int32 = 0
    var wheelHiRes: Int32 = 0
    var horizontalWheelHiRes: Int32 = 0
    var dial: Int32 = 0
    var protocolAContacts: [Contact] = []
    var protocolAPending = Contact()
    var protocolAHasPending = false
    var previousProtocolA: [Contact] = []
    // Scratch storage for protocol-A matching, kept so a warm decoder allocates nothing.
    var matchedPrevious: [Bool] = []
    var previousIndexOfContact: [Int] = []
    var currentProtocolA: [Contact] = []
    var nextTrackingID: Int32 = 1
    var dropping = false
    /// Contact buffers of frames this decoder emitted, reused once no event holds them
    /// (so a warm decoder allocates nothing, however long events wait in a queue, up to
    /// this many frames held at once).
    var framePool = DigitizerFramePool(limit: frameBufferLimit)
    static let frameBufferLimit = 32
    /// The buffers kept to reuse (for tests).
    var frameBuffers: [ContactStorage] { framePool.buffers }
    /// The touch position axes (multitouch where the device has them), looked up once.
    let touchRangeX: AbsoluteAxis
    let touchRangeY: AbsoluteAxis
    /// Each absolute axis's range by code (`info.axes` without a hash per lookup).
    let axisRanges: [AbsoluteAxis?]

    package init(info: HIDDeviceInfo) {
        self.info = info
        self.deviceID = info.id
        let none = AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        touchRangeX = info.axes[Evdev.ABS_MT_POSITION_X] ?? info.axes[Evdev.ABS_X] ?? none
        touchRangeY = info.axes[Evdev.ABS_MT_POSITION_Y] ?? info.axes[Evdev.ABS_Y] ?? none
        axisRanges = (0..<64).map { info.axes[UInt16($0)] }
        let keys = info.codes[Evdev.EV_KEY] ?? []
        let pen = info.deviceClass != .tabletPad && (keys.contains(Evdev.BTN_TOOL_PEN) || keys.contains(Evdev.BTN_STYLUS))
        let multitouch = info.slotCount > 0 || info.isProtocolA
        let singleTouch = !multitouch && (info.deviceClass == .touchscreen || info.deviceClass == .touchpad)
        let gamepad = info.deviceClass == .gamepad || info.deviceClass == .joystick
        let motionNode = info.deviceClass == .motion
        isMotion = motionNode
        motion = MotionDecoding(info: info)
        hasPen = pen
        hasTouch = multitouch || singleTouch
        isSingleTouch = singleTouch
        isGamepad = gamepad
        var routes = InlineArray<64, AbsoluteRoute>(repeating: .axisEvent)
        let penAxes: Set<UInt16> = [
            Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_DISTANCE, Evdev.ABS_TILT_X, Evdev.ABS_TILT_Y,
        ]
        // Single-touch pointer emulation.
        let touchAxes: Set<UInt16> = [Evdev.ABS_X, Evdev.ABS_Y, Evdev.ABS_PRESSURE, Evdev.ABS_TOOL_WIDTH]
        for index in 0..<Int(Evdev.ABS_CNT) {
            let code = UInt16(index)
            if gamepad {
                routes[index] = .gamepad
            } else if motionNode && MotionDecoding.axes.contains(code) {
                routes[index] = .motion
            } else if pen && penAxes.contains(code) {
                routes[index] = .pen
            } else if (multitouch || singleTouch) && touchAxes.contains(code) {
                routes[index] = .touch
            } else if (code == Evdev.ABS_X || code == Evdev.ABS_Y) && info.deviceClass != .tabletPad {
                routes[index] = .pointer
            }
        }
        absoluteRoutes = routes
        let slotCount = min(info.slotCount, 64)
        reportedIDs = Array(repeating: -1, count: slotCount)
        if slotCount > 0 {
            read.slots = Array(repeating: DeviceState.Slot(), count: slotCount)
            read.currentSlot = 0
        }
        pendingKeys.reserveCapacity(32)
        pendingAbsolute.reserveCapacity(64)
        pendingSwitches.reserveCapacity(8)
        pendingRelative.reserveCapacity(8)
        protocolAContacts.reserveCapacity(DigitizerFrame.capacity)
        previousProtocolA.reserveCapacity(DigitizerFrame.capacity)
        matchedPrevious.reserveCapacity(DigitizerFrame.capacity)
        previousIndexOfContact.reserveCapacity(DigitizerFrame.capacity)
        currentProtocolA.reserveCapacity(DigitizerFrame.capacity)
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
            case Evdev.SYN_MT_REPORT: finishProtocolAContact()
            case Evdev.SYN_DROPPED:
                dropping = true
                clearPending()
                out.append(HIDEvent(device: deviceID, timestamp: event.instant, payload: .eventsDropped(count: 0)))
                return true
            default: break
            }
        case Evdev.EV_KEY: pendingKeys.append((event.code, event.value))
        case Evdev.EV_REL:
            switch event.code {
            case Evdev.REL_X: relX &+= event.value
            case Evdev.REL_Y: relY &+= event.value
            case Evdev.REL_HWHEEL: horizontalWheel &+= event.value
            case Evdev.REL_WHEEL: wheel &+= event.value
            case Evdev.REL_DIAL: dial &+= event.value
            case Evdev.REL_WHEEL_HI_RES: wheelHiRes &+= event.value
            case Evdev.REL_HWHEEL_HI_RES: horizontalWheelHiRes &+= event.value
            default: pendingRelative.append((event.code, event.value))
            }
        case Evdev.EV_ABS: feedAbsolute(event.code, event.value)
        case Evdev.EV_SW: pendingSwitches.append((event.code, event.value))
        case Evdev.EV_MSC:
            if isMotion, event.code == Evdev.MSC_TIMESTAMP { motion.pendingTimestamp = UInt32(bitPattern: event.value) }
        default: break
        }
        return false
    }

    mutating func feedAbsolute(_ code: UInt16, _ value: Int32) {
        if !read.slots.isEmpty {
            if code == Evdev.ABS_MT_SLOT {
                read.currentSlot = value
                return
            }
            if DeviceState.Slot.holds(code) {
                let slot = Int(read.currentSlot ?? -1)
                guard slot >= 0, slot < read.slots.count else { return }  // out-of-range slots: ignored
                read.slots[slot][code] = value
                changedSlots |= 1 << UInt64(slot)
                return
            }
        } else if info.isProtocolA, code >= Evdev.ABS_MT_TOUCH_MAJOR, code <= Evdev.ABS_MT_TOOL_Y {
            protocolAHasPending = true
            switch code {
            case Evdev.ABS_MT_POSITION_X: protocolAPending.x = value
            case Evdev.ABS_MT_POSITION_Y: protocolAPending.y = value
            case Evdev.ABS_MT_PRESSURE: protocolAPending.pressure = value
            case Evdev.ABS_MT_TOUCH_MAJOR: protocolAPending.size = value
            case Evdev.ABS_MT_TOUCH_MINOR: protocolAPending.minor = value
            case Evdev.ABS_MT_ORIENTATION: protocolAPending.orientation = value
            case Evdev.ABS_MT_TOOL_TYPE: protocolAPending.toolType = value
            case Evdev.ABS_MT_DISTANCE: protocolAPending.distance = value
            default: break
            }
            return
        }
        pendingAbsolute.append((code, value))
    }

    mutating func finishProtocolAContact() {
        if protocolAHasPending { protocolAContacts.append(protocolAPending) }
        protocolAPending = Contact()
        protocolAHasPending = false
    }

    mutating func clearPending() {
        // Most frames leave most of these empty; emptying an empty array is not free.
        if !pendingKeys.isEmpty { pendingKeys.removeAll(keepingCapacity: true) }
        if !pendingAbsolute.isEmpty { pendingAbsolute.removeAll(keepingCapacity: true) }
        if !pendingSwitches.isEmpty { pendingSwitches.removeAll(keepingCapacity: true) }
        if !pendingRelative.isEmpty { pendingRelative.removeAll(keepingCapacity: true) }
        if !protocolAContacts.isEmpty { protocolAContacts.removeAll(keepingCapacity: true) }
        protocolAHasPending = false
        relX = 0
        relY = 0
        wheel = 0
        horizontalWheel = 0
        wheelHiRes = 0
        horizontalWheelHiRes = 0
        dial = 0
        motion.pendingTimestamp = nil
        changedSlots = 0
    }

}

// Digitizer frames on reused buffers.
extension FrameDecoder {
    /// An empty frame on a buffer no event holds any more, or on a new one.
    mutating func newDigitizerFrame() -> DigitizerFrame { framePool.frame() }

    /// Emits `frame` and keeps its buffer to reuse once the event is gone.
    mutating func emitDigitizer(_ frame: DigitizerFrame, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        keep(frame.buffer)
        out.append(event(time, .digitizer(frame)))
    }

    /// Keeps `buffer` among those to reuse (a frame not emitted gives its buffer back).
    mutating func keep(_ buffer: ContactStorage) { framePool.keep(buffer) }
}
