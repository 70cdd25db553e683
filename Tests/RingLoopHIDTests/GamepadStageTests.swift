import Glibc
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopHID

/// The gamepad layout stage in a running chain: the DualShock 4's hardware recording
/// replayed into the system, the standard events right after the raw ones they come from,
/// the same as ``GamepadLayout`` makes from the recording itself, and the sticks and
/// triggers still off centre released when the device goes.
@Suite("The gamepad layout stage", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct GamepadStageTests {
    @Test func standardEventsFollowTheRawOnes() throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu")
        let device = HIDDeviceInfo(description: try #require(recording.description))
        let database = SDLMappingDatabase.bundled(hints: [:])
        let mapping = try #require(database.match(for: device)).mapping
        // What the layout makes of the decoded raw events, in order.
        var layout = GamepadLayout(device: device, mapping: mapping)
        var expected: [GamepadEvent] = []
        for event in decodedEvents(of: recording) {
            switch event.payload {
            case .gamepadButton(let button): layout.process(button: button.code, isDown: button.isDown) { expected.append($0) }
            case .gamepadAxis(let axis): layout.process(axis: axis.code, value: axis.value) { expected.append($0) }
            default: break
            }
        }
        #expect(expected.count > 100)
        let replayed = expected.count
        // The device's removal when the system stops releases what is still held.
        layout.reset { expected.append($0) }
        _ = MountLeakCheck.armed
        let session = try ReplaySession(
            files: [[recording]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-gamepad-stage-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 65536, speed: .scaled(20), settleTime: .milliseconds(20)))
        defer { session.close() }
        let (order, seen, followRaw) = try onFreshThread { () throws -> ([String], [GamepadEvent], Bool) in
            let loop = RingRunLoop.current
            let finished = LoopBound(false, loop: loop)
            let system = HIDEventSystem(
                // A queue that holds the whole recording: a loop slowed down (a sanitizer, a
                // loaded machine) reads it in bigger batches, which must not overflow.
                configuration: .init(
                    replaying: session, shape: .clientLoop, queueCapacity: 1 << 16, finished: { finished.value = true }),
                loop: loop)
            system.addGamepadLayout(mappings: database)
            var seen: [GamepadEvent] = []
            var previous: HIDEvent.Kind?
            var followRaw = true
            system.addHandler { event in
                if case .gamepad(let gamepad) = event.payload {
                    seen.append(gamepad)
                    if ![.gamepadButton, .gamepadAxis, .gamepad].contains(previous) {
                        followRaw = false
                    }
                }
                previous = event.kind
                return .pass
            }
            try system.start()
            #expect(runUntil(loop, timeout: .seconds(60)) { finished.value })
            #expect(runUntil(loop) { seen.count >= replayed })
            let order = system.stageOrder
            system.stop()
            return (order, seen, followRaw)
        }
        #expect(order.first == "gamepad layout")
        #expect(followRaw, "each standard event comes right after the raw event it was made from")
        #expect(seen.count == expected.count)
        #expect(Array(seen.prefix(expected.count)) == expected)
    }

    /// Dead zones chosen per device: the DualShock 4's sticks, held in the hand near the
    /// centre throughout the recording, read 0 inside a dead zone of half their reach.
    @Test func deadZonesPerDevice() throws {
        let recording = try Recording.load(contentsOf: devicesFolder + "/kernel/dualshock4-usb-gamepad.evemu")
        let guid = HIDDeviceInfo(description: try #require(recording.description)).sdlGUID
        _ = MountLeakCheck.armed
        let session = try ReplaySession(
            files: [[recording]],
            configuration: .init(
                backend: .fuse, folderPath: "/tmp/ringloop-gamepad-zones-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                bufferSize: 65536, speed: .scaled(20), settleTime: .milliseconds(20)))
        defer { session.close() }
        let (asked, sticks, buttons) = try onFreshThread { () throws -> ([SDLJoystickGUID], [Double], Int) in
            let loop = RingRunLoop.current
            let finished = LoopBound(false, loop: loop)
            let system = HIDEventSystem(
                // A queue that holds the whole recording: a loop slowed down (a sanitizer, a
                // loaded machine) reads it in bigger batches, which must not overflow.
                configuration: .init(
                    replaying: session, shape: .clientLoop, queueCapacity: 1 << 16, finished: { finished.value = true }),
                loop: loop)
            var asked: [SDLJoystickGUID] = []
            system.addGamepadLayout(mappings: SDLMappingDatabase.bundled(hints: [:])) { device in
                asked.append(device.sdlGUID)
                return device.sdlGUID == guid ? GamepadDeadZones(stick: 0.5, trigger: 0) : .fromDevice
            }
            var sticks: [Double] = []
            var buttons = 0
            system.addHandler(kinds: [.gamepad]) { event in
                if case .gamepad(let gamepad) = event.payload {
                    if [.leftx, .lefty].contains(gamepad.control) { sticks.append(gamepad.value) }
                    if !gamepad.control.isAxis { buttons += 1 }
                }
                return .pass
            }
            try system.start()
            #expect(runUntil(loop, timeout: .seconds(60)) { finished.value })
            #expect(runUntil(loop) { buttons >= 30 })
            system.stop()
            return (asked, sticks, buttons)
        }
        #expect(asked == [guid], "asked once, for the one device")
        #expect(buttons == 30, "15 presses and releases")
        #expect(sticks.allSatisfy { $0 == 0 }, "\(sticks.prefix(5))")
    }
}
