import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Gesture recognizers on a live event system: recordings sent as stream devices with
/// their own stamps (all at once, or at their recorded pace from another thread), read
/// through the ring, evaluated at BeforeWaiting.
// Not under AddressSanitizer: slowed several times over, the chain's live runs saw a
// gesture other than the pan once and fewer common-mode timer firings during a drag
// another time; the plain and ThreadSanitizer runs check every test here.
@Suite(
    "Gesture recognizers in the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing),
    .disabled(if: runningUnderAddressSanitizer))
struct GestureChainTests {
    /// Runs `recording` through the chain with the UIKit set, written at its own pace as a
    /// stream device with its own stamps (``playPacedGestureStream(_:to:loop:)``), and
    /// returns what its actions saw, every HID event the handlers saw, and when the frame
    /// that lifted the last finger was written (`nil` if none did).
    static func recognize(
        _ name: String, shape: HIDEventSystem.Shape, recording override: Recording? = nil, tracks: Bool = false,
        prepare: @escaping (HIDEventSystem, RingRunLoop) -> Void = { _, _ in }
    ) throws -> (gestures: [GestureEvent], events: [HIDEvent], liftWritten: MonotonicInstant?) {
        let recording = try override ?? loadGestureRecording(name)
        return try onFreshThread {
            let loop = RingRunLoop.current
            let system = HIDEventSystem(
                configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: [], tracksInteractions: tracks), loop: loop)
            var gestures: [GestureEvent] = []
            var events: [HIDEvent] = []
            system.addHandler { event in
                events.append(event)
                return .pass
            }
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                system.addGestureRecognizer(recognizer)
            }
            prepare(system, loop)
            try system.start()
            defer { system.stop() }
            let liftWritten = try playPacedGestureStream(recording, to: system, loop: loop)
            #expect(system.problems.isEmpty, "\(system.problems)")
            return (gestures, events, liftWritten)
        }
    }

    /// Runs `recording` through the chain with the UIKit set as a stream device with the
    /// recording's own stamps (``GestureStream``) and returns what the actions saw.
    static func recognizeStream(_ recording: Recording, shape: HIDEventSystem.Shape) throws -> [GestureEvent] {
        try onFreshThread {
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var gestures: [GestureEvent] = []
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                system.addGestureRecognizer(recognizer)
            }
            try system.start()
            defer { system.stop() }
            try playGestureStream(recording, to: system, loop: loop)
            return gestures
        }
    }

    @Test(
        "recognition works in both chain shapes, as from memory",
        arguments: HIDEventSystem.Shape.allCases,
        ["touchscreen-swipe-left", "touchscreen-pinch-out", "touchscreen-double-tap", "touchpad-long-press", "touchpad-tap-2-fingers"])
    func bothShapes(shape: HIDEventSystem.Shape, name: String) throws {
        let recording = try loadGestureRecording(name)
        let gestures = try Self.recognizeStream(recording, shape: shape)
        let expected = GestureRun(recording, recognizers: GestureSet.uikit.make()).recognized
        #expect(!expected.isEmpty)
        #expect(GestureRun.recognized(gestures) == expected)
        #expect(gestures.allSatisfy { $0.surface.unit == .millimetres })
    }

    @Test(
        "a loop that falls behind still sees a double tap: deadlines pass in the frames' time, not the wall clock's",
        arguments: HIDEventSystem.Shape.allCases)
    func laggingLoop(shape: HIDEventSystem.Shape) throws {
        // The first tap is in the stream, stamped as sent from 100 ms ago. Its first frame's
        // handler keeps the loop busy for 400 ms, and then the second tap arrives (stamped
        // 150 ms after the first tap's lift): the double tap's interval has passed on the
        // wall clock long before, as under heavy load, but not in the frames' time.
        let recording = try loadGestureRecording("touchscreen-double-tap")
        let firstLift = try #require(recording.events.firstIndex { $0.type == Evdev.EV_KEY && $0.code == Evdev.BTN_TOUCH && $0.value == 0 })
        let firstLiftEnd = try #require(recording.events[firstLift...].firstIndex { $0.isSynReport })
        let split = firstLiftEnd + 1
        let (gestures, stalled) = try onFreshThread { () throws -> ([GestureEvent], Bool) in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", shape: shape, nodeNames: []), loop: loop)
            var gestures: [GestureEvent] = []
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                system.addGestureRecognizer(recognizer)
            }
            var stream: GestureStream?
            var stalled = false
            system.addHandler(kinds: [.digitizer]) { _ in
                if !stalled {
                    stalled = true
                    usleep(400_000)
                    stream?.send(recording.events[split...])
                }
                return .pass
            }
            var removed = false
            system.addHandler(kinds: [.deviceRemoved]) { _ in
                removed = true
                return .pass
            }
            try system.start()
            defer { system.stop() }
            let attached = try GestureStream(recording, to: system, firstAt: MonotonicInstant.now.advanced(by: .milliseconds(-100)))
            stream = attached
            attached.send(recording.events[..<split])
            let last = try #require(attached.lastFrameStamp(of: recording.events, info: deviceInfo(of: recording)))
            #expect(runUntil(loop) { attached.isSettled(in: system, through: last) }, "the recognizers never settled")
            attached.close()
            #expect(runUntil(loop) { removed })
            return (gestures, stalled)
        }
        #expect(stalled)
        #expect(GestureRun.recognized(gestures) == ["doubleTap 1"])
    }

    @Test("a drag cut short by the device's removal is cancelled", arguments: HIDEventSystem.Shape.allCases)
    func removalMidGesture(shape: HIDEventSystem.Shape) throws {
        var recording = try loadGestureRecording("touchscreen-slow-drag")
        // Half the drag: the finger is still down when the device goes.
        let half = recording.events.count / 2
        let cut = recording.events[..<half].lastIndex { $0.isSynReport }! + 1
        recording.events.removeSubrange(cut...)
        let (gestures, events, _) = try Self.recognize("touchscreen-slow-drag", shape: shape, recording: recording)
        #expect(gestures.map(\.gesture).allSatisfy { $0 == .pan })
        #expect(gestures.first?.state == .began)
        #expect(gestures.last?.state == .cancelled)
        // The handlers had the touch taken back when the pan began, so the removal's
        // cancellation of it is not delivered twice.
        let cancelled = events.flatMap { event -> [Contact] in
            guard case .digitizer(let frame) = event.payload else { return [] }
            return frame.contacts.filter { $0.phase == .cancelled }
        }
        #expect(cancelled.count == 1)
    }

    @Test("handlers see a touch cancelled when a recognizer begins with it, and nothing more of it")
    func touchesCancelledInHandlers() throws {
        let (gestures, events, _) = try Self.recognize("touchscreen-slow-drag", shape: .clientLoop)
        #expect(GestureRun.recognized(gestures) == ["pan 1"])
        var phases: [Contact.Phase] = []
        for event in events {
            if case .digitizer(let frame) = event.payload { phases += frame.contacts.map(\.phase) }
        }
        #expect(phases.first == .began)
        #expect(phases.last == .cancelled, "the last phase handlers saw: \(phases.last.map { "\($0)" } ?? "none")")
        #expect(phases.filter { $0 == .cancelled }.count == 1)
        #expect(!phases.contains(.ended))
        let pan = try #require(gestures.first { $0.state == .began })
        let moves = phases.filter { $0 == .moved }.count
        #expect(moves > 0 && moves < 150, "frames of the drag before the pan began (\(moves)), not all 200")
        _ = pan
    }

    /// The seeds' scroll-view example: a timer in the default mode pauses while the user
    /// drags, one in the common modes keeps firing.
    @Test("during a recorded drag the loop runs in the tracking mode: default-mode timers wait, common ones fire")
    func trackingMode() throws {
        let spans = JoinedBox<[(MonotonicInstant, MonotonicInstant?)]>([])
        let defaultFires = JoinedBox<[MonotonicInstant]>([])
        let commonFires = JoinedBox<[MonotonicInstant]>([])
        let modesSeen = JoinedBox<Set<RingRunLoop.Mode>>([])
        let (gestures, _, liftWritten) = try Self.recognize("touchscreen-slow-drag", shape: .clientLoop, tracks: true) { _, loop in
            let inDefault = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
                defaultFires.value.append(.now)
            }
            let inCommon = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
                commonFires.value.append(.now)
                if let mode = RingRunLoop.current.currentMode { modesSeen.value.insert(mode) }
            }
            loop.add(inDefault, to: .default)
            loop.add(inCommon, to: .common)
            let tracking = LoopObserver(activities: [.entry, .exit]) { _, activity in
                if activity == .entry {
                    spans.value.append((.now, nil))
                } else {
                    spans.value[spans.value.count - 1].1 = .now
                }
            }
            loop.add(tracking, to: .tracking)
        }
        #expect(GestureRun.recognized(gestures) == ["pan 1"])
        #expect(spans.value.count == 1, "one tracking run for one drag: \(spans.value.count)")
        let (start, end) = try #require(spans.value.first)
        let stop = try #require(end)
        // Tracking starts once the drag has moved 3 mm and ends at the lift: it began
        // before the lift was written and ended after that writing began (not a wall-clock
        // length, which a writer late on a loaded machine shortens).
        let lift = try #require(liftWritten, "the recording has no lift")
        #expect(start < lift && stop >= lift, "tracked \(start)–\(stop), lift written at \(lift)")
        let defaultDuring = defaultFires.value.filter { $0 > start && $0 < stop }.count
        let commonDuring = commonFires.value.filter { $0 > start && $0 < stop }.count
        #expect(defaultDuring == 0, "default-mode timer fired \(defaultDuring) times during the drag")
        #expect(commonDuring > 0, "common-mode timer fired \(commonDuring) times during the drag")
        #expect(defaultFires.value.contains { $0 > stop }, "the default-mode timer fires again after the drag")
        #expect(modesSeen.value.contains(.tracking))
    }
}

/// State written by callbacks on the chain's thread and read once that thread is joined.
final class JoinedBox<T>: @unchecked Sendable {
    // @unchecked: one thread writes; the reader runs after pthread_join, which orders it.
    var value: T
    init(_ value: T) { self.value = value }
}

/// Plays `recording` into `system` (started, on the current thread's loop) as a
/// ``GestureStream`` written from another thread at the recording's own pace, as the
/// device sends it, each frame carrying its recorded time placed ``gestureStreamLead``
/// after its writing: a writer late on a loaded machine changes when frames arrive, not
/// what they say, so the recognizers see the recorded motion (a FUSE node stamps frames
/// when they are sent, and a late writer's burst of frames reads as a fling), and a
/// deadline a frame sets passes on the clock only after the frames before it are in.
/// Runs until the recognizers have seen the last frame (and wait for no deadline, unless
/// a finger is still down then), ends the stream and waits for the device's removal.
/// Returns when the writing of the frame that lifted the last finger began (`nil`: none
/// did).
func playPacedGestureStream(_ recording: Recording, to system: HIDEventSystem, loop: RingRunLoop) throws -> MonotonicInstant? {
    var removed = false
    let token = system.addHandler(kinds: [.deviceRemoved]) { _ in
        removed = true
        return .pass
    }
    defer { system.removeHandler(token) }
    var frames: [[InputEvent]] = [[]]
    for event in recording.events {
        frames[frames.count - 1].append(event)
        if event.isSynReport { frames.append([]) }
    }
    frames.removeAll { $0.isEmpty }
    let lifts: @Sendable ([InputEvent]) -> Bool = { frame in
        frame.contains { $0.type == Evdev.EV_KEY && $0.code == Evdev.BTN_TOUCH && $0.value == 0 }
    }
    let endsLifted = frames.last { $0.contains { $0.type == Evdev.EV_KEY && $0.code == Evdev.BTN_TOUCH } }.map(lifts) ?? true
    let writeStart = MonotonicInstant.now
    let stream = try GestureStream(recording, to: system, firstAt: writeStart + gestureStreamLead)
    let last = try #require(stream.lastFrameStamp(of: recording.events, info: deviceInfo(of: recording)))
    let first = recording.events.first?.timeMicroseconds ?? 0
    let written = Atomic<Bool>(false)
    let liftWritten = Mutex<MonotonicInstant?>(nil)
    let writer = LoopThread(name: "gesture writer")
    let toWrite = UncheckedBox((stream, frames))
    writer.perform {
        let (stream, frames) = toWrite.value
        for frame in frames {
            let due = writeStart + .microseconds(frame[0].timeMicroseconds - first)
            let now = MonotonicInstant.now
            if due > now { usleep(UInt32((due - now) / .microseconds(1))) }
            let writing = MonotonicInstant.now  // the loop can read the frame from here on
            stream.send(frame)
            if lifts(frame) { liftWritten.withLock { $0 = writing } }
        }
        written.store(true, ordering: .releasing)
        loop.wakeUp()
    }
    #expect(
        runUntil(loop, timeout: TestWait.bound + .seconds(10)) {
            guard written.load(ordering: .acquiring), let arena = system.gestures?.arena else { return false }
            return arena.latestFrameTime(of: stream.device) == last && (arena.nextDeadline == nil || !endsLifted)
        }, "the recognizers never settled")
    writer.stopAndJoin()
    stream.close()
    #expect(runUntil(loop) { removed }, "the stream's end did not remove the device")
    return liftWritten.withLock { $0 }
}
