import CLibEvdev
import Logging
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// Reads one device on a loop: readiness through the ring, every pending event drained
/// per wake-up, decoded frame by frame into HID events handed to `sink`.
///
/// Thread rules: created, used and closed on the loop's thread.
final class DeviceReader {
    let info: HIDDeviceInfo
    let fd: Int32
    private var decoder: FrameDecoder
    private var source: LoopPortSource?
    private let buffer: UnsafeMutableRawPointer
    private static let batch = 256
    private static var recordSize: Int { InputEvent.size }
    private var output: [HIDEvent] = []
    private let sink: (HIDEvent) -> Void
    private let onGone: (DeviceReader) -> Void
    private(set) var isAttached = false
    /// Events read from the kernel so far.
    private(set) var eventsRead = 0

    init(info: HIDDeviceInfo, fd: Int32, sink: @escaping (HIDEvent) -> Void, onGone: @escaping (DeviceReader) -> Void) {
        self.info = info
        self.fd = fd
        self.decoder = FrameDecoder(info: info)
        self.sink = sink
        self.onGone = onGone
        buffer = .allocate(byteCount: Self.batch * Self.recordSize, alignment: 8)
        output.reserveCapacity(64)
    }

    deinit {
        buffer.deallocate()
        if fd >= 0 { close(fd) }
    }

    /// Starts watching on `loop` (its thread) in the common modes.
    func attach(to loop: RingRunLoop) {
        let reader = UnownedLoopReference(self, loop: loop)
        let source = LoopPortSource(fileDescriptor: fd, events: Int16(POLLIN)) { events in
            reader.value.readable(events)
        }
        self.source = source
        loop.add(source, to: .common)
        isAttached = true
        sink(HIDEvent(device: info.id, timestamp: .now, payload: .deviceAdded))
        // Whatever was queued before the poll was armed is read at once.
        readable(Int16(POLLIN))
    }

    /// Stops watching, releases held keys, cancels live touches and reports removal.
    func detach() {
        guard isAttached else { return }
        isAttached = false
        source?.invalidate()
        source = nil
        decoder.detach(at: .now, into: &output)
        flushOutput()
    }

    private func readable(_ events: Int16) {
        guard isAttached else { return }
        while true {
            let count = read(fd, buffer, Self.batch * Self.recordSize)
            if count < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN: break
                default: onGone(self)  // ENODEV: the device went away
                }
                break
            }
            if count == 0 { break }
            let records = count / Self.recordSize
            eventsRead += records
            for index in 0..<records {
                let raw = InputEvent(bytes: buffer + index * Self.recordSize)
                let wasResyncing = decoder.isResyncing
                decoder.feed(raw, into: &output)
                if wasResyncing, !decoder.isResyncing {
                    // The dropped frame ended: read the device's state back.
                    decoder.resync(from: snapshot(), at: raw.instant, into: &output)
                }
            }
            flushOutput()
            if records < Self.batch { break }
        }
        if events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { onGone(self) }
    }

    private func flushOutput() {
        for event in output { sink(event) }
        output.removeAll(keepingCapacity: true)
    }

    /// The device's current state, through the same ioctls libevdev's resync uses.
    func snapshot() -> DeviceStateSnapshot {
        var state = DeviceStateSnapshot()
        var keys = [UInt8](repeating: 0, count: Evdev.maskBytes(ofType: Evdev.EV_KEY)!)
        if ioctl(fd, UInt(ringloop_eviocgkey(UInt32(keys.count))), &keys) >= 0 {
            for (index, byte) in keys.enumerated() where byte != 0 {
                for bit in 0..<8 where byte & (1 << bit) != 0 { state.keysDown.insert(UInt16(index * 8 + bit)) }
            }
        }
        var switches = [UInt8](repeating: 0, count: Evdev.maskBytes(ofType: Evdev.EV_SW)!)
        if ioctl(fd, UInt(ringloop_eviocgsw(UInt32(switches.count))), &switches) >= 0 {
            for (index, byte) in switches.enumerated() where byte != 0 {
                for bit in 0..<8 where byte & (1 << bit) != 0 { state.switchesOn.insert(UInt16(index * 8 + bit)) }
            }
        }
        for code in info.axes.keys where !Evdev.isMultitouchAxis(code) {
            var absinfo = input_absinfo()
            if ioctl(fd, UInt(ringloop_eviocgabs(UInt32(code))), &absinfo) >= 0 { state.absolute[code] = absinfo.value }
        }
        if info.slotCount > 0 {
            func values(_ code: UInt16) -> [Int32] {
                var request = [Int32](repeating: 0, count: info.slotCount + 1)
                request[0] = Int32(code)
                let size = UInt32(request.count * MemoryLayout<Int32>.size)
                let ok = request.withUnsafeMutableBytes { ioctl(fd, UInt(ringloop_eviocgmtslots(size)), $0.baseAddress!) } >= 0
                return ok ? Array(request.dropFirst()) : Array(repeating: code == Evdev.ABS_MT_TRACKING_ID ? -1 : 0, count: info.slotCount)
            }
            let ids = values(Evdev.ABS_MT_TRACKING_ID)
            let xs = values(Evdev.ABS_MT_POSITION_X)
            let ys = values(Evdev.ABS_MT_POSITION_Y)
            state.slots = (0..<info.slotCount).map { (ids[$0], xs[$0], ys[$0]) }
        }
        return state
    }

    /// Held keys and live touches, for a client that lost events.
    var heldKeys: [UInt16] { decoder.heldKeys }
}
