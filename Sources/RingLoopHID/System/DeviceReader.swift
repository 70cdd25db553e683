import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The `read(2)` calls an event system's readers made, on whatever thread they run.
final class ReadCallCounter: Sendable {
    let count = Atomic<Int>(0)
    /// Raw events the readers took from their devices, by either path.
    let events = Atomic<Int>(0)
}

/// How a device's events come off its descriptor.
public enum DeviceReadPath: String, Sendable, CaseIterable {
    /// A multishot read on the loop's ring into provided buffers (Linux 6.7 and later):
    /// the kernel reads when the device has data and the loop takes the bytes with its
    /// wait, so a frame costs no system call of its own. Used for evdev nodes and stream
    /// devices (pipes and sockets); virtual devices (FUSE nodes) are read by ``poll``,
    /// which costs their server fewer round trips.
    case ring
    /// A multishot poll on the ring, then `read(2)` until the device is drained: one system
    /// call per wake-up (the way for descriptors the ring cannot read multishot).
    case poll
}

/// Reads one device on a loop, every pending event per wake-up, decoded frame by frame
/// into HID events handed to `sink`: through the ring (``DeviceReadPath/ring``) where the
/// kernel and the descriptor allow it, else by poll then read.
///
/// Thread rules: created, used and closed on the loop's thread.
final class DeviceReader {
    let info: HIDDeviceInfo
    let fd: Int32
    private var decoder: FrameDecoder
    private var source: LoopPortSource?
    private var channel: LoopIOChannel?
    private let buffer: UnsafeMutableRawPointer
    private static let batch = 256
    private static var recordSize: Int { InputEvent.size }
    /// A record split between two reads (a stream's writer may split one), kept whole.
    private var carry: [UInt8] = []
    private var output: [HIDEvent] = []
    private let sink: (HIDEvent) -> Void
    private let onGone: (DeviceReader) -> Void
    private(set) var isAttached = false
    /// Events read from the kernel so far.
    private(set) var eventsRead = 0
    /// The path in use.
    private(set) var path: DeviceReadPath = .poll
    private var loop: RingRunLoop?

    /// Counts the `read(2)` calls of the event system's readers (the ring path makes none).
    private let readCalls: ReadCallCounter

    init(
        info: HIDDeviceInfo, fd: Int32, readCalls: ReadCallCounter, sink: @escaping (HIDEvent) -> Void,
        onGone: @escaping (DeviceReader) -> Void
    ) {
        self.readCalls = readCalls
        self.info = info
        self.fd = fd
        self.decoder = FrameDecoder(info: info)
        self.sink = sink
        self.onGone = onGone
        buffer = .allocate(byteCount: Self.batch * Self.recordSize, alignment: 8)
        output.reserveCapacity(64)
        carry.reserveCapacity(Self.recordSize)
    }

    deinit {
        buffer.deallocate()
        if fd >= 0 { close(fd) }
    }

    /// Whether the device holds input this reader has not taken yet, or an end it has not
    /// seen: `poll(2)` without waiting finds it readable, hung up or failed. Between the
    /// loop's callouts a read by poll then read has taken all it was woken for. A ring
    /// read (`DEFER_TASKRUN`) takes input when the loop's thread enters the kernel for
    /// completions: in its wait, but also in a callout's submission (a readiness source
    /// invalidated submits its cancellation at once): the bytes then wait in a completion
    /// the loop has not handled, and `poll(2)` finds the device empty. Ask
    /// ``DeviceMonitor/hasInputNotYetDecoded``, which also looks at the loop's completions.
    var hasUnreadInput: Bool {
        guard isAttached else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// Poll path: reads what the device holds now if `poll(2)` finds it readable, without
    /// waiting for the loop's readiness event; whether it read. A readiness notice that
    /// never comes (a FUSE node's server that misses a poll notification) leaves no input
    /// unread behind a delivery notice.
    func readIfLeftUnread() -> Bool {
        guard path == .poll, hasUnreadInput else { return false }
        readable(.readable)
        return true
    }

    /// Starts watching on `loop` (its thread) in the common modes, through the ring when
    /// `preferred` is ``DeviceReadPath/ring`` (falling back to poll where it cannot).
    func attach(to loop: RingRunLoop, preferred: DeviceReadPath = .ring) {
        self.loop = loop
        isAttached = true
        // What is held, on or touching already, read before the device is announced: a
        // client that acts on deviceAdded (starts a replay, presses a key) must not change
        // the state while it is being read (with a dedicated thread the announcement
        // reaches the client's loop at once, and reading the state of a FUSE node takes
        // a round trip to its server per request).
        let state = snapshot()
        sink(HIDEvent(device: info.id, timestamp: .now, payload: .deviceAdded))
        decoder.attach(from: state, at: .now, into: &output)
        flushOutput()
        if preferred == .ring, Self.ringReads(fd), startRing(on: loop) { return }
        startPoll(on: loop)
    }

    /// Whether the ring reads this kind of descriptor: pipes, sockets and character
    /// devices (evdev nodes), opened non-blocking, which io_uring reads without polling
    /// first (a read that finds nothing arms a poll; the device's wake-up then reads).
    ///
    /// Not FUSE files (virtual devices, regular files), where each way through the ring
    /// costs the node's server more round trips than poll then read: FUSE's poll
    /// notification carries no events, so a woken poll asks the server again
    /// (`FUSE_POLL`); a multishot read of a non-blocking node also reads once more each
    /// time it re-arms and finds nothing (a `FUSE_READ` answered `EAGAIN`); and a
    /// blocking read is polled before each attempt (FUSE files have no `FMODE_NOWAIT`),
    /// so it never waits in the server. Measured per frame, frames 1 ms apart
    /// (`hid.e2e.fuse.requests_per_frame`): poll then read 2 requests, a multishot read
    /// 3, a blocking read issued to wait in the server 5. Nodes keep poll then read.
    static func ringReads(_ fd: Int32) -> Bool {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return false }
        let kind = info.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFSOCK || kind == S_IFCHR
    }

    private func startPoll(on loop: RingRunLoop) {
        path = .poll
        let reader = UnownedLoopReference(self, loop: loop)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { events in
            reader.value.readable(events)
        }
        self.source = source
        loop.add(source, to: .common)
        // Whatever was queued before the poll was armed is read at once.
        readable(.readable)
    }

    /// Arms the multishot read; returns `false` when the ring cannot take it at all.
    private func startRing(on loop: RingRunLoop) -> Bool {
        let reader = UnownedLoopReference(self, loop: loop)
        let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: fd), loop: loop, ownsDescriptor: false) {
            _, completion in
            guard completion.isFinal else { return }
            reader.value.streamEnded(completion.outcome)
        }
        loop.add(channel.source, to: .common)
        do {
            // 8 buffers of 128 records: a burst the size of the kernel's default evdev
            // buffer fits without the read stopping for want of buffers. Each is decoded
            // in place, with no copy or allocation.
            try channel.readStream(bufferCount: 8, bufferSize: 128 * Self.recordSize) { _, bytes in
                bytes.withUnsafeBytes { reader.value.consume($0) }
            }
        } catch {
            channel.source.invalidate()
            return false
        }
        self.channel = channel
        path = .ring
        return true
    }

    /// The multishot read ended: the device went away (end of stream, `ENODEV`), it was
    /// cancelled by ``detach()``, or the ring cannot read this descriptor (an older
    /// kernel, a descriptor that cannot be polled): then poll takes over.
    private func streamEnded(_ outcome: IOCompletion.Outcome) {
        guard isAttached, let loop else { return }
        channel?.source.invalidate()
        channel = nil
        switch outcome {
        case .failed(.system(let errno))
        where eventsRead == 0 && (errno == .invalidArgument || errno.rawValue == EBADFD || errno == .notSupported):
            startPoll(on: loop)
        case .failed(.cancelled):
            break
        default:
            onGone(self)
        }
    }

    /// Stops watching, releases held keys, cancels live touches and reports removal.
    func detach() {
        guard isAttached else { return }
        isAttached = false
        source?.invalidate()
        source = nil
        if let channel {
            channel.close()
            channel.source.invalidate()
        }
        channel = nil
        decoder.detach(at: .now, into: &output)
        flushOutput()
    }

    /// Ring path: the bytes of one read, in place.
    private func consume(_ bytes: UnsafeRawBufferPointer) {
        guard isAttached, let base = bytes.baseAddress else { return }
        var offset = 0
        if !carry.isEmpty {
            let needed = min(Self.recordSize - carry.count, bytes.count)
            carry.append(contentsOf: UnsafeRawBufferPointer(start: base, count: needed))
            offset = needed
            guard carry.count == Self.recordSize else { return }
            let record = carry.withUnsafeBytes { InputEvent(bytes: $0.baseAddress!) }
            carry.removeAll(keepingCapacity: true)
            take(record)
        }
        let records = (bytes.count - offset) / Self.recordSize
        for index in 0..<records { take(InputEvent(bytes: base + offset + index * Self.recordSize)) }
        // The record completed from the last read's carry counts too (`offset > 0`).
        let completed = records + (offset > 0 ? 1 : 0)
        eventsRead += completed
        readCalls.events.add(completed, ordering: .relaxed)
        let rest = offset + records * Self.recordSize
        if rest < bytes.count { carry.append(contentsOf: UnsafeRawBufferPointer(start: base + rest, count: bytes.count - rest)) }
        flushOutput()
    }

    /// Poll path: the device is readable; read until it is drained.
    private func readable(_ events: PollEvents) {
        guard isAttached else { return }
        while true {
            readCalls.count.add(1, ordering: .relaxed)
            let count = read(fd, buffer, Self.batch * Self.recordSize)
            if count < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN: break
                default: onGone(self)  // ENODEV: the device went away
                }
                break
            }
            // 0: a stream's writer is gone (an evdev node never reads 0 bytes); its POLLHUP
            // ends the device below.
            if count == 0 { break }
            let records = count / Self.recordSize
            eventsRead += records
            readCalls.events.add(records, ordering: .relaxed)
            for index in 0..<records { take(InputEvent(bytes: buffer + index * Self.recordSize)) }
            flushOutput()
            if records < Self.batch { break }
        }
        if !events.isDisjoint(with: [.error, .hangUp, .invalid]) { onGone(self) }
    }

    @inline(__always)
    private func take(_ raw: InputEvent) {
        let wasResyncing = decoder.isResyncing
        decoder.feed(raw, into: &output)
        if wasResyncing, !decoder.isResyncing {
            // The dropped frame ended: read the device's state back.
            decoder.resync(from: snapshot(), at: raw.instant, into: &output)
        }
    }

    private func flushOutput() {
        for event in output { sink(event) }
        output.removeAll(keepingCapacity: true)
    }

    /// The device's current state, through the same requests libevdev's resync uses. A
    /// request the node refuses leaves its part empty (no keys down, slots without a
    /// contact), as before any event.
    func snapshot() -> DeviceState {
        let device = EvdevDevice(fileDescriptor: fd)
        var state = DeviceState()
        if let keys = try? device.keysDown() { state.keys = KeyCodeSet(keys) }
        if let switches = try? device.switchesOn() { state.switches = SmallCodeSet(switches) }
        if !info.leds.isEmpty, let leds = try? device.ledsOn() { state.leds = SmallCodeSet(leds) }
        for code in info.axes.keys where !Evdev.isMultitouchAxis(code) {
            if let axis = try? device.absoluteAxis(code) { state.axes[code] = axis.value }
        }
        if info.slotCount > 0 {
            if let slot = try? device.absoluteAxis(Evdev.ABS_MT_SLOT) { state.currentSlot = slot.value }
            func values(_ code: UInt16) -> [Int32] {
                (try? device.slotValues(of: code, slotCount: info.slotCount))
                    ?? Array(repeating: code == Evdev.ABS_MT_TRACKING_ID ? -1 : 0, count: info.slotCount)
            }
            let ids = values(Evdev.ABS_MT_TRACKING_ID)
            let xs = values(Evdev.ABS_MT_POSITION_X)
            let ys = values(Evdev.ABS_MT_POSITION_Y)
            state.slots = (0..<info.slotCount).map { DeviceState.Slot(trackingID: ids[$0], x: xs[$0], y: ys[$0]) }
        }
        return state
    }

    /// Held keys and live touches, for a client that lost events.
    var heldKeys: [UInt16] { decoder.heldKeys }
}
