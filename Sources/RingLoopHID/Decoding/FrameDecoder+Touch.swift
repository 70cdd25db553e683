import RingLoop
import RingLoopEvdev

// Touch: protocol-B slots, protocol-A contact matching, single-touch pointer emulation.
extension FrameDecoder {
    func contact(
        slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32
    )
        -> Contact
    {
        contact(slot: slot, id: id, phase: phase, x: x, y: y, pressure: pressure, size: size, from: nil)
    }

    func contact(slot: Int, id: Int32, phase: Contact.Phase, from state: DeviceState.Slot) -> Contact {
        contact(slot: slot, id: id, phase: phase, x: state.x, y: state.y, pressure: state.pressure, size: state.major, from: state)
    }

    func contact(
        slot: Int, id: Int32, phase: Contact.Phase, x: Int32, y: Int32, pressure: Int32, size: Int32, from state: DeviceState.Slot?
    ) -> Contact {
        let rangeX = touchRangeX
        let rangeY = touchRangeY
        return Contact(
            slot: Int16(slot), trackingID: id, phase: phase, x: x, y: y, normalizedX: rangeX.normalized(x),
            normalizedY: rangeY.normalized(y), millimetresX: rangeX.millimetres(x), millimetresY: rangeY.millimetres(y),
            pressure: pressure, size: size, minor: state?.minor ?? 0, orientation: state?.orientation ?? 0,
            distance: state?.distance ?? 0, toolType: state?.toolType ?? 0)
    }

    /// Protocol B: one contact per slot with a tracking id, and ended ones.
    mutating func emitSlotFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = newDigitizerFrame()
        frame.isBoundingBox = info.isSemiMultitouch
        frame.buttonDown = clickDown
        var live = 0
        for index in read.slots.indices {
            let slot = read.slots[index]
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
        emitDigitizer(frame, at: time, into: &out)
    }

    /// A single-touch screen (ABS_X/ABS_Y with BTN_TOUCH): one contact.
    mutating func emitSingleTouchFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = newDigitizerFrame()
        let x = read.axes[Evdev.ABS_X]
        let y = read.axes[Evdev.ABS_Y]
        let wasTouching = read.slots.isEmpty && previousProtocolA.count == 1
        if touching {
            let id = wasTouching ? previousProtocolA[0].trackingID : nextID()
            let current = contact(
                slot: 0, id: id, phase: wasTouching ? .moved : .began, x: x, y: y, pressure: read.axes[Evdev.ABS_PRESSURE], size: 0)
            frame.append(current)
            previousProtocolA.removeAll(keepingCapacity: true)
            previousProtocolA.append(current)
        } else if wasTouching {
            frame.append(contact(slot: 0, id: previousProtocolA[0].trackingID, phase: .ended, x: x, y: y, pressure: 0, size: 0))
            previousProtocolA.removeAll(keepingCapacity: true)
        } else {
            return keep(frame.buffer)
        }
        frame.fingerCount = touching ? 1 : 0
        emitDigitizer(frame, at: time, into: &out)
    }

    /// Protocol A: contacts carry no ids; match them to the previous frame's by
    /// distance, closest pairs first (as mtdev matches by least movement), to assign
    /// slots and tracking ids. Allocation-free once warm.
    mutating func emitProtocolAFrame(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        var frame = newDigitizerFrame()
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
        if frame.count > 0 || !previousProtocolA.isEmpty { emitDigitizer(frame, at: time, into: &out) } else { keep(frame.buffer) }
        swap(&previousProtocolA, &currentProtocolA)
        protocolAContacts.removeAll(keepingCapacity: true)
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
