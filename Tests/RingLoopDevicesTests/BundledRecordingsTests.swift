import CLibEvdev
import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// The repository's devices/ folder, found from this source file's location.
let devicesFolder: String = {
    var path = #filePath
    for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
    return path + "/devices"
}()

let bundledRecordings: [String] = {
    (directoryEntries(devicesFolder) ?? []).map(\.name).filter { $0.hasSuffix(".evemu") }.sorted()
}()

@Suite("Bundled recordings on FUSE nodes", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct BundledRecordingsTests {
    @Test("The devices/ folder holds every kind of device the demo shows")
    func libraryIsComplete() {
        for expected in [
            "keyboard", "mouse-hires-wheel", "touchscreen-multitouch", "touchpad", "touchpad-protocol-a",
            "touchpad-semi-mt", "pen-tablet", "gamepad", "power-button", "lid-switch", "rotary-encoder",
        ] {
            #expect(bundledRecordings.contains(expected + ".evemu"), "missing devices/\(expected).evemu")
        }
    }

    @Test("libevdev reports the recorded description, and the events read back are the recorded ones", arguments: bundledRecordings)
    func hostAndReplay(_ name: String) throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/" + name)
        let description = try #require(recording.description)
        #expect(!recording.notes.isEmpty, "\(name) needs a header comment saying what it shows")
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description, bufferSize: 8192, appliesFuzz: false)
            let fd = open(node.path, O_RDONLY | O_NONBLOCK)
            try #require(fd >= 0)
            defer { close(fd) }
            var device: OpaquePointer?
            try #require(libevdev_new_from_fd(fd, &device) == 0)
            defer { libevdev_free(device) }
            #expect(String(cString: libevdev_get_name(device)) == description.name)
            #expect(UInt16(libevdev_get_id_bustype(device)) == description.busType)
            #expect(UInt16(libevdev_get_id_vendor(device)) == description.vendor)
            #expect(UInt16(libevdev_get_id_product(device)) == description.product)
            #expect(UInt16(libevdev_get_id_version(device)) == description.version)
            for property in 0...Evdev.INPUT_PROP_MAX {
                #expect((libevdev_has_property(device, UInt32(property)) == 1) == description.properties.contains(property))
            }
            for type in Evdev.maskTypes where type != 0 {
                let maximum = Evdev.maximumCode(ofType: type)!
                for code in 0...maximum {
                    let has = libevdev_has_event_code(device, UInt32(type), UInt32(code)) == 1
                    #expect(has == description.has(type: type, code: code), "\(name): type \(type) code \(code)")
                }
            }
            for (code, axis) in description.absoluteAxes {
                let info = try #require(libevdev_get_abs_info(device, UInt32(code))?.pointee)
                #expect(info.minimum == axis.minimum && info.maximum == axis.maximum, "\(name): axis \(code)")
                #expect(info.fuzz == axis.fuzz && info.flat == axis.flat && info.resolution == axis.resolution)
            }
            for (code, value) in description.switchStates {
                #expect(libevdev_get_event_value(device, 5, UInt32(code)) == value)
            }

            let frames = try Replay.play(recording, to: node, speed: .asFastAsPossible)
            #expect(frames > 0)
            let readBack = readEvents(fd).map { [Int($0.type), Int($0.code), Int($0.value)] }
            let recorded = recording.events.map { [Int($0.type), Int($0.code), Int($0.value)] }
            #expect(readBack == recorded, "\(name): \(readBack.count) events read back, \(recorded.count) recorded")
        }
    }

    @Test("Replay at recorded speed keeps the recorded gaps")
    func recordedSpeed() throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/lid-switch.evemu")
        try withDeviceFolder { folder in
            let node = try folder.addDevice(recording.description!)
            let fd = open(node.path, O_RDONLY | O_NONBLOCK)
            defer { close(fd) }
            var clock: Int32 = CLOCK_MONOTONIC
            _ = ioctl(fd, UInt(ringloop_eviocsclockid()), &clock)
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let before = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
            try Replay.play(recording, to: node, speed: .scaled(4))
            var events = readEvents(fd)
            try #require(events.count == 4)
            let first = Int64(ringloop_input_event_sec(&events[0])) * 1_000_000 + Int64(ringloop_input_event_usec(&events[0]))
            let second = Int64(ringloop_input_event_sec(&events[2])) * 1_000_000 + Int64(ringloop_input_event_usec(&events[2]))
            // Recorded 1.5 s apart; at 4× the second frame is due 375 ms after the replay
            // starts, never sooner. (Measured from the first frame's stamp the gap can be a
            // little less: that frame is stamped after the replay's clock starts, by as long
            // as writing it takes.)
            #expect(first >= before)
            #expect(second - before >= 375_000)
            #expect(second - first < 1_500_000)
        }
    }
}
