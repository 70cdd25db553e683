import CFuse
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

// The evdev ioctls a reader (libevdev, libinput, evtest) asks a node, answered as the kernel
// answers them for the described device.
extension FUSEEvdevNode {
    // MARK: ioctl

    func ioctl(
        req: fuse_req_t?, client id: UInt64, command: UInt32, argument: UnsafeMutableRawPointer?,
        input: UnsafeRawPointer?, inputSize: Int, outputSize: Int
    ) {
        guard let req else { return }
        let request = EvdevRequest(command: command)
        let number = request.number
        let size = request.size
        guard request.isEvdev else {
            fuse_reply_err(req, ENOTTY)
            return
        }
        func readInt() -> Int32? {
            guard let input, inputSize >= 4 else { return nil }
            return input.loadUnaligned(as: Int32.self)
        }
        var pid: pid_t = 0
        if let context = fuse_req_ctx(req) { pid = context.pointee.pid }
        var replies: [Reply] = []
        let outcome: (Int32, [UInt8]) = guarded.withLock { node in
            guard let index = node.clients.index(forKey: id) else { return (-EBADF, []) }
            if node.removed || node.clients.values[index].revoked { return (-ENODEV, []) }
            let d = deviceDescription
            switch (request.direction, number) {
            case (.read, EvdevRequest.EVIOCGVERSION):
                return (0, bytes(of: Evdev.EV_VERSION))
            case (.read, EvdevRequest.EVIOCGID):
                return (0, bytes(of: d.busType) + bytes(of: d.vendor) + bytes(of: d.product) + bytes(of: d.version))
            case (.read, EvdevRequest.EVIOCGREP):
                guard d.keyRepeat != nil else { return (-ENOSYS, []) }
                return (0, bytes(of: UInt32(node.device.repeatDelay)) + bytes(of: UInt32(node.device.repeatPeriod)))
            case (.write, EvdevRequest.EVIOCSREP):
                guard d.keyRepeat != nil, let input, inputSize >= 8 else { return (-ENOSYS, []) }
                let delay = input.loadUnaligned(as: Int32.self)
                let period = input.loadUnaligned(fromByteOffset: 4, as: Int32.self)
                _ = node.device.feed(type: Evdev.EV_REP, code: Evdev.REP_DELAY, value: delay)
                if let frame = node.device.feed(type: Evdev.EV_REP, code: Evdev.REP_PERIOD, value: period) {
                    node.deliver(frame, replies: &replies)
                }
                return (0, [])
            case (.read, EvdevRequest.EVIOCGNAME): return stringReply(d.name, size)
            case (.read, EvdevRequest.EVIOCGPHYS): return d.physicalLocation.isEmpty ? (-ENOENT, []) : stringReply(d.physicalLocation, size)
            case (.read, EvdevRequest.EVIOCGUNIQ): return d.uniqueIdentifier.isEmpty ? (-ENOENT, []) : stringReply(d.uniqueIdentifier, size)
            case (.read, EvdevRequest.EVIOCGPROP):
                return maskReply(BitSet.bytes(of: d.properties, maskBytes: Evdev.propertyMaskBytes), size)
            case (.read, EvdevRequest.EVIOCGMTSLOTS):  // the requested code is in the caller's buffer
                var code: UInt32 = 0
                guard let argument, size >= 4,
                    ringloop_read_process_memory(pid, argument, &code, 4) == 4,
                    code <= UInt16.max, let values = node.device.slotValues(code: UInt16(code))
                else { return (-EINVAL, []) }
                let count = min(values.count, (size - 4) / 4)
                return (0, bytes(of: code) + values.prefix(count).flatMap { bytes(of: $0) })
            case (.read, EvdevRequest.EVIOCGKEY): return maskReply(node.device.keys.bytes, size)
            case (.read, EvdevRequest.EVIOCGLED): return maskReply(node.device.leds.bytes, size)
            case (.read, EvdevRequest.EVIOCGSND): return maskReply(node.device.sounds.bytes, size)
            case (.read, EvdevRequest.EVIOCGSW): return maskReply(node.device.switches.bytes, size)
            case (.read, EvdevRequest.EVIOCGBIT...EvdevRequest.EVIOCGBIT + UInt8(Evdev.EV_MAX)):
                let type = UInt16(number - EvdevRequest.EVIOCGBIT)
                guard let maskBytes = Evdev.maskBytes(ofType: type) else { return (-EINVAL, []) }
                return maskReply(BitSet.bytes(of: d.codes[type] ?? [], maskBytes: maskBytes), size)
            case (.read, EvdevRequest.EVIOCGABS...EvdevRequest.EVIOCGABS + UInt8(Evdev.ABS_MAX)):
                let code = UInt16(number - EvdevRequest.EVIOCGABS)
                guard d.has(type: Evdev.EV_ABS, code: code), let axis = node.device.axis(code) else { return (-EINVAL, []) }
                return (0, Array(axis.kernelBytes.prefix(size)))
            case (.write, EvdevRequest.EVIOCSABS...EvdevRequest.EVIOCSABS + UInt8(Evdev.ABS_MAX)):
                let code = UInt16(number - EvdevRequest.EVIOCSABS)
                guard d.has(type: Evdev.EV_ABS, code: code), code != Evdev.ABS_MT_SLOT, let input,
                    inputSize >= AbsoluteAxis.kernelSize
                else { return (-EINVAL, []) }
                node.device.setAxis(code, AbsoluteAxis(bytes: input))
                return (0, [])
            case (.read, EvdevRequest.EVIOCGEFFECTS):
                return (0, bytes(of: Int32(hasRumble ? Self.effectCapacity : 0)))
            case (.write, EvdevRequest.EVIOCSFF):
                return uploadEffect(&node, input: input, inputSize: inputSize, caller: pid, argument: argument)
            case (.write, EvdevRequest.EVIOCRMFF):
                guard let id = readInt(), let effect = Int16(exactly: id), node.effects[effect] != nil else { return (-EINVAL, []) }
                node.effects[effect] = nil
                if node.playing.remove(effect) != nil { node.record(.stop(id: effect)) }
                node.record(.erase(id: effect))
                return (0, [])
            case (.write, EvdevRequest.EVIOCGRAB):
                guard let value = readInt() else { return (-EINVAL, []) }
                if value != 0 {
                    if node.grabbedBy != nil { return (-EBUSY, []) }
                    node.grabbedBy = id
                } else {
                    guard node.grabbedBy == id else { return (-EINVAL, []) }
                    node.grabbedBy = nil
                }
                return (0, [])
            case (.write, EvdevRequest.EVIOCREVOKE):
                guard readInt() == 0 else { return (-EINVAL, []) }
                node.clients.values[index].revoked = true
                node.clients.values[index].buffer.clear()
                if node.grabbedBy == id { node.grabbedBy = nil }
                node.wake(at: index, replies: &replies)
                return (0, [])
            case (.write, EvdevRequest.EVIOCSCLOCKID):
                guard let clock = readInt(), [CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME].contains(clock) else {
                    return (-EINVAL, [])
                }
                if node.clients.values[index].clock != clock {
                    node.clients.values[index].clock = clock
                    var now = timespec()
                    clock_gettime(clock, &now)
                    node.clients.values[index].buffer.resetWithSynDropped(seconds: now.tv_sec, microseconds: now.tv_nsec / 1000)
                }
                return (0, [])
            default:
                return (-EINVAL, [])
            }
        }
        perform(replies)
        let (result, data) = outcome
        if result < 0 {
            fuse_reply_err(req, -result)
            return
        }
        let count = min(data.count, outputSize)
        data.withUnsafeBytes { raw in
            _ = fuse_reply_ioctl(req, result == 0 && request.repliesWithLength ? Int32(count) : result, raw.baseAddress, count)
        }
    }

    /// Effects a virtual pad with `FF_RUMBLE` holds at once (the kernel's memoryless
    /// drivers' `FF_MEMLESS_EFFECTS`).
    static let effectCapacity = 16

    /// Whether the described device has `FF_RUMBLE`.
    var hasRumble: Bool { deviceDescription.has(type: Evdev.EV_FF, code: Evdev.FF_RUMBLE) }

    /// `EVIOCSFF`: a rumble stored under a new id (or the id it names), the id written back
    /// into the caller's struct as the kernel writes it (FUSE copies nothing back for a
    /// request that only writes).
    func uploadEffect(
        _ node: inout NodeState, input: UnsafeRawPointer?, inputSize: Int, caller: pid_t, argument: UnsafeMutableRawPointer?
    ) -> (Int32, [UInt8]) {
        // struct ff_effect: type, id, direction, trigger (2 × u16), replay (length, delay),
        // then the union at 16 (rumble: strong, weak).
        guard let input, inputSize >= 20, hasRumble else { return (-EINVAL, []) }
        let type = input.loadUnaligned(as: UInt16.self)
        var id = input.loadUnaligned(fromByteOffset: 2, as: Int16.self)
        guard type == Evdev.FF_RUMBLE else { return (-EINVAL, []) }
        let effect = RumbleEffect(
            strong: input.loadUnaligned(fromByteOffset: 16, as: UInt16.self),
            weak: input.loadUnaligned(fromByteOffset: 18, as: UInt16.self),
            milliseconds: input.loadUnaligned(fromByteOffset: 10, as: UInt16.self),
            delayMilliseconds: input.loadUnaligned(fromByteOffset: 12, as: UInt16.self))
        if id == -1 {
            guard let free = (0..<Int16(Self.effectCapacity)).first(where: { node.effects[$0] == nil }) else {
                return (-ENOSPC, [])
            }
            id = free
        } else if node.effects[id] == nil {
            return (-EINVAL, [])
        }
        if let argument {
            var written = id
            guard ringloop_write_process_memory(caller, argument + 2, &written, 2) == 2 else { return (-EFAULT, []) }
        }
        node.effects[id] = effect
        node.record(.upload(id: id, effect))
        return (0, [])
    }

    /// A string ioctl: the text and its NUL, cut to `size`; returns the bytes copied.
    func stringReply(_ text: String, _ size: Int) -> (Int32, [UInt8]) {
        var data = Array(text.utf8) + [0]
        if data.count > size { data = Array(data.prefix(size)) }
        return (0, data)
    }

    /// A bit-mask ioctl: the mask cut to `size`; returns the bytes copied.
    func maskReply(_ mask: [UInt8], _ size: Int) -> (Int32, [UInt8]) {
        (0, Array(mask.prefix(size)))
    }
}
