import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// `monitor --raw`: a device's evdev events as evtest prints them (its capability header,
/// then one line per event), or as JSON objects.
enum RawView {
    /// evtest's header: driver version, ids, name, supported events with their codes
    /// (axes with their ranges, LEDs and switches with their state), key repeat,
    /// properties.
    static func header(fileDescriptor fd: Int32, _ device: InputDeviceDescription) -> String {
        let version = (try? EvdevDevice(fileDescriptor: fd).driverVersion()) ?? 0
        var out = "Input driver version is \(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)\n"
        out +=
            "Input device ID: bus 0x\(hex(device.busType)) vendor 0x\(hex(device.vendor)) product 0x\(hex(device.product)) version 0x\(hex(device.version))\n"
        out += "Input device name: \"\(Format.shown(device.name))\"\n"
        out += "Supported events:\n"
        for type in (device.codes[Evdev.EV_SYN] ?? []).union([Evdev.EV_SYN]).sorted() where type != Evdev.EV_REP {
            out += "  Event type \(type) (\(Evdev.name(ofType: type) ?? "?"))\n"
            guard type != Evdev.EV_SYN else { continue }
            for code in (device.codes[type] ?? []).sorted() {
                out += "    Event code \(code) (\(Evdev.name(ofCode: code, type: type) ?? "?"))"
                switch type {
                case Evdev.EV_ABS:
                    out += "\n"
                    if let axis = device.absoluteAxes[code] { out += absoluteData(axis) }
                case Evdev.EV_LED: out += " state \(device.ledStates[code] ?? 0)\n"
                case Evdev.EV_SW: out += " state \(device.switchStates[code] ?? 0)\n"
                default: out += "\n"
                }
            }
        }
        if let (delay, period) = device.keyRepeat {
            out += "Key repeat handling:\n  Repeat type \(Evdev.EV_REP) (EV_REP)\n"
            out += "    Repeat code 0 (REP_DELAY)\n      Value \(pad(delay))\n"
            out += "    Repeat code 1 (REP_PERIOD)\n      Value \(pad(period))\n"
        }
        out += "Properties:\n"
        for property in device.properties.sorted() {
            out += "  Property type \(property) (\(Evdev.name(ofProperty: property) ?? "?"))\n"
        }
        return out + "Testing ... (interrupt to exit)\n"
    }

    static func absoluteData(_ axis: AbsoluteAxis) -> String {
        var out = "      Value \(pad(axis.value))\n      Min   \(pad(axis.minimum))\n      Max   \(pad(axis.maximum))\n"
        if axis.fuzz != 0 { out += "      Fuzz  \(pad(axis.fuzz))\n" }
        if axis.flat != 0 { out += "      Flat  \(pad(axis.flat))\n" }
        if axis.resolution != 0 { out += "      Resolution  \(pad(axis.resolution))\n" }
        return out
    }

    /// One event as evtest prints it.
    static func line(_ event: InputEvent) -> String {
        let time = "Event: time \(event.seconds).\(leftPad(String(event.microseconds), 6, "0")), "
        if event.type == Evdev.EV_SYN {
            let name = Evdev.name(ofCode: event.code, type: event.type) ?? "?"
            switch event.code {
            case Evdev.SYN_MT_REPORT: return time + "++++++++++++++ \(name) ++++++++++++\n"
            case Evdev.SYN_DROPPED: return time + ">>>>>>>>>>>>>> \(name) <<<<<<<<<<<<\n"
            default: return time + "-------------- \(name) ------------\n"
            }
        }
        let value =
            event.type == Evdev.EV_MSC && (event.code == Evdev.MSC_RAW || event.code == Evdev.MSC_SCAN)
            ? leftPad(String(UInt32(bitPattern: event.value), radix: 16), 2, "0") : String(event.value)
        return time
            + "type \(event.type) (\(Evdev.name(ofType: event.type) ?? "?")), code \(event.code) (\(Evdev.name(ofCode: event.code, type: event.type) ?? "?")), value \(value)\n"
    }

    /// One event as a JSON object (`kind: "raw"`): its time on the kernel's
    /// `CLOCK_MONOTONIC` (as HID events' times are), `device` named as HID events name it.
    static func json(_ event: InputEvent, device: String) -> String {
        let object: [String: Any] = [
            "kind": "raw", "device": device, "time": JSON.double(Double(event.timeMicroseconds) / 1e6),
            "type": Int(event.type), "typeName": Evdev.name(ofType: event.type) ?? "?", "code": Int(event.code),
            "codeName": Evdev.name(ofCode: event.code, type: event.type) ?? "?", "value": Int(event.value),
        ]
        return EventFormat.jsonLine(object) + "\n"
    }

    private static func hex(_ value: UInt16) -> String { String(value, radix: 16) }
    private static func pad(_ value: Int32) -> String { leftPad(String(value), 6, " ") }
    private static func leftPad(_ text: String, _ width: Int, _ fill: Character) -> String {
        text.count >= width ? text : String(repeating: fill, count: width - text.count) + text
    }

    /// Prints `node`'s header (unless `json`) and its events until `end` is called (a
    /// signal, a closed standard output), `duration` passes, or the device goes — which is
    /// reported as evtest reports it (an error reading: No such device), and in JSON as a
    /// `deviceRemoved` object. `started` runs once the node is open (a hosted replay
    /// starts then); a `hosted` device's removal ends the monitor without an error.
    static func run(
        node: String, json: Bool, grab: Bool, duration: Double?, loop: RingRunLoop, end: @escaping @Sendable () -> Void,
        ended: LoopEnding, started: (() -> Void)? = nil, hosted: Bool = false
    ) throws(Failure) {
        let fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .input(node, errno: Errno(rawValue: errno)) }
        defer { close(fd) }
        let device: InputDeviceDescription
        do { device = try InputDeviceDescription(fileDescriptor: fd) } catch {
            throw .wrongKind(path: node, found: "is not an evdev device (\(error))", expected: "an evdev device node")
        }
        let evdev = EvdevDevice(fileDescriptor: fd)
        if grab {
            do throws(EvdevError) { try evdev.grab() } catch {
                throw .failed("\(node): cannot grab: \(String(cString: strerror(error.errno.rawValue)))")
            }
        }
        if json {
            // Times on the clock HID events use (evtest's text keeps the kernel's default).
            _ = try? evdev.setClock(CLOCK_MONOTONIC)
        } else {
            StandardOutput.write(header(fileDescriptor: fd, device))
        }
        let name = "\(Format.shown(device.name)) [\(HIDDeviceInfo.classify(codes: device.codes, properties: device.properties).rawValue)]"
        let removed = Atomic<Int32>(0)
        let buffer = LoopBound([UInt8](repeating: 0, count: InputEvent.size * 64), loop: loop)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { events in
            var text = ""
            var failure: Int32 = 0
            while true {
                let count = buffer.value.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    if count < 0 && errno != EAGAIN { failure = errno == ENOTCONN || errno == ECONNABORTED ? ENODEV : errno }
                    if count == 0 || (count < 0 && errno == EAGAIN && !events.isDisjoint(with: [.hangUp, .error, .invalid])) {
                        failure = ENODEV
                    }
                    break
                }
                buffer.value.withUnsafeBytes { raw in
                    for index in 0..<(count / InputEvent.size) {
                        let event = InputEvent(bytes: raw.baseAddress! + index * InputEvent.size)
                        text += json ? Self.json(event, device: name) : line(event)
                    }
                }
            }
            if !text.isEmpty { StandardOutput.write(text) }
            if failure != 0 {
                removed.store(failure, ordering: .releasing)
                if json, failure == ENODEV {
                    writeLine(EventFormat.jsonLine(["kind": "deviceRemoved", "device": name, "time": JSON.double(Self.now)]))
                }
                end()
            }
        }
        loop.add(source, to: .common)
        if let duration { loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in end() }, to: .common) }
        started?()
        while !ended.hasEnded {
            if loop.run(mode: .default, until: .distantFuture) == .finished { break }
        }
        source.invalidate()
        let error = removed.load(ordering: .acquiring)
        guard error != 0, !(hosted && error == ENODEV) else { return }
        // evtest: "evtest: error reading: No such device", and status 1.
        throw .failed("\(node): error reading: \(String(cString: strerror(error)))\(error == ENODEV ? " (the device was removed)" : "")")
    }

    /// Now on `CLOCK_MONOTONIC`, in seconds.
    static var now: Double { Double(MonotonicInstant.now.nanoseconds) / 1e9 }
}
