import CLibEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// MARK: Identity and capabilities

extension EvdevDevice {
    /// The evdev protocol version (`EVIOCGVERSION`; ``Evdev/EV_VERSION`` on every kernel
    /// since 2.6).
    public func driverVersion() throws(EvdevError) -> Int32 {
        var version: Int32 = 0
        try request(.driverVersion, ringloop_eviocgversion(), &version)
        return version
    }

    /// Bus, vendor, product and version (`EVIOCGID`).
    public func identity() throws(EvdevError) -> (busType: UInt16, vendor: UInt16, product: UInt16, version: UInt16) {
        var id = input_id()
        try request(.identity, ringloop_eviocgid(), &id)
        return (id.bustype, id.vendor, id.product, id.version)
    }

    /// The device's name (`EVIOCGNAME`).
    public func name() throws(EvdevError) -> String { try string(.name, ringloop_eviocgname) }

    /// Where the device is attached (`EVIOCGPHYS`); a device without one answers `ENOENT`.
    public func physicalLocation() throws(EvdevError) -> String { try string(.physicalLocation, ringloop_eviocgphys) }

    /// The device's own identifier (`EVIOCGUNIQ`); a device without one answers `ENOENT`.
    public func uniqueIdentifier() throws(EvdevError) -> String { try string(.uniqueIdentifier, ringloop_eviocguniq) }

    /// `INPUT_PROP_*` bits (`EVIOCGPROP`).
    public func properties() throws(EvdevError) -> Set<UInt16> {
        Self.codes(in: try read(.properties, count: (Int(Evdev.INPUT_PROP_MAX) + 8) / 8, ringloop_eviocgprop))
    }

    /// The codes of one event type the device can send (`EVIOCGBIT(type)`); for `EV_SYN`,
    /// the event types.
    public func codes(ofType type: UInt16) throws(EvdevError) -> Set<UInt16> {
        guard let count = Evdev.maskBytes(ofType: type) else {
            throw EvdevError(request: .codes(type: type), errno: .invalidArgument)
        }
        return Self.codes(in: try read(.codes(type: type), count: count) { ringloop_eviocgbit(UInt32(type), $0) })
    }

    /// One absolute axis: its current value and range (`EVIOCGABS(axis)`). A code above
    /// `ABS_MAX` is refused here with `EINVAL`, as the kernel refuses an axis the device
    /// does not have.
    public func absoluteAxis(_ code: UInt16) throws(EvdevError) -> AbsoluteAxis {
        guard code <= Evdev.ABS_MAX else { throw EvdevError(request: .absoluteAxis(code), errno: .invalidArgument) }
        var info = input_absinfo()
        try request(.absoluteAxis(code), ringloop_eviocgabs(UInt32(code)), &info)
        return AbsoluteAxis(info)
    }
}

// MARK: State

extension EvdevDevice {
    /// The keys and buttons held down (`EVIOCGKEY`).
    public func keysDown() throws(EvdevError) -> Set<UInt16> {
        Self.codes(in: try read(.keyState, count: Evdev.maskBytes(ofType: Evdev.EV_KEY)!, ringloop_eviocgkey))
    }

    /// The switches that are set (`EVIOCGSW`).
    public func switchesOn() throws(EvdevError) -> Set<UInt16> {
        Self.codes(in: try read(.switchState, count: Evdev.maskBytes(ofType: Evdev.EV_SW)!, ringloop_eviocgsw))
    }

    /// The LEDs that are lit (`EVIOCGLED`).
    public func ledsOn() throws(EvdevError) -> Set<UInt16> {
        Self.codes(in: try read(.ledState, count: Evdev.maskBytes(ofType: Evdev.EV_LED)!, ringloop_eviocgled))
    }

    /// One multitouch axis's value in each of the first `slotCount` slots
    /// (`EVIOCGMTSLOTS`).
    public func slotValues(of axis: UInt16, slotCount: Int) throws(EvdevError) -> [Int32] {
        var values = [Int32](repeating: 0, count: slotCount + 1)
        values[0] = Int32(axis)
        let size = UInt32(values.count * MemoryLayout<Int32>.size)
        let result = values.withUnsafeMutableBytes { buffer in
            Swift.Result { () throws(EvdevError) in
                try self.request(.slotValues(axis: axis), ringloop_eviocgmtslots(size), buffer.baseAddress)
            }
        }
        _ = try result.get()
        return Array(values.dropFirst())
    }
}

// MARK: Settings

extension EvdevDevice {
    /// Makes this descriptor the node's only reader (`EVIOCGRAB`, 1); `EBUSY` when
    /// another descriptor holds it. The argument goes through a pointer: the kernel
    /// reads any non-zero argument as "grab", and a FUSE node can take the request only
    /// that way.
    public func grab() throws(EvdevError) {
        var one: Int32 = 1
        try request(.grab, ringloop_eviocgrab(), &one)
    }

    /// Releases a grab (`EVIOCGRAB`, 0); `EINVAL` when this descriptor holds none.
    ///
    /// The kernel's evdev reads the argument as a value, so "ungrab" is the integer 0 (a
    /// pointer to a zero would be non-zero: a grab). A FUSE node cannot take that: FUSE
    /// copies an `_IOW` argument from the address given and answers `EFAULT` for 0; for it,
    /// and only after that answer, the request goes again with a pointer to a zero.
    public func ungrab() throws(EvdevError) {
        do {
            try request(.ungrab, ringloop_eviocgrab(), nil)
        } catch let error where error.errno == .badAddress {
            var zero: Int32 = 0
            try request(.ungrab, ringloop_eviocgrab(), &zero)
        }
    }

    /// The clock the node stamps this descriptor's events with (`EVIOCSCLOCKID`:
    /// `CLOCK_REALTIME` by default, `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME`).
    public func setClock(_ clock: Int32) throws(EvdevError) {
        var clock = clock
        try request(.setClock, ringloop_eviocsclockid(), &clock)
    }

    /// The kernel's key repeat, delay and period in milliseconds (`EVIOCGREP`).
    public func keyRepeat() throws(EvdevError) -> (delay: Int32, period: Int32) {
        var settings: [UInt32] = [0, 0]
        try request(.keyRepeat, ringloop_eviocgrep(), &settings)
        return (Int32(bitPattern: settings[0]), Int32(bitPattern: settings[1]))
    }

    /// Sets the kernel's key repeat (`EVIOCSREP`).
    public func setKeyRepeat(delay: Int32, period: Int32) throws(EvdevError) {
        var settings: [UInt32] = [UInt32(bitPattern: delay), UInt32(bitPattern: period)]
        try request(.setKeyRepeat, ringloop_eviocsrep(), &settings)
    }

    /// Lights or darkens an LED: an `EV_LED` event and a `SYN_REPORT`, written in one
    /// call (the node must be open for writing).
    public func setLED(_ code: UInt16, on: Bool) throws(EvdevError) {
        let frame = [
            InputEvent(type: Evdev.EV_LED, code: code, value: on ? 1 : 0),
            InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0),
        ]
        var records = [UInt8](repeating: 0, count: frame.count * InputEvent.size)
        records.withUnsafeMutableBytes { raw in
            for (index, event) in frame.enumerated() { event.store(to: raw.baseAddress! + index * InputEvent.size) }
        }
        let written = records.withUnsafeBytes { Glibc.write(fileDescriptor, $0.baseAddress, $0.count) }
        if written != records.count {
            throw EvdevError(request: .write, errno: Errno(rawValue: written < 0 ? errno : EIO))
        }
    }
}
