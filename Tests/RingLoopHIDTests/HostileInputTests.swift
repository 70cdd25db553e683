import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Mutates evemu text the way hostile or broken files differ from good ones: numbers
/// replaced by huge, negative or overlong ones, lines dropped, doubled or swapped, bytes
/// flipped, the fake-MT bit and absurd slot ranges set.
func mutate(_ text: String, using generator: inout SeededGenerator) -> String {
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let hostileNumbers = [
        "ffffffffffffffffff", "-1", "-2147483649", "2147483647", "4294967296", "99999999999999999999", "0x", "-0",
        "7fffffffffffffff", "1e9", "", "ff ff ff ff ff ff ff ff ff ff ff ff", "-5",
    ]
    for _ in 0..<Int.random(in: 1...4, using: &generator) {
        guard !lines.isEmpty else { break }
        let index = Int.random(in: 0..<lines.count, using: &generator)
        switch Int.random(in: 0..<9, using: &generator) {
        case 0, 1, 2:
            var fields = lines[index].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard fields.count > 1 else { continue }
            fields[Int.random(in: 1..<fields.count, using: &generator)] = hostileNumbers.randomElement(using: &generator)!
            lines[index] = fields.joined(separator: " ")
        case 3: lines.remove(at: index)
        case 4: lines.insert(lines[index], at: index)
        case 5: lines.swapAt(index, Int.random(in: 0..<lines.count, using: &generator))
        case 6:
            var bytes = Array(lines[index].utf8)
            guard !bytes.isEmpty else { continue }
            bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            lines[index] = String(decoding: bytes, as: UTF8.self)
        case 7:  // the "fake MT" bit and an ABS_MT_SLOT, as HID devices with many axes have
            lines.insert("B: 03 00 00 00 00 00 c0 00 00", at: index)
            lines.insert("A: 2e 0 1 0 0 0", at: min(index + 1, lines.count))
        default:
            lines.insert("A: 2f 0 \(["2147483647", "-5", "1023", "1024", "0"].randomElement(using: &generator)!) 0 0 0", at: index)
        }
    }
    return lines.joined(separator: "\n")
}

@Suite("Hostile recordings and descriptions", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct HostileInputTests {
    /// Hundreds of mutated copies of the bundled and real recordings: each is refused
    /// with a `file:line` error or read; what is read is hosted on a FUSE node, described
    /// through libevdev and its events decoded. Nothing may trap, and nothing may size
    /// memory from an unchecked number (a slot count of 2³¹ used to grow the node by
    /// 500 MB/s).
    @Test("400 mutated recordings: refused with a line, or hosted and decoded, never a trap")
    func mutatedRecordings() throws {
        var sources: [String] = []
        for name in [
            "keyboard", "mouse-hires-wheel", "touchscreen-multitouch", "touchpad-protocol-a", "touchpad-semi-mt", "pen-tablet", "gamepad",
            "lid-switch",
        ] {
            let bytes = try Recording.readFile(devicesFolder + "/" + name + ".evemu")
            sources.append(String(decoding: bytes, as: UTF8.self))
        }
        for file in [
            "evemu-devices/touchscreens/Atmel maXTouch Touchscreen.2-fingers-touch-release.events", "evemu/ntrig-dell-xt2.event",
            "evemu-devices/misc/Microsoft Surface Type Cover.events",
        ] {
            sources.append(String(decoding: try Recording.readFile(devicesFolder + "/real/" + file), as: UTF8.self))
        }
        var generator = SeededGenerator(state: 0x5EED_0001)
        var refused = 0
        var hosted = 0
        try withDeviceFolder { folder in
            for round in 0..<400 {
                let text = mutate(sources[round % sources.count], using: &generator)
                let recordings: [Recording]
                do {
                    recordings = try EvemuFormat.parseAll(text, file: "mutation-\(round)")
                } catch {
                    #expect("\(error)".hasPrefix("mutation-\(round)"), "\(error)")
                    refused += 1
                    continue
                }
                for recording in recordings {
                    guard let description = recording.description else { continue }
                    let node = try folder.addDevice(description, bufferSize: 4096, appliesFuzz: false)
                    defer { node.remove() }
                    let fd = open(node.path, O_RDONLY | O_NONBLOCK)
                    try #require(fd >= 0)
                    defer { close(fd) }
                    guard case .success(let info) = HIDDeviceInfo.read(fd: fd, id: HIDDeviceID(rawValue: 1), path: node.path) else {
                        continue
                    }
                    hosted += 1
                    var decoder = FrameDecoder(info: info)
                    var out: [HIDEvent] = []
                    for event in recording.events {
                        try? node.send([(event.type, event.code, event.value)])
                        decoder.feed(event, into: &out)
                    }
                    decoder.detach(at: .now, into: &out)
                }
            }
        }
        #expect(refused > 50 && hosted > 50, "refused \(refused), hosted \(hosted): the mutations should exercise both")
    }

    @Test("A fake-MT description (ABS_RESERVED with ABS_MT_SLOT) has no slots and decodes its axes")
    func fakeMultitouch() throws {
        let recording = try EvemuFormat.parse(
            """
            N: Many Axes
            I: 0003 0001 0002 0003
            B: 03 00 00 00 00 00 c0 20 00
            A: 2e -127 127 0 0 0
            A: 2f -127 127 0 0 0
            A: 35 -127 127 0 0 0
            E: 0.000001 0003 002f 0005
            E: 0.000001 0003 0035 0007
            E: 0.000001 0000 0000 0000
            """)
        let description = try #require(recording.description)
        #expect(!description.isMultitouch && description.slotCount == 0)
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let fd = open(node.path, O_RDONLY | O_NONBLOCK)
            defer { close(fd) }
            guard case .success(let info) = HIDDeviceInfo.read(fd: fd, id: HIDDeviceID(rawValue: 1), path: node.path) else {
                Issue.record("not described")
                return
            }
            #expect(info.slotCount == 0 && !info.isProtocolA && info.isFakeMultitouch)
            var decoder = FrameDecoder(info: info)
            var out: [HIDEvent] = []
            for event in recording.events {
                decoder.feed(InputEvent(seconds: 0, microseconds: 1, type: event.type, code: event.code, value: event.value), into: &out)
            }
            let axes = out.compactMap { event -> UInt16? in if case .axis(let axis) = event.payload { axis.code } else { nil } }
            #expect(axes == [0x2f, 0x35])
        }
    }
}
