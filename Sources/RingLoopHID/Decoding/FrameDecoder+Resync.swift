import RingLoop
import RingLoopEvdev

// After a loss and at removal: bring the state in line with the device, or release it.
extension FrameDecoder {
    // MARK: Resync and teardown

    /// After a `SYN_DROPPED` frame ended: brings the `read` ledger in line with the state
    /// read back from the device (`snapshot`), emitting key ups/downs, switch changes,
    /// axis values and touch ends/begins for what differs.
    package mutating func resync(from snapshot: DeviceState, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        dropping = false
        clearPending()
        if let slot = snapshot.currentSlot, !read.slots.isEmpty { read.currentSlot = slot }
        for code in read.keys.all where !snapshot.keys.contains(code) { pendingKeys.append((code, 0)) }
        for code in snapshot.keys.all where !read.keys.contains(code) { pendingKeys.append((code, 1)) }
        for code in read.switches.all where !snapshot.switches.contains(code) { pendingSwitches.append((code, 0)) }
        for code in snapshot.switches.all where !read.switches.contains(code) { pendingSwitches.append((code, 1)) }
        for code in snapshot.axes.codes where read.axes[code] != snapshot.axes[code] && !Evdev.isMultitouchAxis(code) {
            pendingAbsolute.append((code, snapshot.axes[code]))
        }
        for (index, state) in snapshot.slots.enumerated() where index < read.slots.count {
            let slot = read.slots[index]
            if slot.trackingID != state.trackingID || slot.x != state.x || slot.y != state.y {
                read.slots[index][Evdev.ABS_MT_TRACKING_ID] = state.trackingID
                read.slots[index][Evdev.ABS_MT_POSITION_X] = state.x
                read.slots[index][Evdev.ABS_MT_POSITION_Y] = state.y
                changedSlots |= 1 << UInt64(index)
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
    package mutating func attach(from snapshot: DeviceState, at time: MonotonicInstant, into out: inout [HIDEvent]) {
        for code in snapshot.axes.codes { read.axes[code] = snapshot.axes[code] }
        resync(from: snapshot, at: time, into: &out)
    }

    /// The device is gone: releases held keys and buttons, cancels live touches and
    /// takes the pen out of proximity, then reports the removal.
    package mutating func detach(at time: MonotonicInstant, into out: inout [HIDEvent]) {
        clearPending()
        // Keys and buttons are released; digitizer tools and touch state go with the
        // cancelled contacts below, not as frames of their own.
        for code in read.keys.all {
            if (Evdev.BTN_TOOL_PEN...Evdev.BTN_TOOL_QUADTAP).contains(code) {
                read.keys.set(code, false)
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
        for index in read.slots.indices where reportedIDs[index] != -1 {
            let slot = read.slots[index]
            frame.append(contact(slot: index, id: reportedIDs[index], phase: .cancelled, x: slot.x, y: slot.y, pressure: 0, size: 0))
            reportedIDs[index] = -1
            read.slots[index].trackingID = -1
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
    package var heldKeys: [UInt16] { read.keys.all }
}
