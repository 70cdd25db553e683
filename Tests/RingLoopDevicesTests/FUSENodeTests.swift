import CLibEvdev
import Glibc
import Testing

@testable import RingLoopDevices

/// A folder per test, under /tmp, unmounted even when the test fails.
func withDeviceFolder<T>(_ body: (FUSEDeviceFolder) throws -> T) throws -> T {
    let path = "/tmp/ringloop-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let folder = try FUSEDeviceFolder(path: path)
    defer { folder.close() }
    return try body(folder)
}

let testMouse = InputDeviceDescription(
    name: "Virtual Test Mouse", busType: 0x03, vendor: 0x046d, product: 0xc077, version: 0x0111,
    codes: [0x01: [0x110, 0x111, 0x112], 0x02: [0x00, 0x01, 0x08, 0x0b], 0x04: [0x04]])

func readEvents(_ fd: Int32) -> [input_event] {
    var events: [input_event] = []
    var buffer = [input_event](repeating: input_event(), count: 64)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count <= 0 { return events }
        events += buffer.prefix(count / MemoryLayout<input_event>.size)
    }
}

@Suite("FUSE evdev nodes")
struct FUSENodeTests {
    @Test("libevdev reads the description, and events come back in order")
    func describeAndRead() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let fd = open(node.path, O_RDONLY | O_NONBLOCK)
            try #require(fd >= 0, "open \(node.path): \(errno)")
            defer { close(fd) }
            var device: OpaquePointer?
            let rc = libevdev_new_from_fd(fd, &device)
            try #require(rc == 0, "libevdev_new_from_fd: \(rc)")
            defer { libevdev_free(device) }
            #expect(String(cString: libevdev_get_name(device)) == "Virtual Test Mouse")
            #expect(libevdev_get_id_vendor(device) == 0x046d)
            #expect(libevdev_get_id_product(device) == 0xc077)
            #expect(libevdev_has_event_code(device, 1, 0x110) == 1)
            #expect(libevdev_has_event_code(device, 2, 0x0b) == 1)
            #expect(libevdev_has_event_code(device, 3, 0x00) == 0)
            try node.send([(2, 0, -3), (2, 1, 2), (0, 0, 0), (1, 0x110, 1), (0, 0, 0)])
            let events = readEvents(fd)
            #expect(events.map { [Int($0.type), Int($0.code), Int($0.value)] } == [[2, 0, -3], [2, 1, 2], [0, 0, 0], [1, 0x110, 1], [0, 0, 0]])
        }
    }
}
