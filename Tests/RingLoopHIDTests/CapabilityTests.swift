import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A real recording of devices/real (with its description when it holds events only).
func realRecording(_ file: String, description: String? = nil) throws -> Recording {
    let folder = devicesFolder + "/real/evemu-devices/"
    if let description { return try Recording.load(description: folder + description, events: folder + file) }
    return try Recording.load(contentsOf: folder + file)
}

/// A real device description with `frames` of events sent to it (for devices whose
/// recordings have no events of the kind under test).
func realDescription(_ file: String, frames: [[(UInt16, UInt16, Int32)]]) throws -> Recording {
    let description = try #require(try realRecording(file).description)
    var events: [InputEvent] = []
    for (index, frame) in frames.enumerated() {
        for (type, code, value) in frame + [(0, 0, 0)] {
            events.append(InputEvent(seconds: 1, microseconds: Int32(index * 10_000), type: type, code: code, value: value))
        }
    }
    return Recording(description: description, events: events)
}

func payloads<T>(_ events: [HIDEvent], _ pick: (HIDEvent.Payload) -> T?) -> [T] { events.compactMap { pick($0.payload) } }

@Suite("Every capability reaches handlers", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct CapabilityTests {
    @Test("A touch mouse is a pointer whose touches arrive as digitizer frames (Apple Touch Mouse)")
    func touchMouse() throws {
        let recording = try realRecording("mice/Apple Touch Mouse.evemu")
        let description = try #require(recording.description)
        #expect(HIDDeviceInfo.classify(codes: description.codes, properties: description.properties) == .pointer)
        let events = try runChain(recording, shape: .clientLoop)
        let contacts = payloads(events) { if case .digitizer(let frame) = $0 { frame.contacts } else { nil } }.joined()
        #expect(contacts.contains { $0.phase == .began })
        #expect(contacts.filter { $0.phase == .began }.count == contacts.filter { $0.phase == .ended || $0.phase == .cancelled }.count)
        #expect(contacts.contains { $0.minor != 0 }, "the touch's minor axis is kept")
    }

    @Test("A tablet pad's strip arrives as axis events, its buttons as buttons (Wacom Intuos3 pad)")
    func padStrip() throws {
        let recording = try realRecording("tablets/Wacom Intuos3 4x6 Pad.strip.events")
        let description = try #require(recording.description)
        #expect(HIDDeviceInfo.classify(codes: description.codes, properties: description.properties) == .tabletPad)
        let events = try runChain(recording, shape: .dedicatedThread)
        let strip = payloads(events) { if case .axis(let axis) = $0, axis.code == 0x03 { axis } else { nil } }
        let recorded = recording.events.filter { $0.type == 3 && $0.code == 0x03 }.map(\.value)
        #expect(!strip.isEmpty)
        #expect(
            strip.map(\.value) == recorded.enumerated().filter { $0.offset == 0 || recorded[$0.offset - 1] != $0.element }.map(\.element))
        #expect(strip.allSatisfy { $0.source == .absolute && $0.normalized != nil })
    }

    @Test("A pad's buttons and ABS_MISC reach handlers (Wacom Cintiq 13HD touch pad)")
    func padButtons() throws {
        let recording = try realRecording("tablets/Wacom Cintiq 13HD touch Pad.events")
        let events = try runChain(recording, shape: .clientLoop)
        let buttons = payloads(events) { if case .button(let button) = $0 { button } else { nil } }
        #expect(buttons.filter(\.isDown).count == recording.events.filter { $0.type == 1 && $0.value == 1 && $0.code < 0x140 }.count)
        #expect(payloads(events) { if case .axis(let axis) = $0, axis.code == 0x28 { axis } else { nil } }.count > 0)
    }

    @Test("A lens cursor is a pen tool, its buttons are buttons, ABS_MISC an axis (Wacom Intuos4 8x13)")
    func lensCursor() throws {
        let recording = try realRecording(
            "tablets/Wacom Intuos4 8x13.lens-cursor-click.events", description: "tablets/Wacom Intuos4 8x13.desc")
        // A queue that holds the whole recording (13,821 records): at ten times its speed a
        // loop slowed by a sanitizer and the parallel suite fell 1,024 events behind once
        // (AddressSanitizer, 2026-11-27), and what is checked here is the decoding, not
        // the queue's bound (HIDEventQueue's and the chain's own tests check that).
        let events = try runChain(recording, shape: .dedicatedThread, speed: .scaled(10), queueCapacity: 16_384)
        #expect(!events.contains { $0.kind == .eventsDropped })

        let pens = payloads(events) { if case .pen(let pen) = $0 { pen } else { nil } }
        #expect(pens.contains { $0.tool == .lens && $0.inProximity })
        #expect(pens.last?.inProximity == false)
        let buttons = payloads(events) { if case .button(let button) = $0 { button } else { nil } }
        let pressed = RecordedExpectations(recording).presses.filter { (0x110...0x117).contains($0.key) }
        #expect(!pressed.isEmpty)
        #expect(Dictionary(grouping: buttons.filter(\.isDown), by: \.code).mapValues(\.count) == pressed)
    }

    @Test("A pen-and-touch screen yields pen events and touch frames from one node (Wacom Serial Penabled 2FG)")
    func penAndTouch() throws {
        let recording = try realDescription(
            "tablets/Wacom Serial Penabled 2FG Touchscreen.desc",
            frames: [
                [(1, 0x140, 1), (3, 0x00, 1000), (3, 0x01, 800), (3, 0x18, 10)],  // pen in proximity
                [(1, 0x14a, 1), (3, 0x18, 200)],  // tip down
                [(1, 0x14a, 0), (3, 0x18, 0)],
                [(1, 0x140, 0)],  // pen away
                [(3, 0x2f, 0), (3, 0x39, 7), (3, 0x35, 100), (3, 0x36, 100), (1, 0x145, 1)],  // a finger
                [(3, 0x35, 120)],
                [(3, 0x39, -1), (1, 0x145, 0)],
            ])
        let description = try #require(recording.description)
        #expect(HIDDeviceInfo.classify(codes: description.codes, properties: description.properties) == .tablet)
        let events = try runChain(recording, shape: .clientLoop)
        let pens = payloads(events) { if case .pen(let pen) = $0 { pen } else { nil } }
        #expect(pens.contains { $0.touching && $0.pressure > 0 })
        #expect(pens.last?.inProximity == false)
        let contacts = payloads(events) { if case .digitizer(let frame) = $0 { frame.contacts } else { nil } }.joined()
        #expect(contacts.map(\.phase) == [.began, .moved, .ended])
        #expect(contacts.allSatisfy { $0.trackingID == 7 })
    }

    @Test("A keyboard and pointer on one node: keys, motion and scroll, and both roles (Ultrathin Touch Mouse)")
    func comboNode() throws {
        let recording = try realRecording("mice/Ultrathin Touch Mouse.events")
        let description = try #require(recording.description)
        let roles = HIDDeviceInfo.roles(codes: description.codes, properties: description.properties)
        #expect(roles.isSuperset(of: [.keyboard, .pointer]))
        let events = try runChain(recording, shape: .dedicatedThread)
        let motion = payloads(events) { if case .pointerMotion(let motion) = $0 { (motion.dx, motion.dy) } else { nil } }
        #expect(
            motion.reduce(0) { $0 + Int($1.0) } == recording.events.filter { $0.type == 2 && $0.code == 0 }.reduce(0) { $0 + Int($1.value) }
        )
        #expect(payloads(events) { if case .scroll(let scroll) = $0 { scroll } else { nil } }.count > 0)
    }

    @Test("A dial and a HID device's extra axes: dial steps, axis events, no touches from fake multitouch (Surface Mouse)")
    func dialAndFakeMultitouch() throws {
        let recording = try realDescription(
            "mice/Surface Mouse.desc",
            frames: [[(2, 0x07, 3)], [(2, 0x07, -1)], [(3, 0x28, 5)], [(3, 0x2f, 1), (3, 0x35, 9)], [(2, 0x00, 4)]])
        let events = try runChain(recording, shape: .clientLoop)
        #expect(
            payloads(events) { (payload: HIDEvent.Payload) -> Int32? in if case .dial(let steps) = payload { steps } else { nil } } == [
                3, -1,
            ])
        let axes = payloads(events) { if case .axis(let axis) = $0 { axis.code } else { nil } }
        // The kernel drops ABS_MT_SLOT on a device without real multitouch; the codes
        // past ABS_MISC are ordinary axes of this device.
        #expect(axes == [0x28, 0x35])
        #expect(!events.contains { $0.kind == .digitizer })
    }
}
