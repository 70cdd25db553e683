import RingLoop

#if canImport(Glibc)
import Glibc
#endif

/// A HID device played through `/dev/uhid`: the kernel's HID core and its drivers
/// (hid-generic, hid-multitouch, hid-playstation…) take its report descriptor and its
/// input reports as from a device on a USB or Bluetooth bus, and make its evdev nodes.
/// A thread answers the driver's requests: `GET_REPORT` from the device's feature
/// reports (an error for any other), `SET_REPORT` with success; output reports (LEDs,
/// rumble) are kept.
///
/// The `struct uhid_event` layout (`linux/uhid.h`, packed): a 32-bit type, then the
/// request: 4,376 bytes in all.
final class UHIDDevice: @unchecked Sendable {
    // @unchecked: `fd` is a constant; `outputs` and `setReports` are behind `lock`; the
    // responder thread and the caller each write whole events (uhid serializes writes).
    let name: String
    private let fd: Int32
    private let features: [UInt8: [UInt8]]
    private let lock = ThreadLock<(outputs: [[UInt8]], setReports: [[UInt8]], stopped: Bool)>(([], [], false))
    private var responder: PosixThread?

    static let eventSize = 4376
    enum EventType: UInt32 {
        case destroy = 1, start = 2, stop = 3, open = 4, close = 5, output = 6
        case getReport = 9, getReportReply = 10, create2 = 11, input2 = 12, setReport = 13, setReportReply = 14
    }

    /// Creates the device; the kernel's driver binds to it asynchronously.
    init(
        name: String, bus: UInt16, vendor: UInt32, product: UInt32, version: UInt32 = 0x100, uniq: String = "",
        descriptor: [UInt8], features: [UInt8: [UInt8]] = [:]
    ) throws {
        self.name = name
        self.features = features
        fd = open("/dev/uhid", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw UHIDError("/dev/uhid: \(String(cString: strerror(errno)))") }
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(EventType.create2.rawValue, at: 0, in: &event)
        Self.putString(name, at: 4, max: 128, in: &event)
        Self.putString("ringloop-uhid", at: 132, max: 64, in: &event)
        Self.putString(uniq, at: 196, max: 64, in: &event)
        Self.put(UInt16(descriptor.count), at: 260, in: &event)
        Self.put(bus, at: 262, in: &event)
        Self.put(vendor, at: 264, in: &event)
        Self.put(product, at: 268, in: &event)
        Self.put(version, at: 272, in: &event)
        event.replaceSubrange(280..<(280 + descriptor.count), with: descriptor)
        try write(event)
        let device = self
        responder = PosixThread.start(name: "uhid-responder") { device.respond() }
    }

    deinit { destroy() }

    /// Sends one input report (report id first, when the descriptor has ids).
    func input(_ report: [UInt8]) throws {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(EventType.input2.rawValue, at: 0, in: &event)
        Self.put(UInt16(report.count), at: 4, in: &event)
        event.replaceSubrange(6..<(6 + report.count), with: report)
        try write(event)
    }

    /// Output reports the driver sent (LEDs, rumble, lightbar), oldest first.
    var outputs: [[UInt8]] { lock.withLock { $0.outputs } }
    /// `SET_REPORT` requests (report number first), oldest first.
    var setReports: [[UInt8]] { lock.withLock { $0.setReports } }

    /// Removes the device (its evdev nodes go) and ends the responder.
    func destroy() {
        let already = lock.withLock { state -> Bool in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !already else { return }
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        Self.put(EventType.destroy.rawValue, at: 0, in: &event)
        try? write(event)
        responder?.join()
        close(fd)
    }

    private func write(_ event: [UInt8]) throws {
        let written = event.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == event.count else { throw UHIDError("uhid write: \(String(cString: strerror(errno)))") }
    }

    /// The responder: answers the driver until the device is destroyed.
    private func respond() {
        var event = [UInt8](repeating: 0, count: Self.eventSize)
        while !lock.withLock({ $0.stopped }) {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) == 1 else { continue }
            let count = event.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count >= 4 else { continue }
            switch EventType(rawValue: Self.get32(event, 0)) {
            case .getReport:
                let id = Self.get32(event, 4)
                let number = event[8]
                var reply = [UInt8](repeating: 0, count: Self.eventSize)
                Self.put(EventType.getReportReply.rawValue, at: 0, in: &reply)
                Self.put(id, at: 4, in: &reply)
                if let data = features[number] {
                    Self.put(UInt16(data.count), at: 10, in: &reply)
                    reply.replaceSubrange(12..<(12 + data.count), with: data)
                } else {
                    Self.put(UInt16(EIO), at: 8, in: &reply)
                }
                try? write(reply)
            case .setReport:
                let id = Self.get32(event, 4)
                let size = Int(event[10]) | Int(event[11]) << 8
                let data = [event[8]] + Array(event[12..<(12 + min(size, 4096))])
                lock.withLock { $0.setReports.append(data) }
                var reply = [UInt8](repeating: 0, count: Self.eventSize)
                Self.put(EventType.setReportReply.rawValue, at: 0, in: &reply)
                Self.put(id, at: 4, in: &reply)
                try? write(reply)
            case .output:
                let size = Int(event[4100]) | Int(event[4101]) << 8
                let data = Array(event[4..<(4 + min(size, 4096))])
                lock.withLock { $0.outputs.append(data) }
            default:
                break  // start, stop, open, close
            }
        }
    }

    static func put<T: FixedWidthInteger>(_ value: T, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<MemoryLayout<T>.size { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    private static func putString(_ text: String, at offset: Int, max: Int, in bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(max - 1))
        bytes.replaceSubrange(offset..<(offset + utf8.count), with: utf8)
    }

    private static func get32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}

struct UHIDError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The evdev nodes the kernel's drivers made for a uhid device, by input device name:
/// `/sys/devices/virtual/misc/uhid/BBBB:VVVV:PPPP.NNNN/input/inputN/eventM`.
func uhidNodes(bus: UInt16, vendor: UInt32, product: UInt32) -> [(name: String, node: String)] {
    let folder = "/sys/devices/virtual/misc/uhid"
    let hex = [Format.hex(bus, digits: 4), Format.hex(vendor, digits: 4), Format.hex(product, digits: 4)]
    let prefix = hex.joined(separator: ":").uppercased() + "."
    let devices = folderEntries(folder).filter { $0.hasPrefix(prefix) }
    // The kernel numbers HID devices in creation order: compare the numbers, not their text (".10" < ".9").
    func sequence(_ name: String) -> Int { name.split(separator: ".").last.flatMap { Int($0, radix: 16) } ?? -1 }
    guard let newest = devices.max(by: { sequence($0) < sequence($1) }) else { return [] }
    var nodes: [(String, String)] = []
    let inputs = folderEntries("\(folder)/\(newest)/input")
    for input in inputs.sorted() {
        let path = "\(folder)/\(newest)/input/\(input)"
        let name = fileText(path + "/name")?.trimmed ?? ""
        let entries = folderEntries(path)
        if let event = entries.first(where: { $0.hasPrefix("event") }) { nodes.append((name, "/dev/input/" + event)) }
    }
    return nodes
}
