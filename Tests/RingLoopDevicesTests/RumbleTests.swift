import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices

/// Force feedback through `EvdevDevice` on the FUSE node of the DualShock 4 (its
/// description, as hid-playstation made it, has `FF_RUMBLE`): what the node was asked,
/// in order, is what the calls asked; a device without `FF_RUMBLE` refuses, by name.
@Suite("Rumble on a virtual pad", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct RumbleTests {
    static func dualShock4() throws -> InputDeviceDescription {
        var path = #filePath
        for _ in 0..<3 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return try #require(try Recording.load(contentsOf: path + "/devices/kernel/dualshock4-usb-gamepad.evemu").description)
    }

    @Test("upload, play, stop, replace, erase and gain reach the node as the kernel's API says")
    func uploadPlayStopErase() throws {
        let description = try Self.dualShock4()
        #expect(description.has(type: Evdev.EV_FF, code: Evdev.FF_RUMBLE))
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let device = try EvdevDevice.open(path: node.path, writable: true)
            defer { device.close() }
            #expect(try device.forceFeedbackEffectCapacity() == 16)
            let strong = RumbleEffect(strong: 0xffff, weak: 0x8000, milliseconds: 250)
            let first = try device.uploadRumble(strong)
            let second = try device.uploadRumble(RumbleEffect(strong: 0, weak: 0x4000, milliseconds: 100, delayMilliseconds: 20))
            #expect(first == 0 && second == 1, "the device gives the first free ids")
            try device.playEffect(first)
            #expect(node.rumblesPlaying == [first: strong])
            try device.stopEffect(first)
            #expect(node.rumblesPlaying.isEmpty)
            let weaker = RumbleEffect(strong: 0x1000, weak: 0x1000, milliseconds: 50)
            #expect(try device.uploadRumble(weaker, replacing: second) == second)
            try device.playEffect(second, count: 3)
            try device.eraseEffect(second)
            try device.setForceFeedbackGain(0x8000)
            #expect(
                node.forceFeedbackRequests == [
                    .upload(id: 0, strong), .upload(id: 1, RumbleEffect(strong: 0, weak: 0x4000, milliseconds: 100, delayMilliseconds: 20)),
                    .play(id: 0, count: 1), .stop(id: 0), .upload(id: 1, weaker), .play(id: 1, count: 3), .stop(id: 1),
                    .erase(id: 1), .gain(0x8000),
                ])
            // An id that was never given, and a full device.
            #expect(throws: EvdevError(request: .eraseEffect(7), errno: .invalidArgument)) { try device.eraseEffect(7) }
            for _ in 0..<15 { _ = try device.uploadRumble(weaker) }
            #expect(throws: EvdevError(request: .uploadEffect, errno: .noSpace)) { try device.uploadRumble(weaker) }
            // Rumble events never reach the node's readers (the kernel passes them to the device).
            #expect(node.unreadEventCounts.allSatisfy { $0 == 0 })
        }
    }

    @Test(
        "EV_FF writes the kernel drops are not kept: a negative value neither stops nor plays an effect nor sets the gain, a gain above 65535 is ignored"
    )
    func writesTheKernelDrops() throws {
        let description = try Self.dualShock4()
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let device = try EvdevDevice.open(path: node.path, writable: true)
            defer { device.close() }
            let effect = RumbleEffect(strong: 0x8000, weak: 0x4000, milliseconds: 500)
            let id = try device.uploadRumble(effect)
            try device.playEffect(id)
            // Written as a program writes them: one input_event each, as the node's
            // writers write (the kernel's input core drops the first three:
            // input_get_disposition passes EV_FF on only for a value of 0 or more; its
            // force-feedback core ignores a gain above 0xffff).
            for (code, value) in [
                (UInt16(bitPattern: id), Int32(-1)), (Evdev.FF_GAIN, -1), (Evdev.FF_GAIN, Int32.min), (Evdev.FF_GAIN, 0x10000),
            ] {
                var bytes = [UInt8](repeating: 0, count: InputEvent.size)
                bytes.withUnsafeMutableBytes { InputEvent(type: Evdev.EV_FF, code: code, value: value).store(to: $0.baseAddress!) }
                #expect(write(device.fileDescriptor, bytes, bytes.count) == bytes.count)
            }
            #expect(node.rumblesPlaying == [id: effect], "a negative count is no stop")
            try device.setForceFeedbackGain(0xffff)
            try device.stopEffect(id)
            #expect(node.rumblesPlaying.isEmpty)
            #expect(node.forceFeedbackRequests == [.upload(id: id, effect), .play(id: id, count: 1), .gain(0xffff), .stop(id: id)])
        }
    }

    @Test("a device without FF_RUMBLE refuses a rumble: EINVAL, and no effects to hold")
    func deviceWithoutRumble() throws {
        var description = try Self.dualShock4()
        description.codes[Evdev.EV_FF] = nil
        description.normalizeTypes()
        try withDeviceFolder { folder in
            let node = try folder.addDevice(description)
            let device = try EvdevDevice.open(path: node.path, writable: true)
            defer { device.close() }
            #expect(try device.forceFeedbackEffectCapacity() == 0)
            #expect(throws: EvdevError(request: .uploadEffect, errno: .invalidArgument)) {
                try device.uploadRumble(RumbleEffect(strong: 1, weak: 1, milliseconds: 10))
            }
            #expect(node.forceFeedbackRequests.isEmpty)
        }
    }
}
