import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The touchpad stage beside the stages after it (coalescing, the recognizers): real
/// touchpad recordings through a stream device, what the handlers see and when.
@Suite("The touchpad stage in the pipeline")
struct TouchpadPipelineTests {
    /// What the handlers saw of the pad: its pointer events (motion, buttons, scrolling)
    /// in order, with their stamps.
    final class Seen {
        var frames = 0
        /// The stamps of the pad's frames, in order.
        var frameStamps: [MonotonicInstant] = []
        /// The stamp of the last frame in which a contact ended.
        var lastLift: MonotonicInstant?
        var pointer: [HIDEvent] = []
        var motionDX: Int64 { pointer.reduce(0) { if case .pointerMotion(let m) = $1.payload { $0 + Int64(m.dx) } else { $0 } } }
        var motionDY: Int64 { pointer.reduce(0) { if case .pointerMotion(let m) = $1.payload { $0 + Int64(m.dy) } else { $0 } } }
        /// The normalized motion (the touchpad's millimetres at 1000 dpi), summed.
        var motion: (x: Double, y: Double) {
            pointer.reduce((0.0, 0.0)) {
                if case .pointerMotion(let m) = $1.payload { ($0.0 + m.acceleratedDX, $0.1 + m.acceleratedDY) } else { $0 }
            }
        }
        var buttons: [HIDEvent] { pointer.filter { $0.kind == .button } }
    }

    /// A system on `loop` with `settings` for touchpads, `configuration`'s stages and
    /// `recognizers`; its handler fills `seen`.
    static func system(
        _ configuration: HIDEventSystem.Configuration, settings: TouchpadSettings, recognizers: [GestureRecognizer],
        seen: LoopBound<Seen>, loop: RingRunLoop
    ) throws -> HIDEventSystem {
        let system = StageTests.system(configuration, loop: loop)
        system.addHandler { event in
            switch event.payload {
            case .digitizer(let frame):
                seen.value.frames += 1
                seen.value.frameStamps.append(event.timestamp)
                if (0..<frame.count).contains(where: { frame[$0].phase == .ended }) { seen.value.lastLift = event.timestamp }
            case .pointerMotion, .button, .scroll: seen.value.pointer.append(event)
            default: break
            }
            return .pass
        }
        for recognizer in recognizers { system.addGestureRecognizer(recognizer) }
        system.setTouchpadSettings(settings)
        try system.start()
        return system
    }

    /// The events of `recording` up to the end of its frame in the middle: a finger still
    /// moving, so that nothing after it passes on what a stage holds.
    static func toMidFrame(of recording: Recording) -> [InputEvent] {
        let reports = recording.events.indices.filter { recording.events[$0].isSynReport }
        return Array(recording.events[...reports[reports.count / 2]])
    }

    @Test(
        "with coalescing and recognizers, the touchpad's motion that the recognizers' evaluation releases reaches the handlers before the loop waits"
    )
    func motionReachesHandlersBeforeWaiting() throws {
        let recording = try touchpadRecording("SynPS2 Synaptics TouchPad.leftmove.events")
        let events = Self.toMidFrame(of: recording)
        let frames = events.filter(\.isSynReport).count
        let settings = TouchpadSettings(tapping: true)
        // The pointer motion the pad makes of these frames: the stage alone.
        let alone = try onFreshThread { () throws -> Seen in
            let loop = RingRunLoop.current
            let seen = LoopBound(Seen(), loop: loop)
            let system = try Self.system(.init(), settings: settings, recognizers: [], seen: seen, loop: loop)
            let stream = try GestureStream(recording, to: system, firstAt: .now)
            stream.send(events)
            #expect(runUntil(loop) { seen.value.frames >= frames })
            stream.close()
            system.stop()
            return seen.value
        }
        #expect(alone.pointer.count > 20)
        // The same with coalescing and recognizers: what the handlers have when the loop
        // is about to wait after the recognizers saw the last frame (an app's observer,
        // after the stages' turn, which then stops the run), before any other input could
        // push it on.
        let atWait = try onFreshThread { () throws -> Seen? in
            let loop = RingRunLoop.current
            let seen = LoopBound(Seen(), loop: loop)
            let atWait = LoopBound<Seen?>(nil, loop: loop)
            let pan = PanGestureRecognizer(kind: .pan)
            pan.cancelsTouchesInHandlers = false
            let system = try Self.system(
                .init(coalesceMotion: true), settings: settings, recognizers: [pan], seen: seen, loop: loop)
            #expect(system.stageOrder == ["touchpad", "coalescing", "gestures", "handlers"])
            let stream = try GestureStream(recording, to: system, firstAt: .now)
            let last = try #require(stream.lastFrameStamp(of: events, info: deviceInfo(of: recording)))
            let arena = LoopBound(onLoopThread: try #require(system.gestures?.arena), loop: loop)
            let device = stream.device
            let observer = LoopObserver(activities: [.beforeWaiting], order: HIDEventPipeline.observerOrder + 1) { _, _ in
                guard atWait.value == nil, arena.value.latestFrameTime(of: device) == last else { return }
                let copy = Seen()
                copy.pointer = seen.value.pointer
                atWait.value = copy
                loop.stop()
            }
            loop.add(observer, to: .common)
            defer { observer.invalidate() }
            stream.send(events)
            // One run, as an app's loop runs, without the exits between passes of
            // `runUntil`'s runs (the stages take their BeforeWaiting turn at an exit too).
            _ = loop.run(mode: .default, for: TestWait.bound)
            #expect(atWait.value != nil)
            stream.close()
            system.stop()
            return atWait.value
        }
        let seen = try #require(atWait)
        #expect(
            seen.motionDX == alone.motionDX && seen.motionDY == alone.motionDY,
            "\(seen.motionDX),\(seen.motionDY) of \(alone.motionDX),\(alone.motionDY), \(seen.pointer.count) of \(alone.pointer.count) events"
        )
        #expect(
            abs(seen.motion.x - alone.motion.x) < 1e-6 && abs(seen.motion.y - alone.motion.y) < 1e-6,
            "\(seen.motion) of \(alone.motion), \(seen.pointer.count) events")
    }

    /// Plays `file` into a system with the touchpad stage, `recognizers` and coalescing as
    /// asked, until `done`; what the handlers saw.
    func play(
        _ recording: Recording, settings: TouchpadSettings, recognizers: [GestureRecognizer] = [],
        coalesceMotion: Bool = false, until done: @escaping (Seen) -> Bool
    ) throws -> Seen {
        try onFreshThread { () throws -> Seen in
            let loop = RingRunLoop.current
            let seen = LoopBound(Seen(), loop: loop)
            let system = try Self.system(
                .init(coalesceMotion: coalesceMotion), settings: settings, recognizers: recognizers, seen: seen, loop: loop)
            let stream = try GestureStream(recording, to: system, firstAt: .now)
            stream.send(recording.events)
            #expect(runUntil(loop) { done(seen.value) })
            stream.close()
            system.stop()
            return seen.value
        }
    }

    @Test(
        "the pointer events a touchpad makes reach the handlers with non-decreasing stamps, also the clicks released after the recognizers' evaluation",
        arguments: [false, true])
    func stampsNeverGoBack(recognizers: Bool) throws {
        // Two taps of one finger, which moves a little on the pad: a double click, the
        // fingers' motion between its buttons.
        let recording = try touchpadRecording("AlpsPS2 ALPS GlidePoint.double-tap.events")
        let twoFingerTap = TapGestureRecognizer(taps: 1, fingers: 2)
        twoFingerTap.cancelsTouchesInHandlers = false
        let settings = TouchpadSettings(tapping: true)
        let seen = try play(recording, settings: settings, recognizers: recognizers ? [twoFingerTap] : []) {
            $0.buttons.count == 4
        }
        #expect(seen.buttons.map(\.description).map { $0.hasSuffix("down") } == [true, false, true, false])
        #expect(seen.pointer.contains { $0.kind == .pointerMotion })
        let backwards = zip(seen.pointer, seen.pointer.dropFirst()).filter { $1.timestamp < $0.timestamp }
        #expect(backwards.isEmpty, "\(backwards.prefix(3).map { "\($0.0) at \($0.0.timestamp), then \($0.1) at \($0.1.timestamp)" })")
        // Each carries the stamp of what made it: a motion its frame's, a button its
        // frame's or the due time of the timeout that released it (a frame's time and the
        // tap or drag-lock timeout) — never the time it went out, which the order alone
        // would not show (a stamp is never earlier than the pad's previous one).
        let frames = Set(seen.frameStamps.map(\.nanoseconds))
        let dueTimes = Set(
            seen.frameStamps.flatMap { [($0 + settings.tapTimeout).nanoseconds, ($0 + settings.dragLockTimeout).nanoseconds] })
        for event in seen.pointer {
            let stamp = event.timestamp.nanoseconds
            let isMade = frames.contains(stamp) || (event.kind == .button && dueTimes.contains(stamp))
            #expect(isMade, "\(event) at \(event.timestamp): no frame's stamp nor a timeout's due time")
        }
    }

    @Test(
        "a tap's button released by the tap timeout carries the timeout's due time: the tap's time and the timeout",
        arguments: [false, true])
    func tapReleaseAtItsDueTime(recognizers: Bool) throws {
        let recording = try touchpadRecording("AlpsPS2 ALPS GlidePoint.single-tap.events")
        let settings = TouchpadSettings(tapping: true)
        let twoFingerTap = TapGestureRecognizer(taps: 1, fingers: 2)
        let seen = try play(recording, settings: settings, recognizers: recognizers ? [twoFingerTap] : []) {
            $0.buttons.count == 2
        }
        let buttons = seen.buttons
        try #require(buttons.count == 2)
        // The press carries the stamp of the frame that lifted the finger, the release the
        // time the tap timeout ran out (not the moment the loop's timer got to it).
        let lift = try #require(seen.lastLift)
        #expect(buttons[0].timestamp == lift, "\(buttons[0].timestamp - lift)")
        #expect(buttons[1].timestamp == lift + settings.tapTimeout, "\(buttons[1].timestamp - lift)")
    }
}
