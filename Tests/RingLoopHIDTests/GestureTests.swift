import RingLoop
import RingLoopEvdev
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// One bundled gesture recording and what each set of recognizers must make of it:
/// exactly these gestures, in this order, and nothing else.
struct GestureCase: CustomTestStringConvertible, Sendable {
    var recording: String
    var set: GestureSet
    var expected: [String]
    var testDescription: String { "\(recording) [\(set)]" }
}

@Suite("Gesture recognizers (from memory)")
struct GestureRecognizerTests {
    /// The UIKit set on both surfaces, libinput's on the touchpad.
    static let cases: [GestureCase] = {
        let uikit: [(String, [String])] = [
            ("tap-1-finger", ["tap 1"]), ("tap-2-fingers", ["tap 2"]), ("tap-3-fingers", ["tap 3"]),
            ("double-tap", ["doubleTap 1"]), ("long-press", ["longPress 1"]), ("pan-1-finger", ["pan 1"]),
            ("pan-2-fingers", ["pan 2"]), ("swipe-right", ["swipe right 1"]), ("swipe-left", ["swipe left 1"]),
            ("swipe-up", ["swipe up 1"]), ("swipe-down", ["swipe down 1"]), ("pinch-in", ["pinch 2"]),
            ("pinch-out", ["pinch 2"]), ("rotation", ["rotation 2"]), ("pinch-rotate", ["pinch 2", "rotation 2"]),
            ("edge-swipe", ["edgePan 1"]), ("fast-flick", ["swipe right 1"]), ("slow-drag", ["pan 1"]),
        ]
        var cases: [GestureCase] = []
        for surface in ["touchscreen", "touchpad"] {
            for (name, expected) in uikit {
                cases.append(GestureCase(recording: "\(surface)-\(name)", set: .uikit, expected: expected))
            }
        }
        // iPadOS's multitasking gestures, in the UIKit set: pans of three to five fingers
        // (a slow swipe of fingers is a pan), swipes, the five-finger pinch.
        cases.append(GestureCase(recording: "touchpad-swipe-3-fingers-left", set: .uikit, expected: ["pan 3"]))
        cases.append(GestureCase(recording: "touchpad-swipe-4-fingers-up", set: .uikit, expected: ["pan 4"]))
        cases.append(GestureCase(recording: "touchscreen-pan-3-fingers", set: .uikit, expected: ["pan 3"]))
        cases.append(GestureCase(recording: "touchscreen-swipe-4-fingers-left", set: .uikit, expected: ["swipe left 4"]))
        cases.append(GestureCase(recording: "touchscreen-pinch-5-fingers", set: .uikit, expected: ["pinch 5"]))
        let libinput: [(String, [String])] = [
            ("tap-1-finger", ["tap 1"]), ("tap-2-fingers", ["tap 2"]), ("tap-3-fingers", ["tap 3"]),
            ("double-tap", ["doubleTap 1"]), ("long-press", ["hold 1"]), ("pan-1-finger", ["pan 1"]),
            ("pan-2-fingers", ["pan 2"]), ("swipe-right", ["pan 1"]), ("swipe-left", ["pan 1"]), ("swipe-up", ["pan 1"]),
            ("swipe-down", ["pan 1"]), ("pinch-in", ["touchpadPinch 2"]), ("pinch-out", ["touchpadPinch 2"]),
            ("rotation", ["touchpadPinch 2"]), ("pinch-rotate", ["touchpadPinch 2"]), ("edge-swipe", ["pan 1"]),
            ("fast-flick", ["pan 1"]), ("slow-drag", ["pan 1"]), ("swipe-3-fingers-left", ["touchpadSwipe 3"]),
            ("swipe-4-fingers-up", ["touchpadSwipe 4"]),
        ]
        for (name, expected) in libinput {
            cases.append(GestureCase(recording: "touchpad-\(name)", set: .libinput, expected: expected))
        }
        return cases
    }()

    @Test("each recording is recognized as what it is and as nothing else", arguments: cases)
    func recognizedAsItself(_ test: GestureCase) throws {
        let run = GestureRun(try loadGestureRecording(test.recording), recognizers: test.set.make())
        #expect(run.recognized == test.expected)
    }

    @Test("every bundled gesture recording has a case")
    func everyRecordingCovered() {
        let files = Set(directoryEntries(gesturesFolder)!.map(\.name).filter { $0.hasSuffix(".evemu") })
        let covered = Set(Self.cases.map { $0.recording + ".evemu" })
        #expect(files == covered)
        #expect(files.count >= 41)
    }

    /// The values reported at the end of each gesture, in the surface's millimetres.
    @Test("values: translation, velocity, scale, rotation, direction, taps", arguments: ["touchscreen", "touchpad"])
    func values(surface: String) throws {
        func final(_ name: String, _ gesture: GestureKind) throws -> GestureEvent? {
            GestureRun(try loadGestureRecording("\(surface)-\(name)"), recognizers: GestureSet.uikit.make()).events
                .last { $0.gesture == gesture && $0.state == .ended }
        }
        let pan = try #require(try final("pan-1-finger", .pan))
        #expect(pan.values.unit == .millimetres)
        #expect(abs(pan.values.translation.x - 30) < 1.5 && abs(pan.values.translation.y - 4) < 1.5, "\(pan.values)")
        #expect(abs(pan.values.velocity.x - 30) < 10, "velocity \(pan.values.velocity) for 30 mm/s")
        let flick = try #require(try final("fast-flick", .swipe))
        #expect(flick.direction == .right)
        #expect(flick.values.velocity.x > 300, "a flick of 40 mm in 60 ms: \(flick.values.velocity)")
        let pinchIn = try #require(try final("pinch-in", .pinch))
        #expect(abs(pinchIn.values.scale - 1.0 / 3) < 0.05, "60 → 20 mm: \(pinchIn.values.scale)")
        let pinchOut = try #require(try final("pinch-out", .pinch))
        #expect(abs(pinchOut.values.scale - 3) < 0.2, "20 → 60 mm: \(pinchOut.values.scale)")
        let rotation = try #require(try final("rotation", .rotation))
        #expect(abs(rotation.values.rotation - Double.pi / 3) < 0.05, "60° clockwise: \(rotation.values.rotation)")
        #expect(rotation.values.rotationVelocity > 0)
        let doubleTap = try #require(try final("double-tap", .doubleTap))
        #expect(doubleTap.values.taps == 2)
        let edge = try #require(try final("edge-swipe", .edgePan))
        #expect(edge.values.translation.x > 25)
        let run = GestureRun(try loadGestureRecording("\(surface)-long-press"), recognizers: GestureSet.uikit.make())
        let began = try #require(run.events.first { $0.gesture == .longPress && $0.state == .began })
        let ended = try #require(run.events.first { $0.gesture == .longPress && $0.state == .ended })
        #expect(ended.timestamp - began.timestamp > .milliseconds(300), "held 900 ms, began at 500 ms")
    }

    @Test("iPadOS's multitasking gestures: the values of a four-finger swipe and a five-finger pinch")
    func multitasking() throws {
        func final(_ name: String, _ gesture: GestureKind) throws -> GestureEvent? {
            GestureRun(try loadGestureRecording("touchscreen-\(name)"), recognizers: StandardGestures.uikit()).events
                .last { $0.gesture == gesture && ($0.state == .ended) }
        }
        let swipe = try #require(try final("swipe-4-fingers-left", .swipe))
        #expect(swipe.direction == .left && swipe.values.fingers == 4)
        let pinch = try #require(try final("pinch-5-fingers", .pinch))
        #expect(pinch.values.fingers == 5)
        #expect(abs(pinch.values.scale - 1.0 / 3) < 0.05, "45 → 15 mm: \(pinch.values.scale)")
        #expect(pinch.values.scaleVelocity < 0)
        // libinput's set on a touchpad keeps its own swipe.
        let touchpad = StandardGestures.forEverySurface()
        let run = GestureRun(try loadGestureRecording("touchpad-swipe-4-fingers-up"), recognizers: touchpad)
        #expect(run.recognized == ["touchpadSwipe 4"])
    }

    @Test("a single tap waits for the double tap to fail, and fails when it succeeds")
    func requireToFail() throws {
        let single = GestureRun(try loadGestureRecording("touchscreen-tap-1-finger"), recognizers: GestureSet.uikit.make())
        let recording = try loadGestureRecording("touchscreen-tap-1-finger")
        let lift = MonotonicInstant(nanoseconds: UInt64(recording.events.last!.timeMicroseconds * 1000))
        let tap = try #require(single.events.first { $0.gesture == .tap })
        #expect(tap.timestamp >= lift + .milliseconds(300), "recognized once the double tap's interval ran out")
        #expect(!single.events.contains { $0.gesture == .doubleTap })

        let double = GestureRun(try loadGestureRecording("touchscreen-double-tap"), recognizers: GestureSet.uikit.make())
        #expect(double.events.map(\.gesture) == [.doubleTap])

        // Without the requirement both report: the single tap at the first lift.
        let tapAlone = TapGestureRecognizer(taps: 1)
        let both = GestureRun(
            try loadGestureRecording("touchscreen-double-tap"), recognizers: [tapAlone, TapGestureRecognizer(taps: 2)])
        #expect(both.recognized == ["tap 1", "tap 1", "doubleTap 1"])
    }

    @Test("pinch and rotation recognize together only when allowed to")
    func simultaneous() throws {
        let recording = try loadGestureRecording("touchscreen-pinch-rotate")
        let pinch = PinchGestureRecognizer()
        let rotation = RotationGestureRecognizer()
        pinch.recognizeSimultaneously { _, other in other is RotationGestureRecognizer }
        let together = GestureRun(recording, recognizers: [pinch, rotation])
        #expect(together.recognized == ["pinch 2", "rotation 2"])
        let changes = together.events.filter { $0.state == .changed }.map(\.gesture)
        #expect(changes.contains(.pinch) && changes.contains(.rotation))
        // Exclusive: the first to begin wins and the other fails.
        let alone = GestureRun(recording, recognizers: [PinchGestureRecognizer(), RotationGestureRecognizer()])
        #expect(alone.recognized.count == 1, "\(alone.recognized)")
    }

    @Test("a gesture interrupted by the device's removal is cancelled")
    func removalCancels() throws {
        let recording = try loadGestureRecording("touchscreen-slow-drag")
        let run = GestureRun(recording, recognizers: GestureSet.uikit.make(), removeAt: recording.events.count / 2)
        #expect(run.events.map(\.state).first == .began)
        #expect(run.events.last?.state == .cancelled)
        #expect(run.recognized.isEmpty)
    }

    @Test("touches are cancelled in the handler chain when a recognizer begins, unless it says not to")
    func cancelsTouches() throws {
        let recording = try loadGestureRecording("touchscreen-slow-drag")
        let cancelling = GestureRun(recording, recognizers: [PanGestureRecognizer()])
        #expect(cancelling.cancellations.count == 1)
        let pan = PanGestureRecognizer()
        pan.cancelsTouchesInHandlers = false
        #expect(GestureRun(recording, recognizers: [pan]).cancellations.isEmpty)
    }

    @Test("a failed recognizer is reset for the next touches")
    func resetAfterTouches() throws {
        // Two recordings back to back: a long press fails the tap, the next tap is a tap.
        // The tap's first event 1.1 s after the press's last: a second past the tap's own 0.1 s start.
        let recording = spliced(
            try loadGestureRecording("touchscreen-long-press"), try loadGestureRecording("touchscreen-tap-1-finger"),
            gap: .milliseconds(1100))
        #expect(GestureRun(recording, recognizers: GestureSet.uikit.make()).recognized == ["longPress 1", "tap 1"])
    }
}

/// Recordings people made on real hardware (devices/real), with the gesture each file's
/// name says it holds.
@Suite("Gesture recognizers on real recordings")
struct RealGestureTests {
    static let cases: [(file: String, set: GestureSet, expected: [String])] = [
        ("evemu-devices/tablets/Wacom ISDv4 E6 Finger.single-tap-center.events", .uikit, ["tap 1"]),
        ("evemu-devices/tablets/Wacom ISDv4 E6 Finger.double-tap-center.events", .uikit, ["doubleTap 1"]),
        ("evemu-devices/tablets/Wacom ISDv4 E6 Finger.2fg-tap.events", .uikit, ["tap 2"]),
        ("evemu-devices/tablets/Wacom Intuos5 touch M Finger double-center-scroll.events", .uikit, ["pan 2"]),
        ("evemu-devices/tablets/eGalax_eMPIA Technology Inc. PCAP MultiTouch Controller.tap.events", .uikit, ["tap 1"]),
        ("evemu-devices/touchpads/CyPS2 Cypress Trackpad.two_finger_tap.events", .libinput, ["tap 2"]),
        ("evemu-devices/touchpads/CyPS2 Cypress Trackpad.three_finger_tap.events", .libinput, ["tap 3"]),
        ("evemu-devices/touchpads/AlpsPS2-ALPS-DualPoint-TouchPad-non-MT.tap.events", .libinput, ["tap 1"]),
        ("evemu-devices/touchpads/AlpsPS2 ALPS GlidePoint.double-tap.events", .libinput, ["doubleTap 1"]),
        ("evemu-devices/touchpads/AlpsPS2 ALPS GlidePoint.single-tap.events", .libinput, ["pan 1", "tap 1"]),
        ("evemu-devices/touchpads/SynPS2 Synaptics TouchPad.two-finger-vert-scroll.events", .libinput, ["pan 2"]),
        ("evemu-devices/touchscreens/Atmel maXTouch Touchscreen.1-finger-drag-up-down.events", .uikit, ["pan 1"]),
        ("evemu-devices/touchscreens/ELAN CANDO Windows7.1-finger-drag-up-down.events", .uikit, ["pan 1"]),
        ("evemu-devices/touchscreens/N-Trig MultiTouch.1-finger-drag-NW-SE.events", .uikit, ["pan 1"]),
        ("evemu-devices/touchscreens/EP0430M09.2-finger-scroll-down.events", .uikit, ["pan 2"]),
        ("evemu-devices/touchscreens/EP0430M09.4-finger-drag-down.events", .uikit, ["pan 4"]),
        (
            "evemu-devices/touchscreens/Atmel maXTouch Touchscreen.1-finger-fast-taps.events", .uikit,
            ["doubleTap 1", "doubleTap 1", "doubleTap 1", "doubleTap 1", "tap 1"]
        ),
    ]

    @Test("each real recording is recognized as the gesture it was made of", arguments: 0..<cases.count)
    func realRecording(_ index: Int) throws {
        let test = Self.cases[index]
        let real = try #require(RealRecording.all.first { $0.file == test.file }, "\(test.file) is in the manifest")
        let recording = try #require(try real.load().first)
        #expect(GestureRun(recording, recognizers: test.set.make()).recognized == test.expected, "\(test.file)")
    }
}
