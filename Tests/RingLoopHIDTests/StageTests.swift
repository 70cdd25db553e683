import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopHID

/// The chain as a list of stages: the order, an app's own stages (which map, split,
/// consume and hold events), and the focus as an event in order with the keys.
@Suite("The input chain's stages")
struct StageTests {
    static func key(_ code: UInt16, _ state: KeyEvent.State) -> HIDEvent {
        HIDEvent(
            device: HIDDeviceID(rawValue: 9), timestamp: .now,
            payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(code), code: code, state: state)))
    }

    /// A system reading no device (only what is posted).
    static func system(_ configuration: HIDEventSystem.Configuration = .init(), loop: RingRunLoop) -> HIDEventSystem {
        var configuration = configuration
        configuration.input = .postedOnly
        return HIDEventSystem(configuration: configuration, loop: loop)
    }

    /// KEY_A becomes KEY_B, KEY_C is consumed, KEY_D becomes two events.
    final class Remap: HIDEventStage {
        var installed = 0
        func install(in context: HIDStageContext) { installed += 1 }
        func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
            guard case .key(var key) = event.payload else { return emit(event) }
            switch key.code {
            case Evdev.KEY_A:
                key.code = Evdev.KEY_B
                var mapped = event
                mapped.payload = .key(key)
                emit(mapped)
            case Evdev.KEY_C: return
            case Evdev.KEY_D:
                emit(event)
                emit(event)
            default: emit(event)
            }
        }
    }

    /// Holds every key until the loop is about to wait, or until it leaves.
    final class HoldUntilWaiting: HIDEventStage {
        var held: [HIDEvent] = []
        var released = 0
        func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
            guard event.kind == .key else { return emit(event) }
            held.append(event)
        }
        func beforeWaiting(emit: (HIDEvent) -> Void) { flush(emit) }
        func remove(emit: (HIDEvent) -> Void) { flush(emit) }
        private func flush(_ emit: (HIDEvent) -> Void) {
            for event in held { emit(event) }
            released += held.count
            held = []
        }
    }

    @Test("the stages in order: the library's as configured, the app's in the order added, then the handlers")
    func order() throws {
        let orders = try onFreshThread { () throws -> [[String]] in
            let loop = RingRunLoop.current
            let system = Self.system(.init(keyRepeat: (.milliseconds(500), .milliseconds(30)), coalesceMotion: true), loop: loop)
            var orders = [system.stageOrder]
            try system.start()
            orders.append(system.stageOrder)
            let first = Remap()
            let second = HoldUntilWaiting()
            system.addStage(first)
            system.addStage(second)
            system.addGestureRecognizer(TapGestureRecognizer(taps: 1, fingers: 1))
            system.addMotionRecognizer(ShakeRecognizer())
            orders.append(system.stageOrder)
            #expect(first.installed == 1, "a stage added to a started system is installed once")
            system.removeStage(first)
            orders.append(system.stageOrder)
            system.stop()
            orders.append(system.stageOrder)
            return orders
        }
        #expect(orders[0] == ["handlers"])
        #expect(orders[1] == ["key repeat", "coalescing", "handlers"])
        #expect(
            orders[2] == [
                "motion", "key repeat", "coalescing", "gestures", "Remap", "HoldUntilWaiting", "handlers",
            ])
        #expect(orders[3] == ["motion", "key repeat", "coalescing", "gestures", "HoldUntilWaiting", "handlers"])
        #expect(orders[4] == ["handlers"], "stop lets the stages go, as it does handlers")
    }

    @Test("an app's stage maps, consumes and splits events before any handler sees them; removed, it maps no more")
    func remap() throws {
        let seen = try onFreshThread { () throws -> [String] in
            let loop = RingRunLoop.current
            let system = Self.system(loop: loop)
            var seen: [String] = []
            system.addHandler(kinds: [.key]) { event in
                if case .key(let key) = event.payload { seen.append("\(key.codeName) \(key.state)") }
                return .pass
            }
            try system.start()
            defer { system.stop() }
            let remap = Remap()
            system.addStage(remap)
            for code in [Evdev.KEY_A, Evdev.KEY_C, Evdev.KEY_D] { try system.post(Self.key(code, .down)) }
            #expect(runUntil(loop) { seen.count == 3 })
            system.removeStage(remap)
            try system.post(Self.key(Evdev.KEY_A, .up))
            #expect(runUntil(loop) { seen.count == 4 })
            return seen
        }
        #expect(seen == ["KEY_B down", "KEY_D down", "KEY_D down", "KEY_A up"])
    }

    /// Counts the key events `system`'s handlers get, and keeps the count at the first
    /// BeforeWaiting where `ready` (given the count) holds, read by an observer of the
    /// app's after the stages' turn (a Sendable closure on the loop's thread). The
    /// observer is the caller's to invalidate.
    static func countKeysAtWaiting(
        _ system: HIDEventSystem, loop: RingRunLoop, when ready: @escaping @Sendable (Int) -> Bool
    ) -> (keys: LoopBound<Int>, whenWaiting: LoopBound<Int>, observer: LoopObserver) {
        let keys = LoopBound(0, loop: loop)
        let keysWhenWaiting = LoopBound(-1, loop: loop)
        system.addHandler(kinds: [.key]) { _ in
            keys.value += 1
            return .pass
        }
        let observer = LoopObserver(activities: [.beforeWaiting], order: Int.max) { _, _ in
            if keysWhenWaiting.value < 0, ready(keys.value) { keysWhenWaiting.value = keys.value }
        }
        loop.add(observer, to: .common)
        return (keys, keysWhenWaiting, observer)
    }

    @Test("a stage that holds events passes them on at BeforeWaiting, and what it holds when the system stops")
    func holding() throws {
        let (atWait, atStop, released) = try onFreshThread { () throws -> (Int, Int, Int) in
            let loop = RingRunLoop.current
            let system = Self.system(loop: loop)
            let hold = HoldUntilWaiting()
            system.addStage(hold)
            try system.start()
            let (keys, keysWhenWaiting, observer) = Self.countKeysAtWaiting(system, loop: loop) { $0 > 0 }
            defer { observer.invalidate() }
            try system.post(Self.key(Evdev.KEY_A, .down))
            try system.post(Self.key(Evdev.KEY_A, .up))
            #expect(runUntil(loop) { keysWhenWaiting.value >= 0 })
            // Queued, then the system stops before the loop runs again: stop drains the queue
            // into the stage, which passes on what it holds as it leaves.
            try system.post(Self.key(Evdev.KEY_B, .down))
            let beforeStop = keys.value
            system.stop()
            return (keysWhenWaiting.value, keys.value - beforeStop, hold.released)
        }
        #expect(atWait == 2, "both keys reached the handlers in the pass's BeforeWaiting")
        #expect(atStop == 1 && released == 3, "the key held when the system stopped reached the handlers")
    }

    /// A stage that passes everything on.
    final class PassThrough: HIDEventStage {
        func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) { emit(event) }
    }

    /// At its BeforeWaiting turn, hands `pending` to the stages after `emitter` (as the
    /// touchpad's held events go on at the recognizers' turn), then takes `removed` out.
    final class EmitAfterThenRemove: HIDEventStage {
        var context: HIDStageContext?
        var pending: HIDEvent?
        var emitter: (any HIDEventStage)?
        var removed: (any HIDEventStage)?
        var fired = false
        func install(in context: HIDStageContext) { self.context = context }
        func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) { emit(event) }
        func beforeWaiting(emit: (HIDEvent) -> Void) {
            guard let context, let event = pending, let emitter, let removed else { return }
            pending = nil
            context.emit(event, after: emitter)
            context.system.removeStage(removed)
            fired = true
        }
    }

    @Test(
        "an event handed on after a stage whose BeforeWaiting turn has passed reaches the handlers in the same BeforeWaiting, once, even when a stage before it is taken out during the round"
    )
    func turnAgainAfterStagesChange() throws {
        let (atWait, released) = try onFreshThread { () throws -> (Int, Int) in
            let loop = RingRunLoop.current
            let system = Self.system(loop: loop)
            // [first, emitter, hold, late, handlers]: late's turn hands a key on after the
            // emitter (hold takes it, its turn passed) and takes `first` out, which moves
            // every index of the stages after it.
            let first = PassThrough()
            let emitter = PassThrough()
            let hold = HoldUntilWaiting()
            let late = EmitAfterThenRemove()
            for stage in [first, emitter, hold, late] as [any HIDEventStage] { system.addStage(stage) }
            try system.start()
            (late.pending, late.emitter, late.removed) = (Self.key(Evdev.KEY_A, .down), emitter, first)
            let lateStage = LoopBound(onLoopThread: late, loop: loop)
            let (_, keysWhenWaiting, observer) = Self.countKeysAtWaiting(system, loop: loop) { _ in lateStage.value.fired }
            defer { observer.invalidate() }
            #expect(runUntil(loop) { keysWhenWaiting.value >= 0 })
            system.stop()
            return (keysWhenWaiting.value, hold.released)
        }
        // Before, the next round started at the index the hold stage had before `first`
        // went (2), which was now the late stage's: the key stayed in the hold stage while
        // the loop waited.
        #expect(atWait == 1, "the key reached the handlers once in that BeforeWaiting")
        #expect(released == 1)
    }

    @Test("events print as the command prints them")
    func descriptions() {
        let key = HIDEvent(
            device: HIDDeviceID(rawValue: 3), timestamp: .now,
            payload: .key(KeyEvent(usage: HIDUsage.forLinuxKey(Evdev.KEY_A), code: Evdev.KEY_A, state: .down, modifiers: .leftShift)))
        #expect("\(key)" == "device 3: key KEY_A down usage 0x7:0x4 modifiers 0x02")
        #expect("\(HIDEvent.Payload.button(ButtonEvent(code: Evdev.BTN_LEFT, number: 1, isDown: true)))" == "button 1 (BTN_LEFT) down")
        #expect("\(HIDEvent.Payload.pointerMotion(PointerMotionEvent(dx: 3, dy: -1)))" == "motion 3 -1")
        #expect("\(HIDEvent.Payload.focusChanged(isFocused: false))" == "focus lost")
        #expect(SwitchEvent(code: Evdev.SW_LID, isOn: true).codeName == "SW_LID")
    }
}
