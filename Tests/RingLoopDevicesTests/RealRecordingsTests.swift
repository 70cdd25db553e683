import CLibEvdev
import Foundation
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices

/// Runs a program and returns its standard output, or `nil` if it failed to run or
/// exited non-zero.
func runProgram(_ path: String, _ arguments: [String]) -> String? {
    guard let child = try? Spawned(path, arguments) else { return nil }
    return child.finish() == 0 ? child.output : nil
}

/// The `L:` and `S:` lines of an evemu file, read by the simplest reading there is.
func recordedStates(_ path: String) -> (leds: [UInt16: Int32], switches: [UInt16: Int32]) {
    var leds: [UInt16: Int32] = [:]
    var switches: [UInt16: Int32] = [:]
    for line in (String(contentsOfFile: path) ?? "").split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 3, let code = UInt16(fields[1], radix: 16), let value = Int32(fields[2]) else { continue }
        if fields[0] == "L:" { leds[code] = value }
        if fields[0] == "S:" { switches[code] = value }
    }
    return (leds, switches)
}

@Suite("Real-world recordings: devices/real", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct RealRecordingsTests {
    /// Each file that holds a device description (once per description).
    static let descriptionFiles: [String] = {
        var files = Set<String>()
        for entry in RealRecordings.entries { files.insert(entry.description ?? entry.file) }
        return files.sorted()
    }()

    @Test("devices/real holds at least 60 recordings, each listed in the manifest, each origin with its licence")
    func corpusIsComplete() {
        let onDisk = RealRecordings.filesOnDisk()
        let listed = RealRecordings.entries.map(\.file)
        #expect(onDisk.count >= 60)
        #expect(
            Set(onDisk) == Set(listed),
            "not in manifest.tsv: \(Set(onDisk).subtracting(listed).sorted()); listed but missing: \(Set(listed).subtracting(onDisk).sorted())"
        )
        for entry in RealRecordings.entries where entry.description != nil {
            #expect(onDisk.contains(entry.description!), "\(entry.file): description \(entry.description!) is missing")
        }
        for licence in ["evemu-devices/LICENSE", "evemu/COPYING", "evemu/COPYING.GPL3", "README.md"] {
            #expect(access(RealRecordings.folder + "/" + licence, R_OK) == 0, "devices/real/\(licence) is missing")
        }
    }

    @Test("Every real recording parses (with its description for events-only files)", arguments: RealRecordings.entries)
    func parses(_ entry: RealRecordings.Entry) throws {
        let recordings = try entry.load()
        #expect(!recordings.isEmpty)
        for recording in recordings {
            #expect(recording.description != nil, "\(entry.file) has no description to replay onto")
        }
    }

    @Test(
        "Hosted as a FUSE node, libevdev reports exactly the recorded device: types, codes, axes, properties, repeat, LED and switch state",
        arguments: descriptionFiles)
    func hostedDescription(_ file: String) throws {
        let path = RealRecordings.folder + "/" + file
        let reference = EvemuReading.read(path)  // evemu's own reading of the file
        try #require(reference.accepted)
        let description = try #require(try Recording.loadAll(contentsOf: path).first?.description)
        let states = recordedStates(path)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description, bufferSize: 64)
            let fd = open(node.path, O_RDONLY | O_NONBLOCK)
            try #require(fd >= 0)
            defer { close(fd) }
            var device: OpaquePointer?
            try #require(libevdev_new_from_fd(fd, &device) == 0)
            defer { libevdev_free(device) }
            #expect(String(cString: libevdev_get_name(device)) == reference.name)
            #expect(
                [
                    libevdev_get_id_bustype(device), libevdev_get_id_vendor(device), libevdev_get_id_product(device),
                    libevdev_get_id_version(device),
                ].map { UInt16($0) } == reference.ids)
            var properties = Set<UInt16>()
            for property in 0...Evdev.INPUT_PROP_MAX where libevdev_has_property(device, UInt32(property)) == 1 {
                properties.insert(property)
            }
            #expect(properties == reference.properties, "\(file): properties")
            for type in Evdev.maskTypes where type != 0 {
                var codes = Set<UInt16>()
                for code in 0...Evdev.maximumCode(ofType: type)! where libevdev_has_event_code(device, UInt32(type), UInt32(code)) == 1 {
                    codes.insert(code)
                }
                #expect(codes == reference.codes[type] ?? [], "\(file): codes of type \(type)")
                // A type with codes is a type of the device, and one without none.
                #expect((libevdev_has_event_type(device, UInt32(type)) == 1) == !codes.isEmpty, "\(file): type \(type)")
            }
            for (code, expected) in reference.axes {
                let info = try #require(libevdev_get_abs_info(device, UInt32(code))?.pointee)
                #expect([info.minimum, info.maximum, info.fuzz, info.flat, info.resolution] == expected, "\(file): axis \(code)")
            }
            // Key repeat: EV_REP with the kernel's defaults, and EVIOCGBIT(EV_REP) refused as the kernel refuses it.
            #expect((libevdev_has_event_type(device, 0x14) == 1) == reference.hasRepeat, "\(file): EV_REP")
            if reference.hasRepeat {
                var delay: Int32 = 0
                var period: Int32 = 0
                #expect(libevdev_get_repeat(device, &delay, &period) == 0)
                #expect(delay == 250 && period == 33)
            }
            var mask = [UInt8](repeating: 0, count: 8)
            let result = Glibc.ioctl(fd, UInt(ringloop_eviocgbit(0x14, 8)), &mask)
            #expect(result == -1 && errno == EINVAL, "EVIOCGBIT(EV_REP) answers as the kernel's evdev does")
            for (code, value) in states.leds where reference.codes[0x11]?.contains(code) == true {
                #expect(libevdev_get_event_value(device, 0x11, UInt32(code)) == (value != 0 ? 1 : 0), "\(file): LED \(code)")
            }
            for (code, value) in states.switches where reference.codes[0x05]?.contains(code) == true {
                #expect(libevdev_get_event_value(device, 0x05, UInt32(code)) == (value != 0 ? 1 : 0), "\(file): switch \(code)")
            }
        }
    }

    @Test("evemu-describe on the hosted node writes a description evemu reads back as the recorded one", arguments: descriptionFiles)
    func evemuDescribeRoundTrip(_ file: String) throws {
        let describe = "/usr/bin/evemu-describe"
        try #require(access(describe, X_OK) == 0, "evemu-tools is not installed (tools/setup installs it)")
        let path = RealRecordings.folder + "/" + file
        let reference = EvemuReading.read(path, describe: true)
        let description = try #require(try Recording.loadAll(contentsOf: path).first?.description)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description, bufferSize: 64)
            let output = try #require(runProgram(describe, [node.path]), "evemu-describe \(node.path) failed")
            let described = temporaryFile(output)
            defer { unlink(described) }
            var again = EvemuReading.read(described)
            again.events = reference.events  // a description has no events
            #expect(again == reference, "\(file):\n described \(again)\n recorded  \(reference)")
            // And RingLoop reads evemu-describe's output as the same device.
            let ours = try #require(try Recording.load(contentsOf: described).description)
            #expect(ours == description, "\(file): RingLoop's reading of evemu-describe's output")
        }
    }
}

/// Whether uinput can be used here: `/dev/uinput` opens, after loading the module when
/// the kernel has it as one. When it cannot, why (shown as the skip reason).
enum UInputHere {
    static let problem: String? = {
        if case .success = VirtualDeviceBackend.availability(.uinput) { return nil }
        for modprobe in ["/usr/sbin/modprobe", "/sbin/modprobe"] where access(modprobe, X_OK) == 0 {
            _ = runProgram(modprobe, ["uinput"])
            if case .success = VirtualDeviceBackend.availability(.uinput) { return nil }
        }
        var reason = "no usable /dev/uinput"
        if let config = runProgram("/bin/sh", ["-c", "zcat /proc/config.gz 2>/dev/null | grep -E '^(# )?CONFIG_INPUT_UINPUT'"]),
            config.contains("is not set")
        {
            reason += ": this kernel is built without uinput (CONFIG_INPUT_UINPUT is not set)"
        } else if case .failure(let error) = VirtualDeviceBackend.availability(.uinput) {
            reason += ": \(error)"
        }
        return reason + "; the FUSE backend is tested instead"
    }()
}

@Suite("Real-world recordings on uinput devices")
struct RealRecordingsUInputTests {
    /// The same check as on FUSE nodes, on kernel devices made through /dev/uinput: the
    /// kernel's evdev answers, so this also shows what differs between the backends.
    @Test(
        "Hosted through uinput, libevdev on the kernel's node reports the recorded device, and replayed events read back",
        .enabled(if: UInputHere.problem == nil, Comment(rawValue: UInputHere.problem ?? "")),
        arguments: RealRecordingsTests.descriptionFiles)
    func uinputDevice(_ file: String) throws {
        let path = RealRecordings.folder + "/" + file
        let reference = EvemuReading.read(path)
        let recording = try #require(try Recording.loadAll(contentsOf: path).first)
        let host = try VirtualDeviceHost(backend: .uinput)
        defer { host.close() }
        let device = try host.create(recording.description!, forReplay: true)
        let fd = open(device.nodePath, O_RDONLY | O_NONBLOCK)
        try #require(fd >= 0, "open \(device.nodePath)")
        defer { close(fd) }
        var handle: OpaquePointer?
        try #require(libevdev_new_from_fd(fd, &handle) == 0)
        defer { libevdev_free(handle) }
        for type in Evdev.maskTypes where type != 0 {
            var codes = Set<UInt16>()
            for code in 0...Evdev.maximumCode(ofType: type)! where libevdev_has_event_code(handle, UInt32(type), UInt32(code)) == 1 {
                codes.insert(code)
            }
            #expect(codes == reference.codes[type] ?? [], "\(file): codes of type \(type)")
        }
        for (code, expected) in reference.axes {
            let info = try #require(libevdev_get_abs_info(handle, UInt32(code))?.pointee)
            // uinput devices for replay get fuzz 0: the recorded values were defuzzed once.
            #expect([info.minimum, info.maximum, info.flat, info.resolution] == [expected[0], expected[1], expected[3], expected[4]])
        }
        #expect((libevdev_has_event_type(handle, 0x14) == 1) == reference.hasRepeat)
        if !recording.events.isEmpty {
            try Replay.play(recording, to: device, speed: .asFastAsPossible)
            #expect(!readEvents(fd).isEmpty, "\(file): nothing read back from the kernel's node")
        }
    }
}
