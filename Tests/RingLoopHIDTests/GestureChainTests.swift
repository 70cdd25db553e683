import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Gesture recognizers on a live event system: recordings hosted on FUSE nodes, replayed
/// at recorded speed, read through the ring, evaluated at BeforeWaiting.
@Suite("Gesture recognizers in the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct GestureChainTests {
    /// Runs `recording` through the chain with the UIKit set and returns what its actions
    /// saw, and every HID event the handlers saw.
    static func recognize(
        _ name: String, shape: HIDEventSystem.Shape, recording override: Recording? = nil, tracks: Bool = false,
        timing: ChainTiming? = nil, prepare: @escaping (HIDEventSystem, RingRunLoop) -> Void = { _, _ in }
    ) throws -> (gestures: [GestureEvent], events: [HIDEvent]) {
        let recording = try override ?? loadGestureRecording(name)
        var gestures: [GestureEvent] = []
        let events = try runChain(recording, shape: shape, speed: .recorded, tracksInteractions: tracks, timing: timing) {
            system, loop in
            for recognizer in GestureSet.uikit.make() {
                recognizer.addAction { gestures.append($0) }
                system.addGestureRecognizer(recognizer)
            }
            prepare(system, loop)
        }
        return (gestures, events)
    }

    @Test(
        "recognition works in both chain shapes, as from memory",
        arguments: HIDEventSystem.Shape.allCases,
        ["touchscreen-swipe-left", "touchscreen-pinch-out", "touchscreen-double-tap", "touchpad-long-press", "touchpad-tap-2-fingers"])
    func bothShapes(shape: HIDEventSystem.Shape, name: String) throws {
        let timing = ChainTiming()
        let (gestures, _) = try Self.recognize(name, shape: shape, timing: timing)
        let expected = GestureRun(try loadGestureRecording(name), recognizers: GestureSet.uikit.make()).recognized
        #expect(!expected.isEmpty)
        // Taps and presses are judged by time: a replay sent late (a starved thread) is a
        // different gesture, and a frame that reaches the loop after a sudden stall is
        // unseen when a deadline passes (the documented limit). The comparison holds when
        // the run kept time.
        if timing.isTimely() {
            #expect(GestureRun.recognized(gestures) == expected, "\(timing.description)")
        } else {
            print("\(name), \(shape): the machine is loaded (\(timing.description)); recognized \(GestureRun.recognized(gestures))")
        }
        #expect(gestures.allSatisfy { $0.surface.unit == .millimetres })
    }

    @Test(
        "a loop that falls behind still sees a double tap: deadlines pass in the frames' time, not the wall clock's",
        arguments: HIDEventSystem.Shape.allCases)
    func laggingLoop(shape: HIDEventSystem.Shape) throws {
        // Once the first frame is handled, the loop's thread is busy for 400 ms: the
        // second tap (stamped ~150 ms after the first) reaches the recognizers long after
        // the double tap's interval has passed on the wall clock, as under heavy load.
        let stalled = Atomic<Bool>(false)
        let (gestures, events) = try Self.recognize("touchscreen-double-tap", shape: shape) { system, _ in
            system.addHandler(kinds: [.digitizer]) { _ in
                if !stalled.exchange(true, ordering: .relaxed) { usleep(400_000) }
                return .pass
            }
        }
        let didStall = stalled.load(ordering: .relaxed)
        #expect(didStall)
        // The taps as the node stamped them: a replay thread starved for CPU (a loaded
        // machine, a sanitizer) sends late, and then the device itself tapped too slowly
        // for a double tap (350 ms limits); the chain is right not to see one.
        var downs: [MonotonicInstant] = []
        var ups: [MonotonicInstant] = []
        for event in events {
            guard case .digitizer(let frame) = event.payload else { continue }
            for contact in frame.contacts {
                if contact.phase == .began { downs.append(event.timestamp) }
                if contact.phase == .ended { ups.append(event.timestamp) }
            }
        }
        try #require(downs.count == 2 && ups.count == 2, "\(downs.count) touches began, \(ups.count) ended")
        let limit = Duration.milliseconds(350)
        let sentInTime = ups[0] - downs[0] < limit && ups[1] - downs[1] < limit && downs[1] - ups[0] < limit
        if sentInTime {
            #expect(GestureRun.recognized(gestures) == ["doubleTap 1"])
        } else {
            print("the replay sent the taps too slowly for a double tap (the machine is loaded); nothing to check")
        }
    }

    @Test("a drag cut short by the device's removal is cancelled", arguments: HIDEventSystem.Shape.allCases)
    func removalMidGesture(shape: HIDEventSystem.Shape) throws {
        var recording = try loadGestureRecording("touchscreen-slow-drag")
        // Half the drag: the finger is still down when the device goes.
        let half = recording.events.count / 2
        let cut = recording.events[..<half].lastIndex { $0.isSynReport }! + 1
        recording.events.removeSubrange(cut...)
        let (gestures, events) = try Self.recognize("touchscreen-slow-drag", shape: shape, recording: recording)
        #expect(gestures.map(\.gesture).allSatisfy { $0 == "pan" })
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
        let (gestures, events) = try Self.recognize("touchscreen-slow-drag", shape: .clientLoop)
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
        let (gestures, _) = try Self.recognize("touchscreen-slow-drag", shape: .clientLoop, tracks: true) { _, loop in
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
        // The drag lasts 2 s; tracking starts once it has moved 3 mm and ends at the lift.
        #expect(stop - start > .milliseconds(1500), "tracked for \(stop - start)")
        let defaultDuring = defaultFires.value.filter { $0 > start && $0 < stop }.count
        let commonDuring = commonFires.value.filter { $0 > start && $0 < stop }.count
        #expect(defaultDuring == 0, "default-mode timer fired \(defaultDuring) times during the drag")
        #expect(commonDuring > 100, "common-mode timer fired \(commonDuring) times during the drag")
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
