import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

@Suite("Input chain: the other recordings", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MoreChainTests {
    @Test("Protocol-A touchpad: ids assigned by matching, one then two fingers, all lifted")
    func protocolA() throws {
        let events = try runChain(try loadRecording("touchpad-protocol-a"), shape: .clientLoop)
        let ledger = touchLedger(events)
        #expect(ledger.errors.isEmpty, "\(ledger.errors.prefix(3))")
        #expect(ledger.began == 2, "the first finger keeps its id when the second arrives")
        #expect(ledger.ended == 2 && ledger.live.isEmpty)
        #expect(ledger.maxFingers == 2)
    }

    @Test("Protocol A: a new contact reported before a matched one takes a free slot, not the matched one's")
    func protocolASlotsStayDistinct() {
        let axis = AbsoluteAxis(minimum: 0, maximum: 1000, resolution: 0)
        let codes: [UInt16: Set<UInt16>] = [1: [0x14a], 3: [0x00, 0x01, 0x35, 0x36]]
        let info = HIDDeviceInfo(
            description: InputDeviceDescription(
                name: "Protocol A screen", busType: 0, properties: [1], codes: codes,
                absoluteAxes: [0x00: axis, 0x01: axis, 0x35: axis, 0x36: axis]))
        #expect(info.isProtocolA && info.slotCount == 0)
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        func contact(_ x: Int32, _ y: Int32) -> [(UInt16, UInt16, Int32)] { [(3, 0x35, x), (3, 0x36, y), (0, 2, 0)] }
        let frames: [[(UInt16, UInt16, Int32)]] = [
            contact(100, 100) + [(1, 0x14a, 1), (0, 0, 0)],
            // The new finger comes first in the report; the first finger moved by one.
            contact(900, 900) + contact(101, 101) + [(0, 0, 0)],
            contact(902, 902) + contact(102, 102) + [(0, 0, 0)],
        ]
        for (index, frame) in frames.enumerated() {
            for (type, code, value) in frame {
                decoder.feed(InputEvent(seconds: 1, microseconds: Int32(index) * 1000, type: type, code: code, value: value), into: &out)
            }
        }
        let digitizer = out.compactMap { event -> DigitizerFrame? in
            if case .digitizer(let frame) = event.payload { return frame }
            return nil
        }
        #expect(digitizer.count == 3)
        guard digitizer.count == 3 else { return }
        let first = digitizer[0].contacts
        let second = digitizer[1].contacts
        #expect(first.count == 1 && first[0].phase == .began && first[0].slot == 0)
        #expect(second.count == 2)
        let kept = second.first { $0.trackingID == first[0].trackingID }
        let added = second.first { $0.trackingID != first[0].trackingID }
        #expect(kept?.phase == .moved && kept?.slot == 0 && kept?.x == 101)
        #expect(added?.phase == .began && added?.slot == 1 && added?.x == 900)
        // Both keep their ids and slots in the next frame.
        let third = digitizer[2].contacts
        #expect(Set(third.map(\.trackingID)) == Set(second.map(\.trackingID)))
        #expect(third.allSatisfy { $0.phase == .moved })
        #expect(third.first { $0.trackingID == added?.trackingID }?.slot == 1)

        // Coordinates at opposite ends of Int32 (hostile input) are matched without a trap.
        out.removeAll()
        let extremes = contact(Int32.min, Int32.min) + contact(Int32.max, Int32.max) + [(0, 0, 0)]
        for (type, code, value) in extremes {
            decoder.feed(InputEvent(seconds: 2, microseconds: 0, type: type, code: code, value: value), into: &out)
        }
        #expect(out.contains { if case .digitizer = $0.payload { true } else { false } })
    }

    @Test("Semi-MT touchpad: bounding-box frames with BTN_TOOL finger counts")
    func semiMultitouch() throws {
        let events = try runChain(try loadRecording("touchpad-semi-mt"), shape: .clientLoop)
        let frames = events.compactMap { event -> DigitizerFrame? in
            if case .digitizer(let frame) = event.payload { return frame }
            return nil
        }
        #expect(!frames.isEmpty && frames.allSatisfy(\.isBoundingBox))
        #expect(frames.map(\.fingerCount).max() == 3, "three fingers from BTN_TOOL_TRIPLETAP, two slots")
        #expect(touchLedger(events).live.isEmpty)
    }

    @Test("Touchpad and gamepad: finger counts, clicks, buttons and axes")
    func touchpadAndGamepad() throws {
        let touchpad = try runChain(try loadRecording("touchpad"), shape: .clientLoop)
        let ledger = touchLedger(touchpad)
        #expect(ledger.errors.isEmpty && ledger.live.isEmpty)
        #expect(ledger.maxFingers == 3, "the three-finger tap (BTN_TOOL_TRIPLETAP)")
        let clicks = touchpad.filter {
            if case .button(let b) = $0.payload { return b.isDown }; return false
        }.count
        #expect(clicks == 1)
        let gamepad = try runChain(try loadRecording("gamepad"), shape: .clientLoop)
        let presses = gamepad.compactMap { event -> UInt16? in
            if case .gamepadButton(let button) = event.payload, button.isDown { return button.code }
            return nil
        }
        #expect(presses == [0x130, 0x13b], "A, then Start")
        let trigger = gamepad.compactMap { event -> Double? in
            if case .gamepadAxis(let axis) = event.payload, axis.code == 0x05 { return axis.normalized }
            return nil
        }
        #expect(trigger.max() == 1.0 && trigger.last == 0)
        let stick = gamepad.compactMap { event -> Double? in
            if case .gamepadAxis(let axis) = event.payload, axis.code == 0x00 { return axis.normalized }
            return nil
        }
        #expect((stick.min() ?? 0) < -0.9, "the left stick goes fully left")
    }

    @Test("Lid switch, power button and rotary encoder")
    func switchesButtonsDials() throws {
        let lid = try runChain(try loadRecording("lid-switch"), shape: .clientLoop).compactMap { event -> Bool? in
            if case .switchChanged(let change) = event.payload, change.code == 0 { return change.isOn }
            return nil
        }
        #expect(lid == [true, false])
        let dial = try runChain(try loadRecording("rotary-encoder"), shape: .clientLoop).compactMap { event -> Int32? in
            if case .dial(let steps) = event.payload { return steps }
            return nil
        }
        #expect(dial.reduce(0, +) == 2 && dial.count == 8)
        let pen = try runChain(try loadRecording("pen-tablet"), shape: .clientLoop).compactMap { event -> PenEvent? in
            if case .pen(let pen) = event.payload { return pen }
            return nil
        }
        #expect(pen.first?.inProximity == true && pen.last?.inProximity == false)
        #expect(pen.contains { $0.touching && $0.pressure > 0.5 && $0.barrelButtons == 1 })
        #expect(pen.contains { abs($0.tiltX) > 10 }, "tilt reported in degrees (resolution 57 units/radian)")
    }

    @Test("Coalescing merges a pass's motion and touch moves, keeps totals and order")
    func coalescing() throws {
        let mouse = try loadRecording("mouse-hires-wheel")
        let plain = try runChain(mouse, shape: .clientLoop)
        // Written to the device before the loop reads: a pass holds many moves, on any machine.
        let merged = try runChain(mouse, shape: .clientLoop, coalesce: true, playsFirst: true)
        func motion(_ events: [HIDEvent]) -> (count: Int, dx: Int32, dy: Int32) {
            var count = 0
            var dx: Int32 = 0
            var dy: Int32 = 0
            for event in events {
                if case .pointerMotion(let motion) = event.payload {
                    count += 1
                    dx += motion.dx
                    dy += motion.dy
                }
            }
            return (count, dx, dy)
        }
        let a = motion(plain)
        let b = motion(merged)
        #expect(b.dx == a.dx && b.dy == a.dy, "coalescing keeps the totals")
        #expect(b.count < a.count, "the moves of a pass merge")
        // Clicks come after every motion before them.
        let kinds = merged.map(\.kind)
        #expect(kinds.firstIndex(of: .button)! > kinds.firstIndex(of: .pointerMotion)!)
        let touches = try runChain(try loadRecording("touchscreen-multitouch"), shape: .clientLoop, coalesce: true, playsFirst: true)
        let ledger = touchLedger(touches)
        #expect(ledger.errors.isEmpty && ledger.live.isEmpty && ledger.began == ledger.ended)
    }
}
