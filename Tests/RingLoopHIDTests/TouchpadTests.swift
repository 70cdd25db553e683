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
                // As the stage: a clickpad's BTN_LEFT is the interpreter's to name; other
                // buttons go on as the device sent them.
                guard !interpreter.isClickpad || button.code != Evdev.BTN_LEFT else { continue }
                interpreter.physicalButton(isDown: button.isDown, at: event.timestamp, into: &out)
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
        ("CyPS2 Cypress Trackpad.two_finger_press.events", ["BTN_RIGHT down", "BTN_RIGHT up"]),
        // The pad's own driver reports this click as BTN_RIGHT (not BTN_LEFT): it goes on as
        // the device sent it.
        ("CyPS2 Cypress Trackpad.three_finger_press.events", ["BTN_RIGHT down", "BTN_RIGHT up"]),
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
        // Back and forth several times across the pad: hundreds of normalized units.
        #expect(along > 500, "\(test.file): \(scrolled)")
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
