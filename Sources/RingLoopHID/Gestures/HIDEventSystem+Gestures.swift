import RingLoop

/// The event system's gesture machinery (client loop thread only): the frames of the
/// current pass, the arena, the observer that evaluates at BeforeWaiting, the timer for
/// recognizers' deadlines, touches withheld from handlers, and the tracking run.
final class GestureMachinery {
    enum Pending {
        case frame(HIDDeviceID, MonotonicInstant, DigitizerFrame)
        case removed(HIDDeviceID)
    }

    /// Frames a pass buffers before they are evaluated without waiting for BeforeWaiting.
    static let passCapacity = 256
    /// Orders the observer after motion coalescing's (which flushes held frames first), as
    /// UIKit's gesture observer comes after its other BeforeWaiting work.
    static let observerOrder = 2_000_000

    let arena = GestureArena()
    var pending: [Pending] = []
    var surfaces: [(HIDDeviceID, GestureSurface)] = []
    /// Touches handlers no longer see: a recognizer that cancels touches began with them.
    var withheld: [(HIDDeviceID, Int32)] = []
    var observer: LoopObserver?
    var timer: LoopTimer?
    var armedDeadline: MonotonicInstant?
    /// How far behind the frames the loop has been (now − the kernel's stamp of a frame
    /// as it is evaluated), 0 to ``maximumLag``: the largest lag of the last second, else
    /// the last frame's. Deadlines pass this much after they are due, so that frames
    /// stamped before a deadline but still on their way (a loop busy for a while, a
    /// reader or queue behind) are seen first, as libinput reads its devices before its
    /// timers.
    var inputLag: Duration = .zero
    /// When ``inputLag`` was last raised.
    var inputLagSince = MonotonicInstant(nanoseconds: 0)
    /// Lags beyond this are taken as clocks that cannot be compared (a device stamping
    /// on another clock), not as a loop that far behind.
    static let maximumLag: Duration = .seconds(2)
    var evaluating = false
    /// The recognizer behind tracking (any drag), when the configuration asks for it.
    var dragRecognizer: PanGestureRecognizer?
    var trackingSource: LoopSource?
    var trackingWanted = false
    var inTrackingRun = false
    /// Gestures the arena reported, for ``HIDEventSystem/gestureStatistics``.
    var reported = 0

    init() {
        pending.reserveCapacity(Self.passCapacity)
        withheld.reserveCapacity(32)
    }

    func surface(of device: HIDDeviceID) -> GestureSurface? {
        for (id, surface) in surfaces where id == device { return surface }
        return nil
    }

    func isWithheld(_ device: HIDDeviceID, _ id: Int32) -> Bool {
        for entry in withheld where entry.0 == device && entry.1 == id { return true }
        return false
    }
}

extension HIDEventSystem {
    // MARK: Gesture recognizers

    /// Attaches a gesture recognizer to the digitizer stream (touchscreens and touchpads).
    ///
    /// Frames are collected as they are dispatched and evaluated in an observer at
    /// BeforeWaiting (after motion coalescing), as UIKit's
    /// `_UIGestureRecognizerUpdateObserver` does; the recognizers' actions run there, in
    /// the order their states changed. A timer wakes the loop for deadlines (a long
    /// press, a tap's time limit). Recognizers that begin with
    /// ``GestureRecognizer/cancelsTouchesInHandlers`` make the handlers see their touches
    /// cancelled, and no more of them. Client loop thread; before or after ``start()``.
    /// ``stop()`` cancels gestures under way and lets every recognizer go, as it does
    /// handlers: add them again after a new start.
    public func addGestureRecognizer(_ recognizer: GestureRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.addGestureRecognizer")
        let machinery = gestureMachinery()
        machinery.arena.add(recognizer)
        installGestureItems(machinery)
    }

    /// Detaches a recognizer (one under way is cancelled first).
    public func removeGestureRecognizer(_ recognizer: GestureRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeGestureRecognizer")
        guard let machinery = gestures else { return }
        machinery.arena.remove(recognizer)
        deliverGestureOutput(machinery)
    }

    /// The attached recognizers, in the order they were added.
    public var gestureRecognizers: [GestureRecognizer] {
        (gestures?.arena.recognizers ?? []).filter { $0 !== gestures?.dragRecognizer }
    }

    /// Whether the loop runs in `RingRunLoop.Mode.tracking` for a drag right now.
    public var isTracking: Bool { gestures?.inTrackingRun ?? false }

    func gestureMachinery() -> GestureMachinery {
        if let gestures { return gestures }
        let machinery = GestureMachinery()
        gestures = machinery
        return machinery
    }

    /// Adds the observer, the deadline timer and, when tracking, the drag recognizer and
    /// the tracking source (once the system is started).
    func installGestureItems(_ machinery: GestureMachinery) {
        guard dispatchSource != nil, machinery.observer == nil else { return }
        let system = UnownedLoopReference(self, loop: loop)
        let observer = LoopObserver(
            activities: [.beforeWaiting, .exit], order: GestureMachinery.observerOrder, label: "HIDEventSystem gestures"
        ) { _, _ in
            system.value.evaluateGestures()
        }
        machinery.observer = observer
        loop.add(observer, to: .common)
        // Fires only to wake the loop: the observer evaluates deadlines at BeforeWaiting.
        let timer = LoopTimer(fireDate: .distantFuture, interval: .seconds(86_400 * 365)) { _ in }
        machinery.timer = timer
        loop.add(timer, to: .common)
        if configuration.tracksInteractions {
            loop.addCommonMode(.tracking)
            let drag = PanGestureRecognizer(kind: .drag)
            drag.isSimultaneousWithAll = true
            drag.cancelsTouchesInHandlers = false
            machinery.dragRecognizer = drag
            machinery.arena.add(drag)
            let source = LoopSource(order: -1, label: "HIDEventSystem tracking") { system.value.runTrackingMode() }
            machinery.trackingSource = source
            loop.add(source, to: .common)
        }
    }

    func removeGestureItems() {
        guard let machinery = gestures else { return }
        evaluateGestures()
        machinery.trackingWanted = false
        if machinery.inTrackingRun, loop.currentMode == .tracking { loop.stop() }
        machinery.observer?.invalidate()
        machinery.observer = nil
        machinery.timer?.invalidate()
        machinery.timer = nil
        machinery.armedDeadline = nil
        machinery.trackingSource?.invalidate()
        machinery.trackingSource = nil
        // Gestures under way end cancelled, and the recognizers go: a stopped system
        // keeps nothing of its client's alive (an action that captures the system would
        // otherwise keep it for ever).
        for recognizer in machinery.arena.recognizers { machinery.arena.remove(recognizer) }
        machinery.dragRecognizer = nil
        deliverGestureOutput(machinery)
        gestures = nil
    }

    // MARK: From dispatch

    /// Takes a dispatched event in: digitizer frames are kept for the pass's evaluation,
    /// and touches withheld from handlers are taken out. Returns the event handlers get,
    /// or `nil` when nothing is left of it.
    func gestureTap(_ event: HIDEvent, _ machinery: GestureMachinery) -> HIDEvent? {
        switch event.payload {
        case .digitizer(let frame):
            var known = machinery.surface(of: event.device) != nil
            if !known, let info = device(event.device) {
                machinery.surfaces.append((event.device, GestureSurface(device: info)))
                known = true
            }
            if known {
                machinery.pending.append(.frame(event.device, event.timestamp, frame))
                if machinery.pending.count >= GestureMachinery.passCapacity { evaluateGestures() }
            }
            guard !machinery.withheld.isEmpty else { return event }
            var kept = frame
            var changed = false
            for index in 0..<frame.count {
                let contact = frame[index]
                guard machinery.isWithheld(event.device, contact.trackingID) else { continue }
                kept.remove(trackingID: contact.trackingID)
                changed = true
                if contact.phase == .ended || contact.phase == .cancelled {
                    machinery.withheld.removeAll { $0.0 == event.device && $0.1 == contact.trackingID }
                }
            }
            guard changed else { return event }
            if kept.count == 0 { return nil }
            kept.fingerCount = min(kept.fingerCount, kept.count)
            var stripped = event
            stripped.payload = .digitizer(kept)
            return stripped
        case .deviceRemoved:
            machinery.pending.append(.removed(event.device))
            machinery.withheld.removeAll { $0.0 == event.device }
            return event
        default:
            return event
        }
    }

    // MARK: At BeforeWaiting

    /// Feeds the pass's frames and the time to the recognizers, then runs their actions.
    func evaluateGestures() {
        guard let machinery = gestures, !machinery.evaluating else { return }
        machinery.evaluating = true
        defer { machinery.evaluating = false }
        let arena = machinery.arena
        let now = MonotonicInstant.now
        if !machinery.pending.isEmpty {
            for entry in machinery.pending {
                switch entry {
                case .frame(let device, let time, let frame):
                    guard let surface = machinery.surface(of: device) else { continue }
                    var lag = now - time
                    if lag < .zero || lag > GestureMachinery.maximumLag { lag = .zero }
                    if lag >= machinery.inputLag || now - machinery.inputLagSince > .seconds(1) {
                        machinery.inputLag = lag
                        machinery.inputLagSince = now
                    }
                    // Deadlines that passed before this frame first, as they happened.
                    arena.advance(to: time)
                    arena.process(frame, device: device, at: time, surface: surface)
                case .removed(let device):
                    arena.removeDevice(device)
                    machinery.surfaces.removeAll { $0.0 == device }
                }
            }
            machinery.pending.removeAll(keepingCapacity: true)
        }
        // As far as the frames are known to have come: now, less the chain's lag.
        arena.advance(to: now.advanced(by: .zero - machinery.inputLag))
        deliverGestureOutput(machinery)
        let deadline = arena.nextDeadline.map { $0 + machinery.inputLag }
        if deadline != machinery.armedDeadline, let timer = machinery.timer {
            machinery.armedDeadline = deadline
            timer.nextFireDate = deadline ?? .distantFuture
        }
        updateTracking(machinery)
    }

    /// Cancels withheld touches in the handler chain, then calls the actions.
    func deliverGestureOutput(_ machinery: GestureMachinery) {
        let arena = machinery.arena
        guard arena.hasOutput else { return }
        // One frame per device with every touch taken back.
        var frame = DigitizerFrame()
        var frameDevice: HIDDeviceID?
        func flush() {
            if let device = frameDevice, frame.count > 0 {
                dispatchToHandlers(HIDEvent(device: device, timestamp: .now, payload: .digitizer(frame)))
            }
            frame = DigitizerFrame()
        }
        arena.takeCancellations { device, id in
            guard !machinery.isWithheld(device, id) else { return }
            machinery.withheld.append((device, id))
            if frameDevice != device {
                flush()
                frameDevice = device
            }
            let seen = delivered[device].touches
            for index in 0..<seen.count where seen[index].trackingID == id {
                var contact = seen[index]
                contact.phase = .cancelled
                frame.append(contact)
            }
        }
        flush()
        arena.takeReports { recognizer, event in
            guard recognizer !== machinery.dragRecognizer else { return }
            machinery.reported += 1
            for action in recognizer.actions { Self.callGestureAction(action, event) }
        }
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    static func callGestureAction(_ action: (GestureEvent) -> Void, _ event: GestureEvent) {
        action(event)
    }

    // MARK: Tracking

    /// Starts or ends the tracking run as drags begin and end.
    func updateTracking(_ machinery: GestureMachinery) {
        guard configuration.tracksInteractions, let source = machinery.trackingSource else { return }
        let wanted = machinery.arena.trackingCount > 0
        guard wanted != machinery.trackingWanted else { return }
        machinery.trackingWanted = wanted
        if wanted {
            source.signal()
            loop.wakeUp()
        } else if machinery.inTrackingRun, loop.currentMode == .tracking {
            loop.stop()
        }
    }

    /// The tracking source's perform: runs the loop in `RingRunLoop.Mode.tracking`
    /// (nested) while a drag lasts, as a scroll view runs the main loop in
    /// `UITrackingRunLoopMode`: timers of the default mode wait, common ones go on.
    func runTrackingMode() {
        guard let machinery = gestures, machinery.trackingWanted, !machinery.inTrackingRun else { return }
        machinery.inTrackingRun = true
        defer { machinery.inTrackingRun = false }
        // Returns when the drag ends (the observer stops it), or when the app stops the
        // innermost run itself.
        loop.run(mode: .tracking, until: .distantFuture)
    }
}
