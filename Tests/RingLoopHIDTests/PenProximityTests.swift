import RingLoop
import RingLoopEvdev
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Pens that never name their tool (eGalax 0eef:0001): proximity and contact are never
/// contradictory, as libinput keeps them.
@Suite("Pen proximity and contact")
struct PenProximityTests {
    /// Every pen event a recording decodes to, from memory, the removal included.
    static func penEvents(_ recording: Recording) -> [PenEvent] {
        var decoder = FrameDecoder(info: deviceInfo(of: recording))
        var out: [HIDEvent] = []
        var last = MonotonicInstant(nanoseconds: 0)
        for event in recording.events {
            decoder.feed(event, into: &out)
            last = event.instant
        }
        decoder.detach(at: last, into: &out)
        return out.compactMap { if case .pen(let pen) = $0.payload { pen } else { nil } }
    }

    static let eGalax = "evemu-devices/tablets/eGalax Inc. USB TouchController.events"

    @Test("eGalax 0eef:0001 is a tablet (udev: BTN_TOOL_PEN), and its touches bring the pen into proximity")
    func eGalax() throws {
        let real = try #require(RealRecording.all.first { $0.file == Self.eGalax })
        let recording = try #require(try real.load().first)
        let info = deviceInfo(of: recording)
        // udev's input_id: ABS_X/ABS_Y with BTN_TOOL_PEN is ID_INPUT_TABLET; libinput makes
        // it a tablet-tool device. The recording never sends BTN_TOOL_PEN.
        #expect(info.deviceClass == .tablet)
        #expect(info.has(type: Evdev.EV_KEY, code: Evdev.BTN_TOOL_PEN))
        #expect(!recording.events.contains { $0.type == Evdev.EV_KEY && $0.code == Evdev.BTN_TOOL_PEN })
        let pens = Self.penEvents(recording)
        let touching = pens.filter(\.touching)
        #expect(!touching.isEmpty)
        #expect(touching.allSatisfy { $0.inProximity && $0.tool == .pen })
        // Each touch ends with the pen out of proximity.
        let touches = recording.events.filter { $0.type == Evdev.EV_KEY && $0.code == Evdev.BTN_TOUCH && $0.value == 1 }.count
        var entries = 0
        var near = false
        for pen in pens {
            if pen.inProximity && !near { entries += 1 }
            near = pen.inProximity
        }
        #expect(entries == touches, "the pen came near \(entries) times for \(touches) touches")
        #expect(pens.last.map { !$0.inProximity } == true)
    }

    @Test("a named tool takes over from the implied one; a named tool that leaves ends the contact")
    func namedTools() {
        let info = HIDDeviceInfo.describing(
            name: "pen", codes: [Evdev.EV_KEY: [Evdev.BTN_TOUCH, Evdev.BTN_TOOL_PEN, Evdev.BTN_TOOL_RUBBER], Evdev.EV_ABS: [0, 1]],
            axes: [0: AbsoluteAxis(minimum: 0, maximum: 100, resolution: 0), 1: AbsoluteAxis(minimum: 0, maximum: 100, resolution: 0)],
            properties: [])
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        func frame(_ events: [(UInt16, UInt16, Int32)]) -> [String] {
            out.removeAll()
            for (type, code, value) in events + [(Evdev.EV_SYN, Evdev.SYN_REPORT, 0)] {
                decoder.feed(InputEvent(seconds: 1, microseconds: 0, type: type, code: code, value: value), into: &out)
            }
            return out.compactMap { event in
                guard case .pen(let pen) = event.payload else { return nil }
                return "\(pen.tool) \(pen.inProximity ? "near" : "out") \(pen.touching ? "touching" : "lifted")"
            }
        }
        #expect(frame([(Evdev.EV_KEY, Evdev.BTN_TOUCH, 1), (Evdev.EV_ABS, 0, 5)]) == ["pen near touching"])
        #expect(frame([(Evdev.EV_KEY, Evdev.BTN_TOOL_RUBBER, 1)]) == ["eraser near touching"])
        // The eraser was named: lifting the tip keeps it near.
        #expect(frame([(Evdev.EV_KEY, Evdev.BTN_TOUCH, 0)]) == ["eraser near lifted"])
        #expect(frame([(Evdev.EV_KEY, Evdev.BTN_TOUCH, 1)]) == ["eraser near touching"])
        // A buggy device lets the tool go with the tip still down: the contact ends too.
        #expect(frame([(Evdev.EV_KEY, Evdev.BTN_TOOL_RUBBER, 0)]) == ["pen out lifted"])
    }

    @Test("no pen event is touching and out of proximity, on any bundled or real recording")
    func neverContradictory() throws {
        var files: [(String, [Recording])] = []
        for name in (directoryEntries(devicesFolder) ?? []).map(\.name) where name.hasSuffix(".evemu") {
            files.append((name, try Recording.loadAll(contentsOf: devicesFolder + "/" + name)))
        }
        for real in RealRecording.all {
            files.append((real.file, try real.load()))
        }
        var pensSeen = 0
        for (file, recordings) in files {
            for recording in recordings where !recording.events.isEmpty {
                let pens = Self.penEvents(recording)
                pensSeen += pens.count
                let contradictory = pens.filter { $0.touching && !$0.inProximity }.count
                #expect(contradictory == 0, "\(file): \(contradictory) pen events touching out of proximity")
            }
        }
        #expect(pensSeen > 10_000, "pen events checked: \(pensSeen)")
    }
}
