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
        if let slot = snapshot.currentSlot, !read.contacts.slots.isEmpty { read.contacts.currentSlot = slot }
        for code in read.keys.all where !snapshot.keys.contains(code) { keys.pending.append((code, 0)) }
        for code in snapshot.keys.all where !read.keys.contains(code) { keys.pending.append((code, 1)) }
        for code in read.switches.all where !snapshot.switches.contains(code) { switches.pending.append((code, 0)) }
        for code in snapshot.switches.all where !read.switches.contains(code) { switches.pending.append((code, 1)) }
        for code in snapshot.axes.codes where read.axes[code] != snapshot.axes[code] && !Evdev.isMultitouchAxis(code) {
            axes.pending.append((code, snapshot.axes[code]))
        }
        for (index, state) in snapshot.slots.enumerated() where index < read.contacts.slots.count {
            let slot = read.contacts.slots[index]
            if slot.trackingID != state.trackingID || slot.x != state.x || slot.y != state.y {
                read.contacts.slots[index][Evdev.ABS_MT_TRACKING_ID] = state.trackingID
                read.contacts.slots[index][Evdev.ABS_MT_POSITION_X] = state.x
                read.contacts.slots[index][Evdev.ABS_MT_POSITION_Y] = state.y
                touch.changedSlots |= 1 << UInt64(index)
            }
        }
        finishFrame(at: time, into: &out)
        touch.cancelProtocolAContacts(at: time, device: deviceID, into: &out)
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
                keys.pending.append((code, 0))
            }
        }
        touch.releaseKeys()
        finishFrame(at: time, into: &out)
        touch.cancelAll(slots: &read.contacts.slots, at: time, device: deviceID, into: &out)
        pen.leave(axes: read.axes, at: time, device: deviceID, into: &out)
        out.append(HIDEvent(device: deviceID, timestamp: time, payload: .deviceRemoved))
    }

    /// Keys and buttons currently held.
    package var heldKeys: [UInt16] { read.keys.all }
}
