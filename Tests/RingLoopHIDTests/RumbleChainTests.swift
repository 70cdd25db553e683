import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Rumble as an app asks for it (`HIDEventSystem.rumble`, SDL's two motors for a time), on
/// the FUSE node of a DualShock 4 as hid-playstation describes it: the node records what it
/// was asked, in order. In a system that reads its own devices, and through an event
/// server, whose policy plays only the focused client's and stops it when the focus goes.
@Suite("Rumble through the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct RumbleChainTests {
    static func dualShock4() throws -> InputDeviceDescription {
        try #require(try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu").description)
    }

    @Test("a rumble plays on the node and is erased at its end; a second replaces it; a pad without FF_RUMBLE is refused")
    func local() throws {
        try withDeviceFolder { folder in
            let pad = try folder.addDevice(try Self.dualShock4())
            var plain = try Self.dualShock4()
            plain.codes[Evdev.EV_FF] = nil
            plain.name = "Pad Without Motors"
            _ = try folder.addDevice(plain)
            try onFreshThread {
                let loop = RingRunLoop.current
                let system = HIDEventSystem(configuration: .init(deviceDirectory: folder.path), loop: loop)
                try system.start()
                defer { system.stop() }
                #expect(runUntil(loop) { system.devices.count == 2 })
                let motors = try #require(system.devices.first { $0.path == pad.path })
                let other = try #require(system.devices.first { $0.path != pad.path })
                try system.rumble(motors.id, strong: 0xc000, weak: 0x4000, duration: .milliseconds(40))
                #expect(pad.rumblesPlaying.values.map(\.strong) == [0xc000])
                // Replaced while it plays: the same effect id, new magnitudes, no second effect.
                try system.rumble(motors.id, strong: 0x1000, weak: 0x2000, duration: .milliseconds(40))
                #expect(pad.rumblesPlaying.values.map(\.weak) == [0x2000])
                #expect(runUntil(loop) { pad.rumblesPlaying.isEmpty }, "the rumble ends after its duration")
                let effect = RumbleEffect(strong: 0xc000, weak: 0x4000, milliseconds: 40)
                let replaced = RumbleEffect(strong: 0x1000, weak: 0x2000, milliseconds: 40)
                #expect(
                    pad.forceFeedbackRequests == [
                        .upload(id: 0, effect), .play(id: 0, count: 1), .upload(id: 0, replaced), .play(id: 0, count: 1),
                        .stop(id: 0), .erase(id: 0),
                    ], "\(pad.forceFeedbackRequests)")
                let refusal = #expect(throws: HIDError.self) {
                    try system.rumble(other.id, strong: 1, weak: 1, duration: .milliseconds(10))
                }
                #expect("\(refusal!)".contains("Pad Without Motors") && "\(refusal!)".contains("FF_RUMBLE"), "\(refusal!)")
                let tooLong = #expect(throws: HIDError.self) {
                    try system.rumble(motors.id, strong: 1, weak: 1, duration: .seconds(70))
                }
                #expect("\(tooLong!)".contains("0 (until stopped) to 65535 ms"), "\(tooLong!)")
                // Until stopped, then stopped.
                try system.rumble(motors.id, strong: 5, weak: 6, duration: .zero)
                #expect(pad.rumblesPlaying.count == 1)
                try system.stopRumble(motors.id)
                #expect(pad.rumblesPlaying.isEmpty)
            }
        }
    }

    @Test("a client's rumble plays on the server's pad while it has the focus, is refused without it, and stops when the focus goes")
    func throughTheServer() throws {
        try withDeviceFolder { folder in
            let pad = try folder.addDevice(try Self.dualShock4())
            let name = "test.server.rumble.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
            let path = folder.path
            let server = try ServerOnThread(name: name, devices: []) { $0.devices = .init(deviceDirectory: path) }
            defer { server.stop() }
            try onFreshThread {
                let loop = RingRunLoop.current
                let first = try RecordingClient(server: name, name: "first")
                let second = try RecordingClient(server: name, name: "second")
                #expect(runUntil(loop) { first.count(.deviceAdded) == 1 && second.count(.deviceAdded) == 1 })
                #expect(first.system.isFocused && !second.system.isFocused)
                let id = try #require(first.system.devices.first?.id)
                // Not focused: the server refuses (in its log); nothing reaches the pad.
                try second.system.rumble(id, strong: 0x7000, weak: 0x7000, duration: .seconds(10))
                try first.system.rumble(id, strong: 0xc000, weak: 0x4000, duration: .seconds(10))
                #expect(runUntil(loop) { !pad.rumblesPlaying.isEmpty })
                #expect(pad.rumblesPlaying.values.map(\.strong) == [0xc000], "only the focused client's")
                let ids = try server.sync { server in server.clients.map(\.id) }
                try server.sync { server in server.focus(ids[1]) }
                #expect(runUntil(loop) { pad.rumblesPlaying.isEmpty }, "the focus went: its rumble stopped")
                first.system.stop()
                second.system.stop()
            }
        }
    }
}
