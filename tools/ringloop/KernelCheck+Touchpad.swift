import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

/// The touchpad stage against libinput 1.22 on the booted kernel: real touchpads'
/// recordings (devices/real) played at the recorded pace through uinput, read by `libinput
/// debug-events` with the same settings (`--enable-tap`, `--set-scroll-method=edge`,
/// `--set-click-method=clickfinger`) and by a chain with the touchpad stage: the same
/// clicks in the same order, and the same scrolled distance on each axis within
/// ``scrollTolerance``, both ending their scrolls with a stop. Differences known and not
/// modelled are pinned per recording (``Case/known``).
enum TouchpadChecks {
    /// How far the chain's scrolled distance on an axis may be from libinput's, as a share
    /// of libinput's: the two start scrolling at thresholds of their own, and libinput's
    /// finger scrolling is not documented as a distance (the chain's unit is libinput's
    /// value per millimetre measured on hid-multitouch's ELAN pad, 10.52).
    static let scrollTolerance = 0.15

    struct Case {
        var file: String
        /// The description, for a file of events only.
        var description: String?
        var libinputOptions: [String]
        var settings: TouchpadSettings
        var comparesScroll: Bool
        /// A difference known and not modelled: libinput's buttons and the chain's as they
        /// are, and why. The check passes only while both are exactly these, so a change on
        /// either side shows.
        var known: (libinput: [String], chain: [String], why: String)? = nil
    }

    static let touchpads = "evemu-devices/touchpads/"

    /// Why libinput ignores the ALPS GlidePoint's taps.
    static let lightTouch =
        "libinput's pressure-based touch detection (thresholds from its device database, not documented as numbers)"
        + " takes the ALPS GlidePoint's light taps (ABS_PRESSURE 24-34 of 127, no BTN_TOUCH) for no touch;"
        + " the chain has no pressure thresholds"

    static var cases: [Case] {
        let tapping = TouchpadSettings(tapping: true)
        var edge = TouchpadSettings()
        edge.scrollMethod = .edge
        var clickfinger = TouchpadSettings()
        clickfinger.clickMethod = .clickfinger
        let synaptics = touchpads + "SynPS2 Synaptics TouchPad.desc"
        let hp = touchpads + "SynPS2 Synaptics TouchPad.hp8470p.desc"
        return [
            Case(
                file: touchpads + "AlpsPS2 ALPS GlidePoint.single-tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false, known: ([], ["272 down", "272 up"], lightTouch)),
            Case(
                file: touchpads + "AlpsPS2 ALPS GlidePoint.double-tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false, known: ([], ["272 down", "272 up", "272 down", "272 up"], lightTouch)),
            Case(
                file: touchpads + "AlpsPS2 ALPS GlidePoint.2-finger-tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false),
            Case(
                file: touchpads + "CyPS2 Cypress Trackpad.two_finger_tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false),
            Case(
                file: touchpads + "CyPS2 Cypress Trackpad.three_finger_tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false),
            Case(
                file: touchpads + "AlpsPS2-ALPS-DualPoint-TouchPad-non-MT.tap.events", libinputOptions: ["--enable-tap"], settings: tapping,
                comparesScroll: false),
            Case(
                file: touchpads + "AlpsPS2-ALPS-DualPoint-TouchPad-non-MT.doubletap.events", libinputOptions: ["--enable-tap"],
                settings: tapping, comparesScroll: false),
            Case(
                file: touchpads + "CyPS2 Cypress Trackpad.two_finger_press.events", libinputOptions: ["--set-click-method=clickfinger"],
                settings: clickfinger, comparesScroll: false),
            Case(
                // Clickfinger by default, as libinput's quirks make it for Apple's pads (it
                // gave right, left, right while the guest lacked its quirks).
                file: touchpads + "bcm5974.three-finger-click.events", libinputOptions: [], settings: TouchpadSettings(),
                comparesScroll: false),
            Case(
                file: "../kernel/touchpad-elan-04f3-3045.evemu", libinputOptions: [], settings: TouchpadSettings(), comparesScroll: true),
            Case(
                file: touchpads + "SynPS2 Synaptics TouchPad.two-finger-vert-scroll.events", description: synaptics, libinputOptions: [],
                settings: TouchpadSettings(), comparesScroll: true),
            Case(
                // The pad reports one contact and BTN_TOOL_DOUBLETAP for the second finger:
                // libinput makes pinch gestures and pointer motion of most of it, the chain
                // scrolls; only the buttons are compared.
                file: touchpads + "SynPS2 Synaptics TouchPad.hp8470p.two-finger-scroll-horizontal.events", description: hp,
                libinputOptions: [], settings: TouchpadSettings(), comparesScroll: false),
            Case(
                file: touchpads + "SynPS2 Synaptics TouchPad.hp8470p.edge-scroll-vertical.events", description: hp,
                libinputOptions: ["--set-scroll-method=edge"], settings: edge, comparesScroll: true),
            Case(
                file: touchpads + "SynPS2 Synaptics TouchPad.hp8470p.edge-scroll-horizontal.events", description: hp,
                libinputOptions: ["--set-scroll-method=edge"], settings: edge, comparesScroll: true),
        ]
    }

    static func run(_ context: CheckContext) {
        for check in cases { compare(check, context) }
    }

    /// Scrolling in one run: the distance on each axis (positive down and right, as
    /// libinput's) and the number of sequences ended by a stop.
    struct Scrolled {
        /// The distance scrolled on each axis, back and forth alike.
        var vertical = 0.0
        var horizontal = 0.0
        var stops = 0
        var events = 0
        /// The first values (vertical/horizontal), for a reader comparing units.
        var first: [String] = []

        mutating func add(vertical: Double, horizontal: Double) {
            self.vertical += abs(vertical)
            self.horizontal += abs(horizontal)
            events += 1
            if vertical == 0 && horizontal == 0 {
                stops += 1
            } else if first.count < 6 {
                first.append("\(Format.fixed(vertical, 2))/\(Format.fixed(horizontal, 2))")
            }
        }

        var text: String {
            "\(Format.fixed(vertical, 1)) vertically, \(Format.fixed(horizontal, 1)) horizontally in \(events) events, \(stops) stop(s),"
                + " first \(first.joined(separator: " "))"
        }
    }

    /// Times as milliseconds after the first (`+0 +182 ms`).
    static func fromFirst(_ times: [Double]) -> String {
        guard let first = times.first else { return "none" }
        return times.map { "+" + Format.fixed(($0 - first) * 1000, 0) }.joined(separator: " ") + " ms"
    }

    static func compare(_ check: Case, _ context: CheckContext) {
        let short = check.file.split(separator: "/").last.map(String.init) ?? check.file
        let name = "libinput/touchpad/" + short
        guard context.report.wants(name) else { return }
        guard
            let recording = context.loadRealRecording(
                name, folder: "\(context.devices)/real/", file: check.file, description: check.description)
        else { return }
        var configuration = HIDEventSystem.Configuration()
        configuration.touchpad = check.settings
        // libinput's scrolling is not the same twice in the guest: the same vertical edge
        // scroll gave 4467 in one CI run and 3769 in another (one of its deltas reversed),
        // the chain 4535 both times. Its scrolling waits on timers, which under TCG on a
        // loaded host may fire late against the events. A scroll that differs is played
        // once more, and the check says what libinput's first replay gave.
        var outcome = attempt(check, recording: recording, configuration: configuration, context: context)
        if let first = outcome, first.scrollDiffers, first.problems.count == 1,
            let second = attempt(check, recording: recording, configuration: configuration, context: context)
        {
            outcome = second
            outcome?.passed += "; libinput's first replay scrolled otherwise (\(first.problems[0]))"
        }
        guard let outcome else { return }
        let problems = outcome.problems
        context.report.check(
            name, problems.isEmpty,
            problems.isEmpty ? outcome.passed : problems.prefix(3).joined(separator: "; ") + " (\(outcome.summary))")
    }

    /// One replay's comparison: what differs, and what the check says when nothing does.
    struct Attempt {
        var problems: [String]
        var scrollDiffers: Bool
        var passed: String
        var summary: String
    }

    /// Plays `recording` to libinput and the chain once and compares them; `nil` after a
    /// failure already reported.
    static func attempt(
        _ check: Case, recording: Recording, configuration: HIDEventSystem.Configuration, context: CheckContext
    ) -> Attempt? {
        let short = check.file.split(separator: "/").last.map(String.init) ?? check.file
        let name = "libinput/touchpad/" + short
        let replayed: Libinput.Replayed
        switch Libinput.replay(recording, options: check.libinputOptions, chainConfiguration: configuration, context: context) {
        case .success(let result): replayed = result
        case .failure(let failure):
            context.report.fail(name, failure.description)
            return nil
        }
        let reading = replayed.libinput
        var libinputButtons: [String] = []
        var libinputButtonTimes: [Double] = []
        var libinputScroll = Scrolled()
        for event in reading.events {
            if let press = event.press, event.type == "POINTER_BUTTON" {
                libinputButtons.append("\(press.code) \(press.pressed ? "down" : "up")")
                if let time = event.time { libinputButtonTimes.append(time) }
            } else if let scroll = event.scroll, event.type == "POINTER_SCROLL_FINGER" || event.type == "POINTER_SCROLL_EDGE" {
                libinputScroll.add(vertical: scroll.vertical ?? 0, horizontal: scroll.horizontal ?? 0)
            }
        }
        var chainButtons: [String] = []
        var chainButtonTimes: [Double] = []
        var chainScroll = Scrolled()
        var chainDrops = 0
        for event in replayed.chain {
            switch event.payload {
            case .eventsDropped: chainDrops += 1
            case .button(let button):
                chainButtons.append("\(button.code) \(button.isDown ? "down" : "up")")
                chainButtonTimes.append(Double(event.timestamp.nanoseconds) / 1e9)
            case .scroll(let scroll) where scroll.source == .finger || scroll.source == .edge:
                chainScroll.add(vertical: -scroll.vertical, horizontal: scroll.horizontal)
            default: break
            }
        }
        var problems: [String] = []
        var scrollDiffers = false
        if !reading.readEverything { problems.append("libinput read \(reading.eventsRead) of \(replayed.eventsAtNode) events") }
        if chainDrops > 0 { problems.append("the chain lost events \(chainDrops) times") }
        var note = ""
        if let known = check.known {
            if libinputButtons != known.libinput || chainButtons != known.chain {
                problems.append("buttons: libinput \(libinputButtons), the chain \(chainButtons), not the known difference (\(known.why))")
            } else {
                note = "; a known difference: libinput \(libinputButtons), the chain \(chainButtons): \(known.why)"
            }
        } else if libinputButtons != chainButtons {
            problems.append("buttons: libinput \(libinputButtons), the chain \(chainButtons)")
        }
        if check.comparesScroll {
            func near(_ chain: Double, _ libinput: Double) -> Bool {
                abs(chain - libinput) <= scrollTolerance * max(abs(libinput), 1) + 1
            }
            if !near(chainScroll.vertical, libinputScroll.vertical) || !near(chainScroll.horizontal, libinputScroll.horizontal)
                || (chainScroll.stops > 0) != (libinputScroll.stops > 0)
            {
                problems.append("scrolling: libinput \(libinputScroll.text), the chain \(chainScroll.text)")
                scrollDiffers = true
            }
        }
        return Attempt(
            problems: problems, scrollDiffers: scrollDiffers,
            passed: "libinput\(check.libinputOptions.map { " " + $0 }.joined()) and the chain: buttons \(chainButtons)"
                + (check.comparesScroll ? ", scrolling \(libinputScroll.text) and \(chainScroll.text)" : "")
                + "; times from the first button: libinput \(Self.fromFirst(libinputButtonTimes)), the chain \(Self.fromFirst(chainButtonTimes))"
                + " (\(reading.summary))\(note)",
            summary: reading.summary)
    }
}
