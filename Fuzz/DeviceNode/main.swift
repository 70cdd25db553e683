// libFuzzer target: a FUSE evdev node's ioctl, read and write surface, through the kernel,
// as any reader reaches it. Nodes of a few real devices are hosted once; each input opens
// one (first byte), runs operations on it, and closes it. An operation is a byte: 0 an
// ioctl ('E', the next byte's number, a size and a direction from the next two bytes, the
// argument from the rest), 1 a read, 2 a write of input_event records (LED and repeat
// settings), 3 events sent by the device. Nothing may trap, hang or grow without bound.
// Needs root and /dev/fuse. Build and run with tools/fuzz.
import Glibc
import RingLoopDevices
import RingLoopEvdev

nonisolated(unsafe) var folder: FUSEDeviceFolder?
nonisolated(unsafe) var nodes: [FUSEEvdevNode] = []

@_cdecl("LLVMFuzzerInitialize")
public func fuzzDeviceNodeInitialize(
    _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>
) -> CInt {
    let devicesFolder = getenv("RINGLOOP_DEVICES").map { String(cString: $0) } ?? "devices"
    do {
        let mounted = try FUSEDeviceFolder(path: "/tmp/ringloop-fuzz-\(getpid())")
        folder = mounted
        for name in ["keyboard.evemu", "touchscreen-multitouch.evemu", "pen-tablet.evemu", "touchpad-protocol-a.evemu", "lid-switch.evemu"]
        {
            guard let description = try Recording.load(contentsOf: devicesFolder + "/" + name).description else { continue }
            nodes.append(try mounted.addDevice(description, bufferSize: 64))
        }
    } catch {
        print("cannot host devices: \(error)\n", terminator: "")
        exit(1)
    }
    // The folder is closed (and unmounted) when the fuzzer exits.
    atexit { folder?.close() }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDeviceNode(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    guard count >= 1, !nodes.isEmpty else { return 0 }
    let node = nodes[Int(bytes[0]) % nodes.count]
    let fd = open(node.path, O_RDWR | O_NONBLOCK)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var index = 1
    var buffer = [UInt8](repeating: 0, count: 4096)
    func take(_ n: Int) -> [UInt8] {
        let end = min(count, index + n)
        defer { index = end }
        return Array(bytes[index..<end])
    }
    while index < count {
        let operation = bytes[index] % 4
        index += 1
        switch operation {
        case 0:
            let header = take(3)
            guard header.count == 3 else { return 0 }
            let size = (Int(header[1]) | Int(header[2] & 0x0f) << 8) % 1024
            let direction = UInt(header[2] >> 6)  // 0 none, 1 write, 2 read, 3 both
            let request = direction << 30 | UInt(size) << 16 | UInt(UInt8(ascii: "E")) << 8 | UInt(header[0])
            let argument = take(size)
            for (offset, byte) in argument.enumerated() { buffer[offset] = byte }
            _ = ioctl(fd, request, &buffer)
        case 1:
            let size = Int(take(1).first ?? 0) * 24
            _ = read(fd, &buffer, min(size, buffer.count))
        case 2:
            let records = take(48)
            guard records.count == 48 else { return 0 }
            for (offset, byte) in records.enumerated() { buffer[offset] = byte }
            _ = write(fd, &buffer, 48)
        default:
            let raw = take(8)
            guard raw.count == 8 else { return 0 }
            let type = UInt16(raw[0]) % (Evdev.EV_MAX + 1)
            let code = UInt16(raw[1]) | UInt16(raw[2]) << 8
            let value = Int32(bitPattern: UInt32(raw[3]) | UInt32(raw[4]) << 8 | UInt32(raw[5]) << 16 | UInt32(raw[6]) << 24)
            try? node.send([(type, code, value), (Evdev.EV_SYN, Evdev.SYN_REPORT, 0)])
        }
    }
    return 0
}
