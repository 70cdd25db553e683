import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The real relative devices of devices/real with motion in their recordings: mice and a
/// pointing stick (the Apple Touch Mouse's recording holds only its touch surface).
let realPointerRecordings: [(file: String, description: String?)] = [
    ("mice/PS2 Generic Mouse.events", "mice/PS2 Generic Mouse.desc"),
    ("mice/Saitek Cyborg R.A.T.5 Mouse.events", "mice/Saitek Cyborg R.A.T.5 Mouse.desc"),
    ("mice/Ultrathin Touch Mouse.events", nil),
    ("trackpoints/TPPS2 IBM TrackPoint.events", "trackpoints/TPPS2 IBM TrackPoint.desc"),
]

/// The decoder's events of a real recording run through a pointer processor, on the
/// recording's own clock.
func pointerEvents(of recording: Recording, settings: PointerSettings, screens: [ScreenDescription] = []) -> [HIDEvent] {
    var processor = PointerProcessor(defaults: settings, screens: screens)
    var out: [HIDEvent] = []
    for event in decodedEvents(of: recording) { processor.process(event) { out.append($0) } }
    processor.flush(upTo: .max) { out.append($0) }
    return out
}

/// Motion events' raw and accelerated deltas and cursor.
func motions(_ events: [HIDEvent]) -> [PointerMotionEvent] {
    payloads(events) { if case .pointerMotion(let motion) = $0 { motion } else { nil } }
}

/// The recorded frames' summed REL_X and REL_Y, in order: what the device counted, read
/// from the recording without the decoder.
func recordedMotion(_ recording: Recording) -> [(Int32, Int32)] {
    var frames: [(Int32, Int32)] = []
    var x: Int32 = 0
    var y: Int32 = 0
    for event in recording.events {
        if event.type == 2 && event.code == 0 { x += event.value }
        if event.type == 2 && event.code == 1 { y += event.value }
        if event.type == 0 && event.code == 0 {
            if x != 0 || y != 0 { frames.append((x, y)) }
            (x, y) = (0, 0)
        }
    }
    return frames
}

@Suite("The pointer: acceleration, cursor, wheels and buttons")
struct PointerTests {
    @Test(
        "flat: every real mouse's and pointing stick's deltas times 1 + speed, exactly, frame by frame as recorded",
        arguments: [-0.5, 0, 0.25, 1])
    func flatOnRealRecordings(speed: Double) throws {
        let settings = try PointerSettings(acceleration: PointerAcceleration(profile: .flat, speed: speed))
        for (file, description) in realPointerRecordings {
            let recording = try realRecording(file, description: description)
            let recorded = recordedMotion(recording)
            let moved = motions(pointerEvents(of: recording, settings: settings))
            #expect(recorded.count == moved.count && !moved.isEmpty, "\(file)")
            for (motion, (x, y)) in zip(moved, recorded) {
                #expect(motion.dx == x && motion.dy == y)
                #expect(motion.acceleratedDX == Double(x) * (1 + speed) && motion.acceleratedDY == Double(y) * (1 + speed), "\(file)")
                #expect(motion.cursor == nil)
            }
        }
    }

    @Test("the cursor on a 1920×1080 screen starts in its middle and follows the flat deltas, held at the edges")
    func cursorFollowsAndClamps() throws {
        let screen = try ScreenDescription(width: 1920, height: 1080)
        let settings = try PointerSettings(acceleration: PointerAcceleration(profile: .flat, speed: 1))
        for (file, description) in realPointerRecordings {
            let recording = try realRecording(file, description: description)
            // A plain model: the middle pixel, then each doubled delta, clamped to the pixels.
            var x = 959.0
            var y = 539.0
            var clamped = 0
            for (motion, (dx, dy)) in zip(
                motions(pointerEvents(of: recording, settings: settings, screens: [screen])), recordedMotion(recording))
            {
                let freeX = x + 2 * Double(dx)
                let freeY = y + 2 * Double(dy)
                x = min(max(freeX, 0), 1919)
                y = min(max(freeY, 0), 1079)
                if x != freeX || y != freeY { clamped += 1 }
                #expect(motion.cursor == PointerCursor(location: ScreenPoint(x: x, y: y), screen: 0), "\(file)")
            }
            if file.hasPrefix("mice/PS2") { #expect(clamped > 0, "the PS2 mouse's long recording reaches an edge") }
        }
    }

    @Test("two screens side by side: the cursor crosses from one to the other, stops at the outer edges, and warps")
    func twoScreens() throws {
        let left = try ScreenDescription(name: "left", width: 1920, height: 1080)
        let right = try ScreenDescription(
            name: "right", width: 1080, height: 1920, rotation: .clockwise90, origin: ScreenPoint(x: 1920, y: 0))
        var layout = CursorLayout(screens: [left, right])
        #expect(layout.cursor == PointerCursor(location: ScreenPoint(x: 959, y: 539), screen: 0))
        let steps: [(Double, Double, PointerCursor)] = [
            (1000, 0, PointerCursor(location: ScreenPoint(x: 39, y: 539), screen: 1)),
            (0, 2000, PointerCursor(location: ScreenPoint(x: 39, y: 1919), screen: 1)),
            // Left from the bottom of the tall screen: the short one does not reach so low,
            // so the cursor stops at the tall one's left edge.
            (-100, 0, PointerCursor(location: ScreenPoint(x: 0, y: 1919), screen: 1)),
            (0, -1500, PointerCursor(location: ScreenPoint(x: 0, y: 419), screen: 1)),
            (-5000, 0, PointerCursor(location: ScreenPoint(x: 0, y: 419), screen: 0)),
        ]
        for (dx, dy, expected) in steps {
            let moved = layout.move(dx: dx, dy: dy)
            #expect(moved == expected, "by \(dx), \(dy)")
        }
        let warped = layout.warp(to: ScreenPoint(x: 5000, y: -3), screen: 1)
        #expect(warped && layout.cursor == PointerCursor(location: ScreenPoint(x: 1079, y: 0), screen: 1))
        let nowhere = layout.warp(to: ScreenPoint(x: 1, y: 1), screen: 2)
        #expect(!nowhere)
        #expect(CursorLayout().cursor == nil)
    }

    @Test("adaptive: one factor for both axes, between libinput's 0.3 and 3.5; speed −1 only decelerates, speed 1 accelerates most")
    func adaptiveOnRealRecordings() throws {
        for (file, description) in realPointerRecordings {
            let recording = try realRecording(file, description: description)
            var largest: [Double: Double] = [:]
            for speed in [-1.0, 0, 1] {
                let settings = try PointerSettings(acceleration: PointerAcceleration(profile: .adaptive, speed: speed))
                for motion in motions(pointerEvents(of: recording, settings: settings)) {
                    let factor = motion.dx != 0 ? motion.acceleratedDX / Double(motion.dx) : motion.acceleratedDY / Double(motion.dy)
                    if motion.dx != 0 && motion.dy != 0 {
                        #expect(abs(motion.acceleratedDY / Double(motion.dy) - factor) < 1e-9, "\(file)")
                    }
                    #expect(factor >= 0.3 * (speed < 0 ? 0.5 : 1) - 1e-9 && factor <= 3.5 + 1e-9, "\(file) speed \(speed): \(factor)")
                    if speed == -1 { #expect(factor <= 1, "\(file): speed −1 decelerates") }
                    largest[speed] = max(largest[speed] ?? 0, factor)
                }
            }
            #expect(largest[-1]! < largest[0]! && largest[0]! < largest[1]!, "\(file): \(largest)")
        }
    }

    @Test("adaptive: a slow motion is slowed, a steady fast one sped up to the speed setting's maximum")
    func adaptiveShape() throws {
        var accelerator = PointerAccelerator(try PointerAcceleration(profile: .adaptive, speed: 0))
        // 1 unit every 100 ms (0.01 units/ms): slowed to about a third.
        var time: Int64 = 1_000_000_000
        var factors: [Double] = []
        for _ in 0..<10 {
            time += 100_000_000
            factors.append(accelerator.accelerate(dx: 1, dy: 0, at: time).dx)
        }
        #expect(factors.dropFirst(2).allSatisfy { $0 > 0.3 && $0 < 0.45 }, "\(factors)")
        // 8 units per ms at 1000 Hz: far above the incline, at the maximum (2 at speed 0).
        factors = []
        for _ in 0..<50 {
            time += 1_000_000
            factors.append(accelerator.accelerate(dx: 0, dy: -8, at: time).dy / -8)
        }
        #expect(factors.suffix(40).allSatisfy { abs($0 - 2) < 1e-9 }, "\(factors)")
        // 0.25 units per ms: the plateau, 1:1.
        factors = []
        for _ in 0..<50 {
            time += 4_000_000
            factors.append(accelerator.accelerate(dx: -1, dy: 0, at: time).dx / -1)
        }
        #expect(factors.suffix(40).allSatisfy { abs($0 - 1) < 1e-9 }, "\(factors)")
        // The same motion on a 400-dpi device counts 2.5 times as far (normalized to 1000 dpi).
        var lowResolution = PointerAccelerator(try PointerAcceleration(profile: .adaptive, speed: 0), dotsPerInch: 400)
        var last = 0.0
        for _ in 0..<50 {
            time += 10_000_000
            last = lowResolution.accelerate(dx: 1, dy: 0, at: time).dx
        }
        #expect(abs(last - 2.5) < 1e-9, "0.25 units/ms at 1000 dpi: the plateau")
    }

    @Test("custom: the documented examples: 0 1 gives flat, 0 2 doubles, x² sampled at step 3 interpolates and extrapolates")
    func customProfile() throws {
        let identity = try PointerSettings(
            acceleration: PointerAcceleration(profile: .custom, curve: CustomAccelerationCurve(step: 1, points: [0, 1])))
        let doubled = try PointerSettings(
            acceleration: PointerAcceleration(profile: .custom, curve: CustomAccelerationCurve(parsing: "1 0 2")))
        for (file, description) in realPointerRecordings {
            let recording = try realRecording(file, description: description)
            for (settings, factor) in [(identity, 1.0), (doubled, 2.0)] {
                for motion in motions(pointerEvents(of: recording, settings: settings)) {
                    #expect(abs(motion.acceleratedDX - Double(motion.dx) * factor) < 1e-9, "\(file)")
                    #expect(abs(motion.acceleratedDY - Double(motion.dy) * factor) < 1e-9, "\(file)")
                }
            }
        }
        let square = try CustomAccelerationCurve(step: 3, points: [0, 9, 36, 81])
        #expect(square.outputSpeed(at: 3) == 9 && square.outputSpeed(at: 9) == 81)
        #expect(square.outputSpeed(at: 1.5) == 4.5)
        #expect(square.outputSpeed(at: 10.5) == 103.5)
        #expect(square.factor(at: 6) == 6)
        let fixed = try CustomAccelerationCurve(parsing: "1.0 1.0 1.0")
        #expect(fixed.factor(at: 4) == 0.25 && fixed.factor(at: 0.5) == 2)
    }

    @Test(
        "huge finite deltas (1e20, 1e155, whose square overflows, 1e308 twice, whose sum does) neither trap nor spoil the next motion: it is accelerated as a fresh device's first"
    )
    func hugeDeltasStayFinite() throws {
        let curve = try CustomAccelerationCurve(step: 1, points: [0, 1, 3])
        let settings = try PointerSettings(acceleration: PointerAcceleration(profile: .custom, curve: curve))
        // Before, the custom curve's Int conversion trapped on the first of these.
        #expect(curve.outputSpeed(at: 1e300).isFinite)
        let touchpad = HIDDeviceID(rawValue: 1)
        func motion(_ dx: Double, _ dy: Double, at second: UInt64) -> HIDEvent {
            HIDEvent(
                device: touchpad, timestamp: MonotonicInstant(nanoseconds: second * 2_000_000_000),
                payload: .pointerMotion(PointerMotionEvent(dx: 0, dy: 0, unacceleratedDX: dx, unacceleratedDY: dy)))
        }
        for profile in [AccelerationProfile.custom, .adaptive, .flat] {
            var chosen = settings
            chosen.acceleration = try PointerAcceleration(profile: profile, curve: profile == .custom ? curve : nil)
            var processor = PointerProcessor()
            processor.setDevice(touchpad, settings: chosen, isTouchpad: true)
            var fresh = processor
            var second: UInt64 = 1
            for (dx, dy) in [(1e20, 0.0), (-1e155, 1e155), (1e308, 1e308), (1e308, 1e308), (1e200, -1e200), (.nan, 4)] {
                let out = processor.moved(
                    motion(dx, dy, at: second), PointerMotionEvent(dx: 0, dy: 0, unacceleratedDX: dx, unacceleratedDY: dy))
                guard case .pointerMotion(let moved) = out.payload else { continue }
                #expect(moved.acceleratedDX.isFinite && moved.acceleratedDY.isFinite, "\(profile) \(dx) \(dy): \(moved)")
                second += 1
            }
            // Two seconds after the last: no tracker counts, so it is as a first motion.
            // Before, the summed deltas were infinite and this motion's velocity NaN.
            let ordinary = PointerMotionEvent(dx: 0, dy: 0, unacceleratedDX: 3, unacceleratedDY: -4)
            let after = processor.moved(motion(3, -4, at: second), ordinary)
            let first = fresh.moved(motion(3, -4, at: second), ordinary)
            guard case .pointerMotion(let afterMotion) = after.payload, case .pointerMotion(let firstMotion) = first.payload else {
                Issue.record("no motion")
                continue
            }
            if profile != .adaptive {
                #expect(afterMotion.acceleratedDX == firstMotion.acceleratedDX, "\(profile)")
                #expect(afterMotion.acceleratedDY == firstMotion.acceleratedDY, "\(profile)")
            }
            #expect(afterMotion.acceleratedDX.isFinite && afterMotion.acceleratedDX > 0, "\(profile) \(afterMotion)")
        }
        // Scrolling: a huge unscaled amount is scaled to a finite one.
        var processor = PointerProcessor(defaults: try PointerSettings(scrollFactor: 1e300))
        var scrolled: [ScrollEvent] = []
        processor.process(
            HIDEvent(
                device: touchpad, timestamp: .now,
                payload: .scroll(ScrollEvent(vertical: 0, unscaledVertical: 1e308, unscaledHorizontal: -1e308)))
        ) { event in
            if case .scroll(let scroll) = event.payload { scrolled.append(scroll) }
        }
        #expect(scrolled.count == 1 && scrolled.allSatisfy { $0.vertical.isFinite && $0.horizontal.isFinite }, "\(scrolled)")
    }

    @Test("a custom curve's step outside 0.001…10000 is refused, naming the range: a tiny step made ordinary motion trap")
    func curveStepRange() throws {
        for step in [1e-300, 0.000_9, 10_000.5, .infinity, -1] {
            #expect(throws: PointerSettingError.curveStep(step)) { try CustomAccelerationCurve(step: step, points: [0, 1]) }
        }
        #expect(try CustomAccelerationCurve(step: 0.001, points: [0, 1]).step == 0.001)
        #expect(try CustomAccelerationCurve(step: 10_000, points: [0, 1]).step == 10_000)
        #expect("\(PointerSettingError.curveStep(1e-300))".contains("from 0.001 to 10000"))
    }

    @Test("bad settings are refused with what would be valid")
    func refusals() throws {
        #expect(throws: PointerSettingError.speed(1.5)) { try PointerAcceleration(profile: .flat, speed: 1.5) }
        #expect(throws: PointerSettingError.missingCurve) { try PointerAcceleration(profile: .custom) }
        #expect(throws: PointerSettingError.curvePointCount(1)) { try CustomAccelerationCurve(parsing: "1 0") }
        #expect(throws: PointerSettingError.curvePoint(-2)) { try CustomAccelerationCurve(parsing: "1 0 -2") }
        #expect(throws: PointerSettingError.curveStep(0)) { try CustomAccelerationCurve(parsing: "0 0 1") }
        #expect(throws: PointerSettingError.curveText("1 a 2")) { try CustomAccelerationCurve(parsing: "1 a 2") }
        #expect(throws: PointerSettingError.scrollFactor(0)) { try PointerSettings(scrollFactor: 0) }
        #expect(throws: PointerSettingError.dotsPerInch(0)) { try PointerSettings(dotsPerInch: 0) }
        #expect("\(PointerSettingError.speed(1.5))" == "1.5 is not a speed; valid speeds are −1…1 (0 is the default)")
        #expect("\(PointerSettingError.curvePointCount(1))".contains("2…64 points"))
        let file = DeviceSettingsFile(
            text: """
                version = 1
                [match name="Mouse"]
                accel-speed = 2
                accel-points = 1 0
                scroll-factor = -1
                dpi = 0
                middle-emulation = maybe
                debounce = no
                """, path: "pointer.conf")
        let problems = file.problems.map(\.description)
        #expect(problems.count == 5, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("pointer.conf:3") && $0.contains("valid speeds are −1…1") })
        #expect(problems.contains { $0.hasPrefix("pointer.conf:4") && $0.contains("the step (above 0) then 2…64 speeds") })
        #expect(problems.contains { $0.hasPrefix("pointer.conf:5") && $0.contains("valid factors are numbers above 0") })
        #expect(problems.contains { $0.hasPrefix("pointer.conf:6") && $0.contains("1…100000") })
        #expect(problems.contains { $0.hasPrefix("pointer.conf:7") && $0.contains("not yes or no") })
    }

    @Test("a device's settings file lines and udev's MOUSE_DPI win over the system's pointer settings")
    func perDeviceSettings() throws {
        let file = DeviceSettingsFile(
            text: """
                version = 1
                [match name="PS/2 Generic Mouse"]
                accel-profile = custom
                accel-points = 2 0 2 4
                natural-scroll = yes
                scroll-factor = 0.5
                middle-emulation = yes
                """, path: "pointer.conf")
        #expect(file.problems.isEmpty, "\(file.problems)")
        let recording = try realRecording("mice/PS2 Generic Mouse.events", description: "mice/PS2 Generic Mouse.desc")
        let identity = DeviceIdentity(deviceInfo(of: recording))
        let own = DeviceSettingsResolver(files: [file]).settings(for: identity)
        let (settings, problems) = PointerSettings().applying(own, udevProperties: ["MOUSE_DPI": "400@125 *800@125 1600@125"])
        #expect(problems.isEmpty)
        let curve = try CustomAccelerationCurve(step: 2, points: [0, 2, 4])
        #expect(settings.acceleration.profile == .custom && settings.acceleration.curve == curve)
        #expect(settings.naturalScroll && settings.scrollFactor == 0.5 && settings.middleButtonEmulation && settings.debounce)
        #expect(settings.dotsPerInch == 800)
        #expect(PointerSettings.dotsPerInch(fromMouseDPI: "1200") == 1200 && PointerSettings.dotsPerInch(fromMouseDPI: "400 800") == nil)
        let custom = DeviceSettingsFile(text: "version = 1\n[match name=\"PS/2 Generic Mouse\"]\naccel-profile = custom\n", path: "p.conf")
        let refused = PointerSettings().applying(DeviceSettingsResolver(files: [custom]).settings(for: identity))
        #expect(refused.settings.acceleration == .libinputDefault)
        #expect(refused.problems.count == 1 && refused.problems[0].contains("needs points"), "\(refused.problems)")
    }

    @Test("wheels: natural scrolling turns them, the factor scales them; a real wheel's totals as recorded")
    func wheels() throws {
        // The one real recording with both wheels turned (the others have none).
        for (file, description) in [("mice/Ultrathin Touch Mouse.events", String?.none)] {
            let recording = try realRecording(file, description: description)
            let expected = RecordedExpectations(recording).scroll
            #expect(expected.vertical != 0, "\(file) scrolls")
            for (natural, factor) in [(false, 1.0), (true, 1.0), (false, 2.5), (true, 0.5)] {
                let settings = try PointerSettings(naturalScroll: natural, scrollFactor: factor)
                let scrolls = payloads(pointerEvents(of: recording, settings: settings)) { if case .scroll(let s) = $0 { s } else { nil } }
                let sign = natural ? -1.0 : 1.0
                #expect(abs(scrolls.reduce(0) { $0 + $1.vertical } - sign * factor * expected.vertical) < 1e-9, "\(file)")
                #expect(abs(scrolls.reduce(0) { $0 + $1.horizontal } - sign * factor * expected.horizontal) < 1e-9, "\(file)")
                #expect(scrolls.allSatisfy { $0.source == .wheel && $0.phase == .none })
            }
        }
    }

    /// Button events `(code, down, milliseconds)` of device 1 through a processor, and what
    /// it passes on as `(code, down, milliseconds)`, everything held flushed at the end.
    func buttons(_ sequence: [(UInt16, Bool, Int64)], settings: PointerSettings) -> [String] {
        var processor = PointerProcessor(defaults: settings)
        var out: [HIDEvent] = []
        for (code, down, milliseconds) in sequence {
            let button = ButtonEvent(code: code, number: code == Evdev.BTN_LEFT ? 1 : code == Evdev.BTN_RIGHT ? 2 : 3, isDown: down)
            let event = HIDEvent(
                device: HIDDeviceID(rawValue: 1),
                timestamp: MonotonicInstant(nanoseconds: UInt64(1_000_000_000 + milliseconds * 1_000_000)),
                payload: .button(button))
            processor.process(event) { out.append($0) }
        }
        processor.flush(upTo: .max) { out.append($0) }
        return out.compactMap { event in
            guard case .button(let button) = event.payload else { return nil }
            let name = Evdev.shownName(ofCode: button.code, type: Evdev.EV_KEY)
            return "\(name) \(button.isDown ? "down" : "up") \((Int64(event.timestamp.nanoseconds) - 1_000_000_000) / 1_000_000)"
        }
    }

    @Test("debouncing leaves the real mice's and pointing stick's clicks as recorded")
    func debouncingRealClicks() throws {
        var total = 0
        for (file, description) in realPointerRecordings {
            let recording = try realRecording(file, description: description)
            func clicks(_ events: [HIDEvent]) -> [String] {
                payloads(events) { if case .button(let b) = $0 { "\(b.code) \(b.isDown)" } else { nil } }
            }
            let debounced = clicks(pointerEvents(of: recording, settings: PointerSettings()))
            #expect(debounced == clicks(decodedEvents(of: recording)), "\(file)")
            total += debounced.count
        }
        #expect(total >= 20, "the recordings click")
    }

    @Test("bounce: a press–release–press is one press, a release within 25 ms comes late with its own time")
    func bounce() {
        let left = Evdev.BTN_LEFT
        let settings = PointerSettings()
        #expect(
            buttons([(left, true, 0), (left, false, 3), (left, true, 6), (left, false, 200)], settings: settings) == [
                "BTN_LEFT down 0", "BTN_LEFT up 200",
            ])
        #expect(
            buttons([(left, true, 0), (left, false, 100), (left, true, 103), (left, false, 106)], settings: settings)
                == ["BTN_LEFT down 0", "BTN_LEFT up 100"])
        #expect(buttons([(left, true, 0), (left, false, 10)], settings: settings) == ["BTN_LEFT down 0", "BTN_LEFT up 10"])
        var raw = settings
        raw.debounce = false
        #expect(
            buttons([(left, true, 0), (left, false, 3), (left, true, 6)], settings: raw) == [
                "BTN_LEFT down 0", "BTN_LEFT up 3", "BTN_LEFT down 6",
            ])
        // A release passed on late comes when the bounce time is up: after a motion of then.
        var processor = PointerProcessor(defaults: settings)
        var kinds: [String] = []
        let payloads: [(UInt64, HIDEvent.Payload)] = [
            (0, .button(ButtonEvent(code: left, number: 1, isDown: true))),
            (10, .button(ButtonEvent(code: left, number: 1, isDown: false))),
            (15, .pointerMotion(PointerMotionEvent(dx: 1, dy: 0))), (30, .pointerMotion(PointerMotionEvent(dx: 1, dy: 0))),
        ]
        for (milliseconds, payload) in payloads {
            let event = HIDEvent(
                device: HIDDeviceID(rawValue: 1), timestamp: MonotonicInstant(nanoseconds: milliseconds * 1_000_000), payload: payload)
            processor.process(event) { kinds.append($0.kind.rawValue) }
        }
        #expect(kinds == ["button", "pointerMotion", "button", "pointerMotion"])
    }

    @Test("a touchpad's clicks (the touchpad stage's taps) pass undebounced and on time, as libinput debounces pointers' buttons only")
    func touchpadClicksAreNotDebounced() {
        let left = Evdev.BTN_LEFT
        let touchpad = HIDDeviceID(rawValue: 2)
        var processor = PointerProcessor(defaults: PointerSettings())
        processor.setDevice(touchpad, settings: PointerSettings(), isTouchpad: true)
        var seen: [String] = []
        // A tap: press and release 3 ms apart, then a second tap 3 ms later (a double tap).
        for (milliseconds, isDown) in [(0, true), (3, false), (6, true), (9, false)] as [(UInt64, Bool)] {
            let event = HIDEvent(
                device: touchpad, timestamp: MonotonicInstant(nanoseconds: milliseconds * 1_000_000),
                payload: .button(ButtonEvent(code: left, number: 1, isDown: isDown)))
            processor.process(event) {
                if case .button(let button) = $0.payload {
                    seen.append("\(button.isDown ? "down" : "up") \($0.timestamp.nanoseconds / 1_000_000)")
                }
            }
        }
        #expect(seen == ["down 0", "up 3", "down 6", "up 9"], "passed on as they came, none held")
        #expect(processor.nextDeadline == nil, "nothing waits for a bounce time")
    }

    @Test("spurious: a held button's release and press within the bounce time turn the method on; then such pairs within 12 ms are dropped")
    func spurious() {
        let right = Evdev.BTN_RIGHT
        let sequence: [(UInt16, Bool, Int64)] = [
            (right, true, 0), (right, false, 100), (right, true, 105),  // the first faulty pair: passed on
            (right, false, 300), (right, true, 305),  // dropped
            (right, false, 500),  // a real release, passed on 12 ms late with its own time
            (right, true, 700), (right, false, 900),
        ]
        #expect(
            buttons(sequence, settings: PointerSettings()) == [
                "BTN_RIGHT down 0", "BTN_RIGHT up 100", "BTN_RIGHT down 105", "BTN_RIGHT up 500", "BTN_RIGHT down 700", "BTN_RIGHT up 900",
            ])
        // A press 15 ms after the release (as libinput measured): not spurious, and a later
        // pair 4 ms apart is passed on.
        let slower: [(UInt16, Bool, Int64)] = [
            (right, true, 0), (right, false, 100), (right, true, 115), (right, false, 300), (right, true, 304),
        ]
        #expect(
            buttons(slower, settings: PointerSettings()) == [
                "BTN_RIGHT down 0", "BTN_RIGHT up 100", "BTN_RIGHT down 115", "BTN_RIGHT up 300", "BTN_RIGHT down 304",
            ])
        // A release–press–release after a held press is a bounce, not a spurious release:
        // a later quick release and press are both passed on.
        let bounced: [(UInt16, Bool, Int64)] = [
            (right, true, 0), (right, false, 100), (right, true, 103), (right, false, 106), (right, true, 300), (right, false, 400),
            (right, true, 405),
        ]
        #expect(
            buttons(bounced, settings: PointerSettings()) == [
                "BTN_RIGHT down 0", "BTN_RIGHT up 100", "BTN_RIGHT down 300", "BTN_RIGHT up 400", "BTN_RIGHT down 405",
            ])
    }

    @Test("middle-button emulation: left and right within 50 ms are the middle button; alone, a button comes when the time is up")
    func middleEmulation() throws {
        let (left, right) = (Evdev.BTN_LEFT, Evdev.BTN_RIGHT)
        let settings = try PointerSettings(debounce: false, middleButtonEmulation: true)
        let sequence: [(UInt16, Bool, Int64)] = [
            (left, true, 0), (right, true, 20), (left, false, 100), (right, false, 110),  // middle
            (right, true, 200), (right, false, 300),  // right alone, held
            (left, true, 400), (left, false, 420),  // a quick left click
            (Evdev.BTN_SIDE, true, 500), (Evdev.BTN_SIDE, false, 510),
        ]
        #expect(
            buttons(sequence, settings: settings) == [
                "BTN_MIDDLE down 20", "BTN_MIDDLE up 100", "BTN_RIGHT down 250", "BTN_RIGHT up 300", "BTN_LEFT down 420",
                "BTN_LEFT up 420", "BTN_SIDE down 500", "BTN_SIDE up 510",
            ])
        var off = settings
        off.middleButtonEmulation = false
        #expect(buttons(Array(sequence.prefix(2)), settings: off) == ["BTN_LEFT down 0", "BTN_RIGHT down 20"])
    }
}

@Suite("The pointer stage in the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct PointerStageTests {
    @Test(
        "a real mouse through the chain: after the screen mapping, flat deltas exactly, the cursor from where the app warped it, clicks and wheels as recorded"
    )
    func realMouseThroughTheChain() throws {
        let recording = try realRecording("mice/Ultrathin Touch Mouse.events")
        let screen = try ScreenDescription(width: 1280, height: 800)
        var order: [String] = []
        var warped = false
        let events = try runChain(recording, shape: .dedicatedThread) { system, _ in
            system.setScreens(DeviceSettingsResolver(screens: [screen]))
            // Replayed as fast as possible, the clicks come microseconds apart: debouncing
            // would rightly take them for a bouncing switch.
            system.setPointer(
                try! PointerSettings(acceleration: PointerAcceleration(profile: .flat, speed: 0.5), scrollFactor: 2, debounce: false))
            order = system.stageOrder
            system.addHandler(kinds: [.deviceAdded]) { [unowned system] _ in
                warped = system.warpCursor(to: ScreenPoint(x: 100, y: 700.5))
                return .pass
            }
        }
        #expect(order == ["screen mapping", "pointer", "handlers"])
        #expect(warped)
        var x = 100.0
        var y = 700.5
        let moved = motions(events)
        let recorded = recordedMotion(recording)
        #expect(moved.count == recorded.count && !moved.isEmpty)
        for (motion, (dx, dy)) in zip(moved, recorded) {
            x = min(max(x + 1.5 * Double(dx), 0), 1279)
            y = min(max(y + 1.5 * Double(dy), 0), 799)
            #expect(
                motion.dx == dx && motion.dy == dy && motion.acceleratedDX == 1.5 * Double(dx) && motion.acceleratedDY == 1.5 * Double(dy))
            #expect(motion.cursor == PointerCursor(location: ScreenPoint(x: x, y: y), screen: 0))
        }
        let expected = RecordedExpectations(recording)
        let scrolls = payloads(events) { if case .scroll(let s) = $0 { s } else { nil } }
        #expect(scrolls.reduce(0) { $0 + $1.vertical } == 2 * expected.scroll.vertical)
        let presses = payloads(events) { if case .button(let b) = $0, b.isDown { b.code } else { nil } }
        #expect(presses.count == expected.presses.filter { $0.key >= 0x110 && $0.key < 0x118 }.values.reduce(0, +))
    }
}
