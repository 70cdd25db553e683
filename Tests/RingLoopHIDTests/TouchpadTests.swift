import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Runs a touchpad interpreter over a recording from memory, as the stage would: each
/// decoded frame in order, physical buttons of pads that are not clickpads told, deadlines
/// passed in time between frames, and time enough at the end for the last ones.
struct TouchpadRun {
    var actions: [TouchpadAction] = []

    init(_ recording: Recording, settings: TouchpadSettings) {
        let info = deviceInfo(of: recording)
        var interpreter = TouchpadInterpreter(device: info, settings: settings)
        var out: [TouchpadAction] = []
        var last = MonotonicInstant(nanoseconds: 0)
        for event in decodedEvents(of: recording) {
            switch event.payload {
            case .digitizer(let frame): interpreter.process(frame, at: event.timestamp, into: &out)
            case .button(let button):
                // As the stage: a clickpad's buttons are the interpreter's to name; other
                // pads' buttons go on as the device sent them.
                guard !interpreter.isClickpad else { continue }
                interpreter.physicalButton(isDown: button.isDown, at: event.timestamp)
                out.append(.button(code: button.code, isDown: button.isDown, isTap: false))
            default: interpreter.advance(to: event.timestamp, into: &out)
            }
            last = event.timestamp
        }
        interpreter.advance(to: last + .seconds(2), into: &out)
        actions = out
    }

    /// The buttons, as "BTN_LEFT down"…
    var buttons: [String] {
        actions.compactMap {
            guard case .button(let code, let isDown, _) = $0 else { return nil }
            return "\(Evdev.name(ofCode: code, type: Evdev.EV_KEY) ?? "\(code)") \(isDown ? "down" : "up")"
        }
    }

    /// Scroll totals by source: the sum of each axis's absolute movement, and the stops.
    func scrolled(_ source: TouchpadScrollSource) -> (horizontal: Double, vertical: Double, stops: Int, events: Int) {
        var result = (horizontal: 0.0, vertical: 0.0, stops: 0, events: 0)
        for case .scroll(let horizontal, let vertical, let from, let isStop) in actions where from == source {
            result.horizontal += abs(horizontal)
            result.vertical += abs(vertical)
            result.events += 1
            if isStop { result.stops += 1 }
        }
        return result
    }

    /// Whether the last scroll action of the run is a stop (a scroll sequence always ends
    /// with one, libinput's axis stop).
    var scrollEndsWithStop: Bool {
        for action in actions.reversed() {
            if case .scroll(_, _, _, let isStop) = action { return isStop }
        }
        return true
    }
}

func touchpadRecording(_ name: String) throws -> Recording {
    let file = "evemu-devices/touchpads/" + name
    let real = try #require(RealRecording.all.first { $0.file == file }, "\(file) is in the manifest")
    return try #require(try real.load().first)
}

/// Real touchpads' recordings (devices/real) with the clicks each file's name says it
/// holds: written from the names and the recorded contacts before the interpreter first
/// ran on them.
@Suite("Touchpad taps and clicks on real recordings")
struct TouchpadClickTests {
    static let tapping = TouchpadSettings(tapping: true)
    static let left = ["BTN_LEFT down", "BTN_LEFT up"]

    static let taps: [(file: String, expected: [String])] = [
        ("AlpsPS2 ALPS GlidePoint.single-tap.events", left),
        ("AlpsPS2 ALPS GlidePoint.double-tap.events", left + left),
        // Named a two-finger tap, but the fingers stay 224 ms (the second 184 ms), past the
        // tap timeout (180 ms): no click.
        ("AlpsPS2 ALPS GlidePoint.2-finger-tap.events", []),
        ("CyPS2 Cypress Trackpad.two_finger_tap.events", ["BTN_RIGHT down", "BTN_RIGHT up"]),
        ("CyPS2 Cypress Trackpad.three_finger_tap.events", ["BTN_MIDDLE down", "BTN_MIDDLE up"]),
        ("AlpsPS2-ALPS-DualPoint-TouchPad-non-MT.tap.events", left),
        // Named a double tap, but its second touch lasts 190 ms, past the tap timeout
        // (180 ms), 440 ms after the first: one click.
        ("AlpsPS2-ALPS-DualPoint-TouchPad-non-MT.doubletap.events", left),
    ]

    @Test("a tap of one, two, three fingers is a left, right, middle click", arguments: 0..<taps.count)
    func tap(_ index: Int) throws {
        let test = Self.taps[index]
        let recording = try touchpadRecording(test.file)
        #expect(TouchpadRun(recording, settings: Self.tapping).buttons == test.expected, "\(test.file)")
        // Tapping off (libinput's default): no click at all.
        #expect(TouchpadRun(recording, settings: TouchpadSettings()).buttons == [], "\(test.file)")
    }

    @Test("the lmr map swaps two- and three-finger taps")
    func leftMiddleRight() throws {
        var settings = Self.tapping
        settings.tapButtonMap = .leftMiddleRight
        let two = try touchpadRecording("CyPS2 Cypress Trackpad.two_finger_tap.events")
        #expect(TouchpadRun(two, settings: settings).buttons == ["BTN_MIDDLE down", "BTN_MIDDLE up"])
    }

    @Test("without tap-and-drag a single tap clicks at once, and a double tap twice")
    func withoutDrag() throws {
        var settings = Self.tapping
        settings.tapAndDrag = false
        let double = try touchpadRecording("AlpsPS2 ALPS GlidePoint.double-tap.events")
        #expect(TouchpadRun(double, settings: settings).buttons == Self.left + Self.left)
    }

    static let clickfinger: [(file: String, expected: [String])] = [
        // The Cypress pad's driver reports these clicks as BTN_RIGHT, never BTN_LEFT, and a
        // clickpad's only button is BTN_LEFT: libinput 1.22 shows no click for the two-finger
        // press on the booted kernel (kernel-check, libinput/touchpad), nor does the chain.
        ("CyPS2 Cypress Trackpad.two_finger_press.events", []),
        ("CyPS2 Cypress Trackpad.three_finger_press.events", []),
        // Three clicks, with one, two and three fingers down (the contacts say so).
        ("bcm5974.three-finger-click.events", bcmClicks),
    ]
    static let bcmClicks = ["BTN_LEFT down", "BTN_LEFT up", "BTN_RIGHT down", "BTN_RIGHT up", "BTN_MIDDLE down", "BTN_MIDDLE up"]

    @Test("clickfinger: the fingers on a clickpad choose the button of its click", arguments: 0..<clickfinger.count)
    func clickfingerPress(_ index: Int) throws {
        let test = Self.clickfinger[index]
        let recording = try touchpadRecording(test.file)
        var settings = TouchpadSettings()
        settings.clickMethod = .clickfinger
        #expect(TouchpadRun(recording, settings: settings).buttons == test.expected, "\(test.file)")
    }

    @Test("an Apple clickpad uses clickfinger by default")
    func appleDefault() throws {
        let recording = try touchpadRecording("bcm5974.three-finger-click.events")
        #expect(TouchpadRun(recording, settings: TouchpadSettings()).buttons == Self.bcmClicks)
        // Software buttons instead: every click is where the finger is, a left click.
        var areas = TouchpadSettings()
        areas.clickMethod = .buttonAreas
        #expect(TouchpadRun(recording, settings: areas).buttons.allSatisfy { $0.hasPrefix("BTN_LEFT") })
    }
}

/// Real touchpads' scrolling recordings: the axis each file's name says, a sequence that
/// ends with libinput's axis stop, no click.
@Suite("Touchpad scrolling on real recordings")
struct TouchpadScrollTests {
    static let twoFinger: [(file: String, vertical: Bool)] = [
        ("SynPS2 Synaptics TouchPad.hp8470p.two-finger-scroll-horizontal.events", false),
        ("SynPS2 Synaptics TouchPad.two-finger-vert-scroll.events", true),
    ]

    @Test("two fingers scroll on the axis they move along, and the scroll stops", arguments: 0..<twoFinger.count)
    func twoFingerScroll(_ index: Int) throws {
        let test = Self.twoFinger[index]
        let run = TouchpadRun(try touchpadRecording(test.file), settings: TouchpadSettings(tapping: true))
        let scrolled = run.scrolled(.finger)
        let along = test.vertical ? scrolled.vertical : scrolled.horizontal
        let across = test.vertical ? scrolled.horizontal : scrolled.vertical
        // Back and forth several times across the pad: hundreds of scroll units.
        #expect(along > 150, "\(test.file): \(scrolled)")
        #expect(across < along / 5, "\(test.file): \(scrolled)")
        #expect(scrolled.stops >= 1, "\(test.file)")
        #expect(run.scrollEndsWithStop, "\(test.file)")
        #expect(run.scrolled(.edge).events == 0)
    }

    static let edge: [(file: String, vertical: Bool)] = [
        ("SynPS2 Synaptics TouchPad.hp8470p.edge-scroll-vertical.events", true),
        ("SynPS2 Synaptics TouchPad.hp8470p.edge-scroll-horizontal.events", false),
    ]

    @Test("a finger along the right or bottom edge scrolls with edge scrolling", arguments: 0..<edge.count)
    func edgeScroll(_ index: Int) throws {
        let test = Self.edge[index]
        var settings = TouchpadSettings()
        settings.scrollMethod = .edge
        let run = TouchpadRun(try touchpadRecording(test.file), settings: settings)
        let scrolled = run.scrolled(.edge)
        let along = test.vertical ? scrolled.vertical : scrolled.horizontal
        let across = test.vertical ? scrolled.horizontal : scrolled.vertical
        #expect(along > 100, "\(test.file): \(scrolled)")
        #expect(across == 0, "\(test.file): \(scrolled)")
        #expect(run.scrollEndsWithStop, "\(test.file)")
        // With two-finger scrolling instead, the same finger moves the pointer.
        #expect(TouchpadRun(try touchpadRecording(test.file), settings: TouchpadSettings()).scrolled(.edge).events == 0)
    }
}

extension TouchpadScrollTests {
    @Test("the hp8470p's 'two-finger-scroll-vertical' holds one finger only: it moves the pointer")
    func oneFingerOnly() throws {
        // The recording's contacts: one tracking id, BTN_TOOL_FINGER alone, never a second
        // finger (the pad did not report it), so nothing scrolls.
        let run = TouchpadRun(
            try touchpadRecording("SynPS2 Synaptics TouchPad.hp8470p.two-finger-scroll-vertical.events"), settings: TouchpadSettings())
        #expect(run.scrolled(.finger).events == 0)
        var travelled = 0.0
        for case .motion(_, let dy, _, _) in run.actions { travelled += abs(dy) }
        #expect(travelled > 1000, "\(travelled)")
    }

    @Test("the ALPS right-edge scroll is 9.7 mm from the edge: an edge that wide scrolls it")
    func alpsRightEdge() throws {
        // The pad gives no resolution, so it is taken as 69 mm wide; the finger runs 192 of
        // its 1360 units (9.7 mm) from the right edge, outside the default 7 mm edge.
        let recording = try touchpadRecording("AlpsPS2 ALPS GlidePoint.right-edge-scroll.events")
        var settings = TouchpadSettings()
        settings.scrollMethod = .edge
        #expect(TouchpadRun(recording, settings: settings).scrolled(.edge).events == 0)
        settings.edgeScrollWidth = 12
        let run = TouchpadRun(recording, settings: settings)
        #expect(run.scrolled(.edge).vertical > 100)
        #expect(run.scrolled(.edge).horizontal == 0)
        #expect(run.scrollEndsWithStop)
    }
}

/// `first` then `second`, the second's events moved to begin `gap` after the first's last.
func spliced(_ first: Recording, _ second: Recording, gap: Duration) -> Recording {
    var recording = first
    let offset =
        (first.events.last?.timeMicroseconds ?? 0) + gap.components.seconds * 1_000_000 + gap.components.attoseconds / 1_000_000_000_000
        - (second.events.first?.timeMicroseconds ?? 0)
    for event in second.events {
        var shifted = event
        let microseconds = event.timeMicroseconds + offset
        shifted.seconds = microseconds / 1_000_000
        shifted.microseconds = Int32(microseconds % 1_000_000)
        recording.events.append(shifted)
    }
    return recording
}

/// What the kernel's hid-multitouch made of an ELAN precision touchpad (devices/kernel), and
/// real recordings changed in one stated way, for palms, typing and drags.
@Suite("Touchpad palms, typing and drags")
struct TouchpadBehaviourTests {
    static func elan() throws -> Recording { try Recording.load(contentsOf: devicesFolder + "/kernel/touchpad-elan-04f3-3045.evemu") }

    @Test("the ELAN pad (hid-multitouch): a two-finger scroll down, its stop, then a left click above the button strip")
    func elanScrollAndClick() throws {
        let run = TouchpadRun(try Self.elan(), settings: TouchpadSettings())
        // Both fingers move 600 → 1470 at 31 units/mm: 28.1 mm down, 295 of libinput's scroll
        // units (libinput 1.22 scrolled 285 for it on the booted kernel).
        var down = 0.0
        for case .scroll(let horizontal, let vertical, .finger, false) in run.actions {
            #expect(horizontal == 0)
            down += vertical
        }
        #expect(abs(down - 870.0 / 31 * TouchpadInterpreter.scrollPerMillimetre) < 1, "\(down)")
        #expect(run.scrolled(.finger).stops == 1)
        // The click's finger is at y 1800 of 2198: 12.8 mm above the bottom, over the 10 mm strip.
        #expect(run.buttons == ["BTN_LEFT down", "BTN_LEFT up"])
        // A 15 mm strip takes it in, on its middle line, where the right button begins.
        var right = TouchpadSettings()
        right.buttonAreaHeight = 15
        #expect(TouchpadRun(try Self.elan(), settings: right).buttons == ["BTN_RIGHT down", "BTN_RIGHT up"])
    }

    @Test("a contact the device marks MT_TOOL_PALM moves and scrolls nothing: the other finger alone moves the pointer")
    func toolPalm() throws {
        // hid-multitouch reports a contact without the confidence bit as MT_TOOL_PALM; here
        // the ELAN recording's second finger (slot 1) is so marked in its first frame.
        var recording = try Self.elan()
        let index = try #require(recording.events.firstIndex { $0.code == Evdev.ABS_MT_TRACKING_ID && $0.value == 1 })
        var palm = recording.events[index]
        palm.code = Evdev.ABS_MT_TOOL_TYPE
        palm.value = 2
        recording.events.insert(palm, at: index + 1)
        let run = TouchpadRun(recording, settings: TouchpadSettings())
        #expect(run.scrolled(.finger).events == 0)
        var moved = 0.0
        for case .motion(_, let dy, _, _) in run.actions { moved += dy }
        #expect(moved > 1000, "\(moved)")
        var off = TouchpadSettings()
        off.palmDetection = false
        #expect(TouchpadRun(recording, settings: off).scrolled(.finger).events > 0)
    }

    @Test("a contact pressing harder than the palm threshold taps nothing")
    func pressurePalm() throws {
        // The Cypress pad's two fingers press up to 76 of 255.
        let recording = try touchpadRecording("CyPS2 Cypress Trackpad.two_finger_tap.events")
        var settings = TouchpadSettings(tapping: true)
        settings.palmPressureThreshold = 60
        #expect(TouchpadRun(recording, settings: settings).buttons == [])
        settings.palmPressureThreshold = 80
        #expect(TouchpadRun(recording, settings: settings).buttons == ["BTN_RIGHT down", "BTN_RIGHT up"])
    }

    @Test("disable-while-typing: a tap 100 ms after a key is ignored, 300 ms after it clicks")
    func typing() throws {
        let recording = try touchpadRecording("CyPS2 Cypress Trackpad.two_finger_tap.events")
        let frames = decodedEvents(of: recording)
        let first = try #require(frames.first).timestamp
        for (before, expected) in [(100, [String]()), (300, ["BTN_RIGHT down", "BTN_RIGHT up"])] {
            var interpreter = TouchpadInterpreter(device: deviceInfo(of: recording), settings: TouchpadSettings(tapping: true))
            var out: [TouchpadAction] = []
            interpreter.keyTyped(at: first + .milliseconds(-before))
            for event in frames {
                if case .digitizer(let frame) = event.payload { interpreter.process(frame, at: event.timestamp, into: &out) }
            }
            // A tapped button is held for the tap timeout (a drag may follow), as libinput's.
            if let last = frames.last?.timestamp { interpreter.advance(to: last + .seconds(2), into: &out) }
            let buttons = out.compactMap { action -> String? in
                guard case .button(let code, let isDown, _) = action else { return nil }
                return "\(Evdev.name(ofCode: code, type: Evdev.EV_KEY)!) \(isDown ? "down" : "up")"
            }
            #expect(buttons == expected, "\(before) ms")
        }
    }

    /// The ALPS GlidePoint's single tap, then 100 ms later a finger that moves (its
    /// right-edge scroll): tap-and-drag.
    static func tapThenMove() throws -> Recording {
        spliced(
            try touchpadRecording("AlpsPS2 ALPS GlidePoint.single-tap.events"),
            try touchpadRecording("AlpsPS2 ALPS GlidePoint.right-edge-scroll.events"), gap: .milliseconds(100))
    }

    @Test("tap-and-drag: a tap and a finger down at once hold the button while it moves, released when it lifts")
    func tapAndDrag() throws {
        let run = TouchpadRun(try Self.tapThenMove(), settings: TouchpadSettings(tapping: true))
        #expect(run.buttons == ["BTN_LEFT down", "BTN_LEFT up"])
        // Motion comes between the press and the release.
        let press = try #require(run.actions.firstIndex { $0 == .button(code: Evdev.BTN_LEFT, isDown: true, isTap: true) })
        let release = try #require(run.actions.lastIndex { $0 == .button(code: Evdev.BTN_LEFT, isDown: false, isTap: true) })
        let motions = run.actions[press..<release].filter {
            if case .motion = $0 { return true }
            return false
        }
        #expect(motions.count > 10)
        // Without tap-and-drag the tap is a click of its own, and the finger only moves.
        var noDrag = TouchpadSettings(tapping: true)
        noDrag.tapAndDrag = false
        let clicked = TouchpadRun(try Self.tapThenMove(), settings: noDrag)
        #expect(clicked.buttons == ["BTN_LEFT down", "BTN_LEFT up"])
        // The tap's press and release come together (the finger's own wobble moved the pointer).
        let tapPress = try #require(clicked.actions.firstIndex { $0 == .button(code: Evdev.BTN_LEFT, isDown: true, isTap: true) })
        #expect(clicked.actions[tapPress + 1] == .button(code: Evdev.BTN_LEFT, isDown: false, isTap: true))
    }

    @Test("drag lock: the button stays down after the finger lifts, until the drag lock timeout")
    func dragLock() throws {
        let recording = try Self.tapThenMove()
        var settings = TouchpadSettings(tapping: true)
        settings.dragLock = true
        var interpreter = TouchpadInterpreter(device: deviceInfo(of: recording), settings: settings)
        var out: [TouchpadAction] = []
        var last = MonotonicInstant(nanoseconds: 0)
        for event in decodedEvents(of: recording) {
            if case .digitizer(let frame) = event.payload { interpreter.process(frame, at: event.timestamp, into: &out) }
            last = event.timestamp
        }
        #expect(!out.contains(.button(code: Evdev.BTN_LEFT, isDown: false, isTap: true)))
        interpreter.advance(to: last + .milliseconds(250), into: &out)
        #expect(!out.contains(.button(code: Evdev.BTN_LEFT, isDown: false, isTap: true)))
        interpreter.advance(to: last + .milliseconds(310), into: &out)
        #expect(out.last == .button(code: Evdev.BTN_LEFT, isDown: false, isTap: true))
    }
}

extension TouchpadClickTests {
    /// The real Cypress pad's two- and three-finger taps, then one finger put down 60 ms
    /// after (within the tap timeout) that moves for 360 ms and lifts, written here in the
    /// pad's own events.
    static func tapThenDrag(_ file: String) throws -> Recording {
        let tap = try touchpadRecording(file)
        let end = tap.events.last!
        var events = tap.events
        var microseconds = Int64(end.seconds) * 1_000_000 + Int64(end.microseconds) + 60_000
        func add(_ type: UInt16, _ code: UInt16, _ value: Int32) {
            events.append(
                InputEvent(
                    seconds: microseconds / 1_000_000, microseconds: Int32(microseconds % 1_000_000), type: type, code: code, value: value))
        }
        let (abs, key, syn) = (Evdev.EV_ABS, Evdev.EV_KEY, Evdev.EV_SYN)
        add(abs, Evdev.ABS_MT_SLOT, 0)
        add(abs, Evdev.ABS_MT_TRACKING_ID, 500)
        add(abs, Evdev.ABS_MT_POSITION_X, 700)
        add(abs, Evdev.ABS_MT_POSITION_Y, 300)
        add(abs, Evdev.ABS_MT_PRESSURE, 65)
        add(key, Evdev.BTN_TOUCH, 1)
        add(key, Evdev.BTN_TOOL_FINGER, 1)
        add(syn, Evdev.SYN_REPORT, 0)
        for step in 1...30 {
            microseconds += 12_000
            add(abs, Evdev.ABS_MT_POSITION_X, 700 + Int32(step) * 8)
            add(syn, Evdev.SYN_REPORT, 0)
        }
        microseconds += 12_000
        add(abs, Evdev.ABS_MT_TRACKING_ID, -1)
        add(key, Evdev.BTN_TOUCH, 0)
        add(key, Evdev.BTN_TOOL_FINGER, 0)
        add(syn, Evdev.SYN_REPORT, 0)
        return Recording(description: tap.description, events: events)
    }

    @Test(
        "tap-and-drag after two- and three-finger taps: one finger down within the tap timeout drags with the tap's button (right, middle) until it lifts",
        arguments: [
            ("CyPS2 Cypress Trackpad.two_finger_tap.events", "BTN_RIGHT"), ("CyPS2 Cypress Trackpad.three_finger_tap.events", "BTN_MIDDLE"),
        ])
    func multiFingerTapAndDrag(_ file: String, _ button: String) throws {
        let run = TouchpadRun(try Self.tapThenDrag(file), settings: Self.tapping)
        #expect(run.buttons == ["\(button) down", "\(button) up"])
        // Every motion of the drag comes between the press and the release.
        var kinds: [String] = []
        for action in run.actions {
            switch action {
            case .button(_, let isDown, _): kinds.append(isDown ? "down" : "up")
            case .motion: if kinds.last != "motion" { kinds.append("motion") }
            case .scroll: kinds.append("scroll")
            }
        }
        #expect(kinds == ["down", "motion", "up"])
        // Without tap-and-drag the tap's click ends at once and the finger only moves.
        var noDrag = Self.tapping
        noDrag.tapAndDrag = false
        let plain = TouchpadRun(try Self.tapThenDrag(file), settings: noDrag)
        #expect(plain.actions.prefix(2).map { if case .button = $0 { true } else { false } } == [true, true])
    }
}
