import RingLoop
import RingLoopEvdev

/// A device's touch surface: protocol-B slots (their values are in the decoder's `read`
/// ledger; this keeps what was reported of them), protocol-A contacts matched to the
/// previous frame's, and a single-touch surface's one contact; with the finger count,
/// the contact and the click the frame's keys report. Emits one digitizer frame per
/// frame that changed it, on reused buffers.
struct TouchDecoding {
    /// Touches come from `ABS_MT_*` slots, protocol A, or a single-touch surface.
    let isPresent: Bool
    /// A touchscreen or touchpad without multitouch: one contact from `ABS_X`/`ABS_Y`.
    let isSingleTouch: Bool
    let isProtocolA: Bool
    let isSemiMultitouch: Bool
    /// The touch position axes (multitouch where the device has them), looked up once.
    let rangeX: AbsoluteAxis
    let rangeY: AbsoluteAxis

    /// Per slot, the tracking id the last digitizer frame reported (-1: none).
    var reportedIDs: [Int32]
    /// A bit per slot whose values changed in the frame being read.
    var changedSlots: UInt64 = 0
    /// The frame's keys changed the finger count, the contact or the click.
    private var keysChanged = false
    private var toolFingers = 0
    private var touching = false
    private var clickDown = false

    // Protocol A (and the single-touch contact, kept as the one previous contact).
    private var protocolAContacts: [Contact] = []
    private var protocolAPending = Contact()
    private var protocolAHasPending = false
    private var previousProtocolA: [Contact] = []
    // Scratch storage for protocol-A matching, kept so a warm decoder allocates nothing.
    private var matchedPrevious: [Bool] = []
    private var previousIndexOfContact: [Int] = []
    private var currentProtocolA: [Contact] = []
    private var nextTrackingID: Int32 = 1

    /// Contact buffers of frames this decoder emitted, reused once no event holds them
    /// (so a warm decoder allocates nothing, however long events wait in a queue, up to
    /// this many frames held at once).
    private(set) var framePool = DigitizerFramePool(limit: FrameDecoder.frameBufferLimit)

    init(info: HIDDeviceInfo, slotCount: Int, isPresent: Bool, isSingleTouch: Bool) {
        self.isPresent = isPresent
        self.isSingleTouch = isSingleTouch
        isProtocolA = info.isProtocolA
        isSemiMultitouch = info.isSemiMultitouch
        let none = AbsoluteAxis(minimum: 0, maximum: 0, resolution: 0)
        rangeX = info.axes[Evdev.ABS_MT_POSITION_X] ?? info.axes[Evdev.ABS_X] ?? none
        rangeY = info.axes[Evdev.ABS_MT_POSITION_Y] ?? info.axes[Evdev.ABS_Y] ?? none
        reportedIDs = Array(repeating: -1, count: slotCount)
        protocolAContacts.reserveCapacity(DigitizerFrame.capacity)
        previousProtocolA.reserveCapacity(DigitizerFrame.capacity)
        matchedPrevious.reserveCapacity(DigitizerFrame.capacity)
        previousIndexOfContact.reserveCapacity(DigitizerFrame.capacity)
        currentProtocolA.reserveCapacity(DigitizerFrame.capacity)
    }

    // MARK: From the frame's keys

    /// A touchpad's click (`BTN_LEFT`).
    mutating func click(isDown: Bool) {
        clickDown = isDown
        keysChanged = true
    }

    /// `BTN_TOUCH` on a surface without a pen near.
    mutating func contact(isDown: Bool) {
        touching = isDown
        keysChanged = true
    }

    /// A finger-count tool (`BTN_TOOL_FINGER` is 1 … `QUINTTAP` 5) came or went.
    mutating func fingerTool(_ fingers: Int, isDown: Bool) {
        if isDown { toolFingers = fingers } else if toolFingers == fingers { toolFingers = 0 }
        keysChanged = true
    }

    // MARK: Protocol A

    /// A protocol-A contact's value (`ABS_MT_*`, before its `SYN_MT_REPORT`).
    mutating func feedProtocolA(_ code: UInt16, _ value: Int32) {
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
    }

    /// `SYN_MT_REPORT`: the contact being read is complete.
    mutating func finishProtocolAContact() {
        if protocolAHasPending { protocolAContacts.append(protocolAPending) }
        protocolAPending = Contact()
        protocolAHasPending = false
    }

    // MARK: Frame end

    /// At the end of a frame: the digitizer frame, when the frame changed the surface
    /// (`axisChanged`: a single-touch axis).
    mutating func finish(
        slots: [DeviceState.Slot], axes: borrowing AxisValues, axisChanged: Bool, at time: MonotonicInstant, device: HIDDeviceID,
        into out: inout [HIDEvent]
    ) {
        let changed = keysChanged || changedSlots != 0
        if isProtocolA {
            finishProtocolAContact()
            emitProtocolAFrame(at: time, device: device, into: &out)
        } else if !slots.isEmpty {
            if changed || axisChanged { emitSlotFrame(slots, at: time, device: device, into: &out) }
        } else if isSingleTouch, axisChanged || changed {
            emitSingleTouchFrame(
                x: axes[Evdev.ABS_X], y: axes[Evdev.ABS_Y], pressure: axes[Evdev.ABS_PRESSURE], at: time, device: device, into: &out)
        }
    }

    /// Forgets the frame being read.
    mutating func clearFrame() {
        if !protocolAContacts.isEmpty { protocolAContacts.removeAll(keepingCapacity: true) }
        protocolAHasPending = false
        changedSlots = 0
        keysChanged = false
    }

    func contact(slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32) -> Contact {
        contact(slot: slot, id: id, phase: phase, x: x, y: y, pressure: pressure, size: size, from: nil)
    }

    func contact(slot: Int, id: Int32, phase: Contact.Phase, from state: DeviceState.Slot) -> Contact {
        contact(slot: slot, id: id, phase: phase, x: state.x, y: state.y, pressure: state.pressure, size: state.major, from: state)
    }

    func contact(
        slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32, from state: DeviceState.Slot?
    ) -> Contact {
        Contact(
            slot: Int16(slot), trackingID: id, phase: phase, x: x, y: y, normalizedX: rangeX.normalized(x),
            normalizedY: rangeY.normalized(y), millimetresX: rangeX.millimetres(x), millimetresY: rangeY.millimetres(y),
            pressure: pressure, size: size, minor: state?.minor ?? 0, orientation: state?.orientation ?? 0,
            distance: state?.distance ?? 0, toolType: state?.toolType ?? 0)
    }

    /// Protocol B: one contact per slot with a tracking id, and ended ones.
    mutating func emitSlotFrame(_ slots: [DeviceState.Slot], at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        var frame = framePool.frame()
        frame.isBoundingBox = isSemiMultitouch
        frame.buttonDown = clickDown
        var live = 0
        for index in slots.indices {
            let slot = slots[index]
            let previous = reportedIDs[index]
            let current = slot.trackingID
            if previous != -1, current != previous {
                // Lifted, or the id was reused without a release (handled as libevdev
                // does: the old touch ends, a new one begins).
                frame.append(contact(slot: index, id: previous, phase: .ended, from: slot))
            }
            if current != -1 {
                let phase: Contact.Phase =
                    current != previous ? .began : changedSlots & (1 << UInt64(index)) != 0 ? .moved : .stationary
                frame.append(contact(slot: index, id: current, phase: phase, from: slot))
                live += 1
            }
            reportedIDs[index] = current
        }
        changedSlots = 0
        frame.fingerCount = toolFingers > 0 ? toolFingers : live
        emit(frame, at: time, device: device, into: &out)
    }

    /// A single-touch screen (ABS_X/ABS_Y with BTN_TOUCH): one contact.
    mutating func emitSingleTouchFrame(
        x: Int32, y: Int32, pressure: Int32, at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]
    ) {
        var frame = framePool.frame()
        let wasTouching = previousProtocolA.count == 1
        if touching {
            let id = wasTouching ? previousProtocolA[0].trackingID : nextID()
            let current = contact(
                slot: 0, id: id, phase: wasTouching ? .moved : .began, x: x, y: y, pressure: pressure, size: 0)
            frame.append(current)
            previousProtocolA.removeAll(keepingCapacity: true)
            previousProtocolA.append(current)
        } else if wasTouching {
            frame.append(contact(slot: 0, id: previousProtocolA[0].trackingID, phase: .ended, x: x, y: y, pressure: 0, size: 0))
            previousProtocolA.removeAll(keepingCapacity: true)
        } else {
            return framePool.keep(frame.buffer)
        }
        frame.fingerCount = touching ? 1 : 0
        emit(frame, at: time, device: device, into: &out)
    }

    /// Protocol A: contacts carry no ids; match them to the previous frame's by
    /// distance, closest pairs first (as mtdev matches by least movement), to assign
    /// slots and tracking ids. Allocation-free once warm.
    mutating func emitProtocolAFrame(at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        var frame = framePool.frame()
        frame.buttonDown = clickDown
        let reported = min(protocolAContacts.count, DigitizerFrame.capacity)
        matchedPrevious.removeAll(keepingCapacity: true)
        matchedPrevious.append(contentsOf: repeatElement(false, count: previousProtocolA.count))
        previousIndexOfContact.removeAll(keepingCapacity: true)
        previousIndexOfContact.append(contentsOf: repeatElement(-1, count: reported))
        // Closest pair first, over all pairs (not in report order: a new finger reported
        // before a moving one must not take the moving one's identity).
        while true {
            var best: (contact: Int, previous: Int) = (-1, -1)
            var bestDistance = Double.infinity
            for index in 0..<reported where previousIndexOfContact[index] < 0 {
                let raw = protocolAContacts[index]
                for (previous, old) in previousProtocolA.enumerated() where !matchedPrevious[previous] {
                    // In floating point: squares of full-range Int32 differences overflow Int64.
                    let dx = Double(raw.x) - Double(old.x)
                    let dy = Double(raw.y) - Double(old.y)
                    let distance = dx * dx + dy * dy
                    if distance < bestDistance {
                        bestDistance = distance
                        best = (index, previous)
                    }
                }
            }
            if best.contact < 0 { break }
            previousIndexOfContact[best.contact] = best.previous
            matchedPrevious[best.previous] = true
        }
        currentProtocolA.removeAll(keepingCapacity: true)
        // Slots (at most DigitizerFrame.capacity of them) kept by matched contacts, as bits.
        var usedSlots: UInt64 = 0
        for index in 0..<reported {
            let raw = protocolAContacts[index]
            let previous = previousIndexOfContact[index]
            if previous >= 0 {
                let old = previousProtocolA[previous]
                let phase: Contact.Phase = raw.x == old.x && raw.y == old.y ? .stationary : .moved
                currentProtocolA.append(
                    Self.carryingExtras(
                        of: raw,
                        contact(
                            slot: Int(old.slot), id: old.trackingID, phase: phase, x: raw.x, y: raw.y, pressure: raw.pressure,
                            size: raw.size)))
                usedSlots |= Self.slotBit(old.slot)
            } else {
                currentProtocolA.append(
                    Self.carryingExtras(
                        of: raw, contact(slot: -1, id: nextID(), phase: .began, x: raw.x, y: raw.y, pressure: raw.pressure, size: raw.size))
                )
            }
        }
        // New contacts take the lowest slots no matched contact keeps.
        for index in currentProtocolA.indices where currentProtocolA[index].slot < 0 {
            let slot = Int16((~usedSlots).trailingZeroBitCount)
            currentProtocolA[index].slot = slot
            usedSlots |= Self.slotBit(slot)
        }
        for (index, old) in previousProtocolA.enumerated() where !matchedPrevious[index] {
            var ended = old
            ended.phase = .ended
            frame.append(ended)
        }
        for contact in currentProtocolA { frame.append(contact) }
        frame.fingerCount = toolFingers > 0 ? toolFingers : currentProtocolA.count
        if frame.count > 0 || !previousProtocolA.isEmpty {
            emit(frame, at: time, device: device, into: &out)
        } else {
            framePool.keep(frame.buffer)
        }
        swap(&previousProtocolA, &currentProtocolA)
        protocolAContacts.removeAll(keepingCapacity: true)
    }

    // MARK: Loss and removal

    /// After a loss, for a protocol-A device (which keeps no contact state to read
    /// back): the contacts seen before it are cancelled, and the next frame begins those
    /// still down.
    mutating func cancelProtocolAContacts(at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        guard isProtocolA, !previousProtocolA.isEmpty else { return }
        var frame = framePool.frame()
        for old in previousProtocolA {
            var cancelled = old
            cancelled.phase = .cancelled
            frame.append(cancelled)
        }
        previousProtocolA.removeAll(keepingCapacity: true)
        emit(frame, at: time, device: device, into: &out)
    }

    /// The device is going: its finger count, contact and click are let go (before the
    /// frame of its released keys).
    mutating func releaseKeys() {
        toolFingers = 0
        touching = false
        clickDown = false
    }

    /// The device is gone: every live contact (slots, protocol A, single touch) is
    /// cancelled, and the slots' tracking ids in `slots` cleared.
    mutating func cancelAll(slots: inout [DeviceState.Slot], at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        var frame = framePool.frame()
        for index in slots.indices where reportedIDs[index] != -1 {
            let slot = slots[index]
            frame.append(contact(slot: index, id: reportedIDs[index], phase: .cancelled, x: slot.x, y: slot.y, pressure: 0, size: 0))
            reportedIDs[index] = -1
            slots[index].trackingID = -1
        }
        for old in previousProtocolA {
            var cancelled = old
            cancelled.phase = .cancelled
            frame.append(cancelled)
        }
        previousProtocolA.removeAll()
        if frame.count > 0 { emit(frame, at: time, device: device, into: &out) } else { framePool.keep(frame.buffer) }
    }

    /// Emits `frame` and keeps its buffer to reuse once the event is gone.
    private mutating func emit(_ frame: DigitizerFrame, at time: MonotonicInstant, device: HIDDeviceID, into out: inout [HIDEvent]) {
        framePool.keep(frame.buffer)
        out.append(HIDEvent(device: device, timestamp: time, payload: .digitizer(frame)))
    }

    /// `contact` with the minor axis, orientation, distance and tool type of the raw
    /// protocol-A contact it was made from.
    static func carryingExtras(of raw: Contact, _ contact: Contact) -> Contact {
        var result = contact
        result.minor = raw.minor
        result.orientation = raw.orientation
        result.distance = raw.distance
        result.toolType = raw.toolType
        return result
    }

    static func slotBit(_ slot: Int16) -> UInt64 { slot >= 0 && slot < 64 ? 1 << UInt64(slot) : 0 }

    mutating func nextID() -> Int32 {
        defer { nextTrackingID = nextTrackingID == Int32.max ? 1 : nextTrackingID + 1 }
        return nextTrackingID
    }
}
