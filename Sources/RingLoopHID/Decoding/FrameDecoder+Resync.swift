import RingLoop
import RingLoopEvdev

// After a loss and at removal: bring the state in line with the device, or release it.
extension FrameDecoder {
    // MARK: Resync and teardown

    /// After a `SYN_DROPPED` frame ended: brings the state in line with what the device
    /// reports now, emitting key ups/downs and touch ends/begins for what changed.
    public mutating func resync(from snapshot: DeviceStateSnapshot, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        dropping = false
        clearPending()
        if let slot = snapshot.currentSlot { currentSlot = Int(slot) }
        for code in keysDown.all where !snapshot.keysDown.contains(code) { pendingKeys.append((code, 0)) }
        for code in snapshot.keysDown.sorted() where !keysDown.contains(code) { pendingKeys.append((code, 1)) }
        for code in switchesOn.sorted() where !snapshot.switchesOn.contains(code) { pendingSwitches.append((code, 0)) }
        for code in snapshot.switchesOn.sorted() where !switchesOn.contains(code) { pendingSwitches.append((code, 1)) }
        for (code, value) in snapshot.absolute
        where Int(code) < absolute.count && absolute[Int(code)] != value
            && !(code >= Evdev.ABS_MT_SLOT && code <= Evdev.ABS_MT_TOOL_Y)
        {
            pendingAbsolute.append((code, value))
        }
        for (index, state) in snapshot.slots.enumerated() where index < slots.count {
            if slots[index].trackingID != state.trackingID || slots[index].x != state.x || slots[index].y != state.y {
                slots[index].trackingID = state.trackingID
                slots[index].x = state.x
                slots[index].y = state.y
                slots[index].changed = true
                frameTouchedSlots = true
            }
        }
        finishFrame(at: time, into: &out)
        if info.isProtocolA && !previousProtocolA.isEmpty {
            // A protocol-A device keeps no contact state to read back: the contacts seen
            // before the loss are cancelled, and the next frame begins those still down.
            var frame = newDigitizerFrame()
            for old in previousProtocolA {
                var cancelled = old
                cancelled.phase = .cancelled
                frame.append(cancelled)
            }
            previousProtocolA.removeAll(keepingCapacity: true)
            emitDigitizer(frame, at: time, into: &out)
        }
    }

    /// The device was just opened: takes its state as it is now, as libevdev does when
    /// it opens a device. Absolute values and the current multitouch slot are taken
    /// silently; keys and buttons held, switches on and touches already down are
    /// reported as they would have been when they happened (key-downs with the modifiers
    /// held, switch changes, contacts that began, the pen in proximity), so a handler's
    /// view matches the device from the first event, and a key-up for a key held before
    /// attaching follows its key-down.
    public mutating func attach(from snapshot: DeviceStateSnapshot, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        for (code, value) in snapshot.absolute where Int(code) < absolute.count { absolute[Int(code)] = value }
        resync(from: snapshot, at: time, into: &out)
    }

    /// The device is gone: releases held keys and buttons, cancels live touches and
    /// takes the pen out of proximity, then reports the removal.
    public mutating func detach(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        clearPending()
        // Keys and buttons are released; digitizer tools and touch state go with the
        // cancelled contacts below, not as frames of their own.
        for code in keysDown.all {
            if (Evdev.BTN_TOOL_PEN...Evdev.BTN_TOOL_QUADTAP).contains(code) {
                keysDown.set(code, false)
            } else {
                pendingKeys.append((code, 0))
            }
        }
        toolFingers = 0
        touching = false
        clickDown = false
        let hadPen = penTool != nil
        finishFrame(at: time, into: &out)
        var frame = newDigitizerFrame()
        for index in slots.indices where slots[index].reportedID != -1 {
            let slot = slots[index]
            frame.append(contact(slot: index, id: slot.reportedID, phase: .cancelled, x: slot.x, y: slot.y, pressure: 0, size: 0))
            slots[index].reportedID = -1
            slots[index].trackingID = -1
        }
        for old in previousProtocolA {
            var cancelled = old
            cancelled.phase = .cancelled
            frame.append(cancelled)
        }
        previousProtocolA.removeAll()
        if frame.count > 0 { emitDigitizer(frame, at: time, into: &out) } else { keep(frame.buffer) }
        if hadPen {
            penTool = nil
            implicitPenTool = false
            penTouching = false
            penButtons = 0
            out.append(event(time, .pen(penEvent())))
        }
        out.append(event(time, .deviceRemoved))
    }

    /// Keys and buttons currently held.
    public var heldKeys: [UInt16] { keysDown.all }
}
