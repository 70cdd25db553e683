import ArgumentParser
import CLibEvdev
import Foundation
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import SystemPackage

/// `monitor --raw`: a device's evdev events as evtest prints them (its capability header,
/// then one line per event), or as JSON objects.
enum RawView {
    /// `EVIOCGVERSION`: `_IOR('E', 0x01, int)`.
    static let versionRequest = UInt(0x8004_4501)

    /// evtest's header: driver version, ids, name, supported events with their codes
    /// (axes with their ranges, LEDs and switches with their state), key repeat,
    /// properties.
    static func header(fileDescriptor fd: Int32, _ device: InputDeviceDescription) -> String {
        var version: Int32 = 0
        _ = ioctl(fd, versionRequest, &version)
        var out = "Input driver version is \(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)\n"
        out +=
            "Input device ID: bus 0x\(hex(device.busType)) vendor 0x\(hex(device.vendor)) product 0x\(hex(device.product)) version 0x\(hex(device.version))\n"
        out += "Input device name: \"\(device.name)\"\n"
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

    /// One event as a JSON object (`kind: "raw"`).
    static func json(_ event: InputEvent, device: String) -> String {
        func quoted(_ text: String) -> String { "\"\(text.replacingOccurrences(of: "\"", with: "\\\""))\"" }
        let time = "\(event.seconds).\(leftPad(String(event.microseconds), 6, "0"))"
        return
            "{\"kind\":\"raw\",\"device\":\(quoted(device)),\"time\":\(time),\"type\":\(event.type),\"typeName\":\(quoted(Evdev.name(ofType: event.type) ?? "?")),\"code\":\(event.code),\"codeName\":\(quoted(Evdev.name(ofCode: event.code, type: event.type) ?? "?")),\"value\":\(event.value)}\n"
    }

    private static func hex(_ value: UInt16) -> String { String(value, radix: 16) }
    private static func pad(_ value: Int32) -> String { leftPad(String(value), 6, " ") }
    private static func leftPad(_ text: String, _ width: Int, _ fill: Character) -> String {
        text.count >= width ? text : String(repeating: fill, count: width - text.count) + text
    }

    /// Writes `text` to standard output at once (a pipe would buffer `print`).
    static func emit(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { return }
            offset += written
        }
    }

    /// Prints `node`'s header (unless `json`) and its events until a signal, `duration`,
    /// the device's removal, or `done` returning true (checked every 100 ms).
    static func run(
        node: String, json: Bool, grab: Bool, duration: Double?, signals: SignalWatcher,
        started: (() -> Void)? = nil, done: (@Sendable () -> Bool)? = nil
    ) throws {
        let fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            printError("ringloop monitor: \(node): \(openFailure(errno))")
            throw ExitCode(1)
        }
        defer { close(fd) }
        let device: InputDeviceDescription
        do { device = try InputDeviceDescription(fileDescriptor: fd) } catch {
            printError("ringloop monitor: \(node): not an evdev device (\(error))")
            throw ExitCode(1)
        }
        if grab, ioctl(fd, UInt(ringloop_eviocgrab()), 1) != 0 {
            printError("ringloop monitor: \(node): cannot grab: \(String(cString: strerror(errno)))")
            throw ExitCode(1)
        }
        if !json { emit(header(fileDescriptor: fd, device)) }
        let loop = RingRunLoop.current
        let buffer = LoopBound([UInt8](repeating: 0, count: InputEvent.size * 64), loop: loop)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { events in
            var text = ""
            while true {
                let count = buffer.value.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 {
                    if count < 0, errno == ENODEV { loop.stop() }
                    break
                }
                buffer.value.withUnsafeBytes { raw in
                    for index in 0..<(count / InputEvent.size) {
                        let event = InputEvent(bytes: raw.baseAddress! + index * InputEvent.size)
                        text += json ? Self.json(event, device: node) : line(event)
                    }
                }
            }
            emit(text)
            if !events.isDisjoint(with: [.hangUp, .error, .invalid]) { loop.stop() }
        }
        loop.add(source, to: .default)
        signals.watch(on: loop) { _ in loop.stop() }
        if let duration { loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in loop.stop() }, to: .default) }
        if let done {
            loop.add(LoopTimer(after: .milliseconds(100), repeating: .milliseconds(100)) { _ in if done() { loop.stop() } }, to: .default)
        }
        started?()
        loop.run(mode: .default, until: .distantFuture)
        source.invalidate()
    }
}
