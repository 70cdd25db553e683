import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The touchpad stage in a running system: real recordings through a stream device, what
/// the handlers see.
@Suite("The touchpad stage")
struct TouchpadStageTests {
    final class Seen {
        var buttons: [String] = []
        var frames = 0
        var scrolls = 0
        var gestures: [String] = []
        var scrollEvents: [ScrollEvent] = []
        var motions: [PointerMotionEvent] = []
    }

    /// Plays `file` (devices/real touchpads) into a system with `settings` and the
    /// recognizers, until `done` says so; the stream is closed after.
    func play(
        _ file: String, settings: TouchpadSettings, recognizers: [GestureRecognizer] = [], until done: @escaping (Seen) -> Bool
    ) throws -> (Seen, [String]) {
        var result = Seen()
        var order: [String] = []
        try onFreshThread {
            let loop = RingRunLoop.current
            let system = StageTests.system(loop: loop)
            let seen = Seen()
            system.addHandler { event in
                switch event.payload {
                case .button(let button):
                    seen.buttons.append("\(Evdev.name(ofCode: button.code, type: Evdev.EV_KEY) ?? "?") \(button.isDown ? "down" : "up")")
                case .digitizer: seen.frames += 1
                case .scroll(let scroll):
                    seen.scrolls += 1
                    seen.scrollEvents.append(scroll)
                case .pointerMotion(let motion): seen.motions.append(motion)
                default: break
                }
                return .pass
            }
            for recognizer in recognizers {
                recognizer.addAction { seen.gestures.append("\($0.gesture.rawValue) \($0.state)") }
                system.addGestureRecognizer(recognizer)
            }
            system.setTouchpadSettings(settings)
            order = system.stageOrder
            try system.start()
            let recording = try file.hasPrefix("/") ? Recording.load(contentsOf: file) : touchpadRecording(file)
            let stream = try GestureStream(recording, to: system, firstAt: .now)
            stream.send(recording.events)
            #expect(runUntil(loop) { done(seen) }, "\(seen.buttons) \(seen.gestures)")
            stream.close()
            system.stop()
            result = seen
        }
        return (result, order)
    }

    @Test("before the gamepad layout and the gestures; a two-finger tap is a right click; frames still reach handlers")
    func rightClick() throws {
        let (seen, order) = try play("CyPS2 Cypress Trackpad.two_finger_tap.events", settings: TouchpadSettings(tapping: true)) {
            $0.buttons.count == 2
        }
        #expect(order == ["touchpad", "handlers"])
        #expect(seen.buttons == ["BTN_RIGHT down", "BTN_RIGHT up"])
        #expect(seen.frames > 0)
    }

    @Test("a single tap's button is released by the stage's timer after the tap timeout")
    func tapReleasedByTimer() throws {
        let (seen, _) = try play("AlpsPS2 ALPS GlidePoint.single-tap.events", settings: TouchpadSettings(tapping: true)) {
            $0.buttons.count == 2
        }
        #expect(seen.buttons == ["BTN_LEFT down", "BTN_LEFT up"])
    }

    @Test("a recognizer that claims the touches of a tap takes its click: UIKit's rule")
    func recognizerClaimsTap() throws {
        let twoFingerTap = TapGestureRecognizer(taps: 1, fingers: 2)
        let (seen, order) = try play(
            "CyPS2 Cypress Trackpad.two_finger_tap.events", settings: TouchpadSettings(tapping: true), recognizers: [twoFingerTap]
        ) { !$0.gestures.isEmpty }
        #expect(order == ["touchpad", "gestures", "handlers"])
        #expect(seen.gestures == ["tap ended"])
        #expect(seen.buttons == [])
    }

    @Test("a recognizer that does not claim them leaves the click")
    func recognizerLeavesTap() throws {
        let twoFingerTap = TapGestureRecognizer(taps: 1, fingers: 2)
        twoFingerTap.cancelsTouchesInHandlers = false
        let (seen, _) = try play(
            "CyPS2 Cypress Trackpad.two_finger_tap.events", settings: TouchpadSettings(tapping: true), recognizers: [twoFingerTap]
        ) { $0.buttons.count == 2 && !$0.gestures.isEmpty }
        #expect(seen.gestures == ["tap ended"])
        #expect(seen.buttons == ["BTN_RIGHT down", "BTN_RIGHT up"])
    }

    @Test(
        "libinput's gestures beside tapping leave one finger's motion to the pointer: the one-finger pan is recognized and the pointer moves on every frame it moved without recognizers"
    )
    func oneFingerPanLeavesMotion() throws {
        let file = "SynPS2 Synaptics TouchPad.leftmove.events"
        let frames = try touchpadRecording(file).events.filter { $0.type == Evdev.EV_SYN && $0.code == Evdev.SYN_REPORT }.count
        let tapping = TouchpadSettings(tapping: true)
        let (alone, _) = try play(file, settings: tapping) { $0.frames >= frames }
        let (beside, _) = try play(file, settings: tapping, recognizers: StandardGestures.libinput()) { $0.frames >= frames }
        #expect(alone.motions.count > 100)
        #expect(beside.gestures.contains("pan began"), "\(beside.gestures.prefix(5))")
        #expect(beside.motions.count == alone.motions.count)
        let distance = { (motions: [PointerMotionEvent]) in motions.reduce(0.0) { $0 + abs($1.acceleratedDX) + abs($1.acceleratedDY) } }
        #expect(abs(distance(beside.motions) - distance(alone.motions)) < 1e-6)
    }

    @Test("scrolling begins, changes and ends (libinput's axis stop) in libinput's scroll units, positive up")
    func scrollPhases() throws {
        let (seen, _) = try play(devicesFolder + "/kernel/touchpad-elan-04f3-3045.evemu", settings: TouchpadSettings()) {
            $0.buttons.count == 2
        }
        let phases = seen.scrollEvents.map(\.phase)
        #expect(phases.first == .began)
        #expect(phases.dropFirst().dropLast().allSatisfy { $0 == .changed })
        #expect(phases.last == .ended)
        #expect(seen.scrollEvents.allSatisfy { $0.source == .finger && $0.horizontal == 0 })
        #expect(seen.scrollEvents.last?.vertical == 0)
        // 28.1 mm down at libinput's 10.52 a millimetre: 295 pixels, negative (down) in
        // ScrollEvent's sense (libinput 1.22 scrolled 285 here on the booted kernel).
        let total = seen.scrollEvents.reduce(0) { $0 + $1.vertical }
        #expect(abs(total + 870.0 / 31 * TouchpadInterpreter.scrollPerMillimetre) < 1, "\(total)")
    }

    @Test("one finger's motion: the pad's own units as raw deltas, libinput's normalized ones beside them")
    func motion() throws {
        let (seen, _) = try play("AlpsPS2 ALPS GlidePoint.single-tap.events", settings: TouchpadSettings()) { $0.motions.count >= 5 }
        // The ALPS pad: 2000 units over an assumed 69 mm, so 29 units a millimetre, 39.37
        // normalized units a millimetre.
        let raw = seen.motions.reduce(0) { $0 + Int($1.dy) }
        let normalized = seen.motions.reduce(0.0) { $0 + $1.acceleratedDY }
        #expect(raw != 0)
        #expect(abs(normalized / Double(raw) - (1000 / 25.4) / (1400.0 / 50)) < 0.1, "\(raw) \(normalized)")
    }

    @Test("disable-while-typing pairs the built-in (i8042) keyboard with the built-in pad: a tap just after a key is no click")
    func typingOnTheBuiltInKeyboard() throws {
        for (typing, expected) in [(true, [String]()), (false, ["BTN_RIGHT down", "BTN_RIGHT up"])] {
            try onFreshThread {
                let loop = RingRunLoop.current
                var configuration = HIDEventSystem.Configuration()
                configuration.touchpad = TouchpadSettings(tapping: true)
                let system = StageTests.system(configuration, loop: loop)
                var buttons: [String] = []
                var keys = 0
                var frames = 0
                system.addHandler { event in
                    switch event.payload {
                    case .button(let button):
                        buttons.append("\(Evdev.name(ofCode: button.code, type: Evdev.EV_KEY)!) \(button.isDown ? "down" : "up")")
                    case .key: keys += 1
                    case .digitizer: frames += 1
                    default: break
                    }
                    return .pass
                }
                try system.start()
                // devices/keyboard.evemu is an AT keyboard on the i8042 bus; the Cypress pad is on it too.
                var ends: [Int32] = [0, 0]
                try #require(pipe(&ends) == 0)
                defer { close(ends[1]) }
                _ = try system.attachStream(
                    fileDescriptor: FileDescriptor(rawValue: ends[0]), description: try ServerTestDevices.keyboard())
                // The tap comes 50 ms after the key in the frames' time (the key's own stamp,
                // not the clock once the loop has read the key, which a loaded machine delays).
                var tapAt = MonotonicInstant.now + .milliseconds(50)
                if typing {
                    let key = stamped(TestFrames.key(Evdev.KEY_A, down: true))
                    tapAt = MonotonicInstant(nanoseconds: UInt64(key[0].timeMicroseconds) * 1000) + .milliseconds(50)
                    writeFrames(key, to: ends[1])
                    #expect(runUntil(loop) { keys == 1 })
                }
                let recording = try touchpadRecording("CyPS2 Cypress Trackpad.two_finger_tap.events")
                let total = decodedEvents(of: recording).filter { $0.kind == .digitizer }.count
                let stream = try GestureStream(recording, to: system, firstAt: tapAt)
                stream.send(recording.events)
                #expect(runUntil(loop) { frames == total && buttons.count == expected.count })
                #expect(buttons == expected, "typing: \(typing)")
                stream.close()
                system.stop()
            }
        }
    }
}
