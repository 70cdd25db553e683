import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A chain that attaches to devices already in use: it reads their state first, as
/// libevdev does, so what is held, on or touching is right from its first events.
@Suite("State at attach", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct StateAtAttachTests {
    static let keyboard = try! loadRecording("keyboard")
    static let lid = try! loadRecording("lid-switch")
    static let touchscreen = try! loadRecording("touchscreen-multitouch")

    @Test(
        "Shift held, the lid closed and a finger down before the chain starts: Shift then KEY_H with Shift, the lid on, the touch began",
        arguments: HIDEventSystem.Shape.allCases)
    func heldBeforeAttaching(shape: HIDEventSystem.Shape) throws {
        try onFreshThread {
            let path = "/tmp/ringloop-attach-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            _ = MountLeakCheck.armed
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            let keys = try folder.addDevice(Self.keyboard.description!)
            let lid = try folder.addDevice(Self.lid.description!)
            let screen = try folder.addDevice(Self.touchscreen.description!)
            try keys.send([(1, Evdev.KEY_LEFTSHIFT, 1), (0, 0, 0)])
            try lid.send([(5, Evdev.SW_LID, 1), (0, 0, 0)])
            // A finger in slot 1, which stays the device's current slot.
            try screen.send([
                (3, Evdev.ABS_MT_SLOT, 1), (3, Evdev.ABS_MT_TRACKING_ID, 7), (3, Evdev.ABS_MT_POSITION_X, 100),
                (3, Evdev.ABS_MT_POSITION_Y, 200), (1, Evdev.BTN_TOUCH, 1), (3, Evdev.ABS_X, 100), (3, Evdev.ABS_Y, 200), (0, 0, 0),
            ])
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path, shape: shape), loop: loop)
            var events: [HIDEvent] = []
            system.addHandler { event in
                events.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            #expect(runUntil(loop) { events.filter { $0.kind == .deviceAdded }.count == 3 })
            try keys.send([(1, Evdev.KEY_H, 1), (0, 0, 0), (1, Evdev.KEY_H, 0), (0, 0, 0), (1, Evdev.KEY_LEFTSHIFT, 0), (0, 0, 0)])
            // Without a slot number: the input core leaves it out, the slot being current.
            try screen.send([(3, Evdev.ABS_MT_POSITION_X, 150), (3, Evdev.ABS_X, 150), (0, 0, 0)])
            try screen.send([(3, Evdev.ABS_MT_TRACKING_ID, -1), (1, Evdev.BTN_TOUCH, 0), (0, 0, 0)])
            #expect(runUntil(loop) { events.filter { $0.kind == .key }.count == 4 && events.filter { $0.kind == .digitizer }.count == 3 })
            let ids = Dictionary(uniqueKeysWithValues: system.devices.map { ($0.path, $0.id) })
            let shift = KeyModifiers.leftShift.rawValue
            let keyEvents = events.filter { $0.device == ids[keys.path] }.compactMap { event -> String? in
                guard case .key(let key) = event.payload else { return nil }
                return "\(key.code) \(key.state) \(key.modifiers.rawValue)"
            }
            #expect(keyEvents == ["42 down \(shift)", "35 down \(shift)", "35 up \(shift)", "42 up 0"])
            let lidEvents = events.filter { $0.device == ids[lid.path] }.map(summary)
            #expect(lidEvents.filter { $0.hasPrefix("switchChanged") } == ["switchChanged"])
            #expect(
                events.contains {
                    if case .switchChanged(let change) = $0.payload { change.code == Evdev.SW_LID && change.isOn } else { false }
                })
            let touches = events.filter { $0.device == ids[screen.path] && $0.kind == .digitizer }.map(summary)
            #expect(touches == ["touch 7:began:100,200", "touch 7:moved:150,200", "touch 7:ended:150,200"])
            // Removal releases what was held before attaching like anything else.
            #expect(HandlerView(events, device: ids[lid.path]).switches == [Evdev.SW_LID])
        }
    }

    @Test("The decoder's attach: silent absolute values and slot, reported keys, switches and touches")
    func decoderAttach() {
        let description = Self.touchscreen.description!
        let info = HIDDeviceInfo(description: description)
        var decoder = FrameDecoder(info: info)
        var snapshot = DeviceState()
        snapshot.keys = KeyCodeSet([Evdev.BTN_TOUCH])
        snapshot.axes[Evdev.ABS_X] = 100
        snapshot.axes[Evdev.ABS_Y] = 200
        snapshot.slots = Array(repeating: DeviceState.Slot(), count: info.slotCount)
        snapshot.slots[1] = DeviceState.Slot(trackingID: 7, x: 100, y: 200)
        snapshot.currentSlot = 1
        var out: [HIDEvent] = []
        decoder.attach(from: snapshot, at: .now, into: &out)
        #expect(out.map(summary) == ["touch 7:began:100,200"])
        out.removeAll()
        // A value for the current slot, with no slot number, moves the contact there.
        decoder.feed(InputEvent(type: Evdev.EV_ABS, code: Evdev.ABS_MT_POSITION_Y, value: 260), into: &out)
        decoder.feed(InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0), into: &out)
        #expect(out.map(summary) == ["touch 7:moved:100,260"])
    }
}
