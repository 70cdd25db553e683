import RingLoop

/// The gesture recognizers of the digitizer stream (touchscreens and touchpads): frames
/// are kept as they pass and evaluated at BeforeWaiting, as UIKit's
/// `_UIGestureRecognizerUpdateObserver` does; the recognizers' actions run there, in the
/// order their states changed, and a timer wakes the loop for their deadlines (a long
/// press, a tap's time limit). Touches a recognizer claims (one that begins with
/// ``GestureRecognizer/cancelsTouchesInHandlers``) reach the later stages cancelled, and
/// no more of them. With ``HIDEventSystem/Configuration/tracksInteractions`` the stage
/// also runs the loop in `RingRunLoop.Mode.tracking` while a drag lasts.
final class GestureStage: HIDEventStage {
    enum Pending {
        case frame(HIDDeviceID, MonotonicInstant, DigitizerFrame)
        case removed(HIDDeviceID)
    }

    /// Frames a pass buffers before they are evaluated without waiting for BeforeWaiting.
    static let passCapacity = 256
    /// Lags beyond this are taken as clocks that cannot be compared (a device stamping
    /// on another clock), not as a loop that far behind.
    static let maximumLag: Duration = .seconds(2)

    let arena = GestureArena()
    let tracksInteractions: Bool
    /// Touchscreens mapped to a screen give their gestures in the screen's points.
    var inScreenPoints = false
    private var context: HIDStageContext?
    private var pending: [Pending] = []
    private var surfaces: [(HIDDeviceID, GestureSurface)] = []
    /// Touches later stages no longer see: a recognizer that cancels touches began with them.
    private var withheld: [(HIDDeviceID, Int32)] = []
    /// The stamp of each device's latest frame the recognizers evaluated: the time of the
    /// touches they take back.
    private var latestFrames: [(HIDDeviceID, MonotonicInstant)] = []
    private var wakeUp: StageWakeUpTimer?
    /// How far behind the frames the loop has been (now − the kernel's stamp of a frame
    /// as it is evaluated), 0 to ``maximumLag``: the largest lag of the last second, else
    /// the last frame's. Deadlines pass this much after they are due, so that frames
    /// stamped before a deadline but still on their way (a loop busy for a while, a
    /// reader or queue behind) are seen first, as libinput reads its devices before its
    /// timers.
    private var inputLag: Duration = .zero
    /// When ``inputLag`` was last raised.
    private var inputLagSince = MonotonicInstant(nanoseconds: 0)
    private var evaluating = false
    /// The recognizer behind tracking (any drag), when the configuration asks for it.
    private(set) var dragRecognizer: PanGestureRecognizer?
    private var trackingSource: LoopSource?
    private var trackingWanted = false
    private(set) var inTrackingRun = false
    /// Gestures the arena reported, for ``HIDEventSystem/gestureStatistics``.
    private(set) var reported = 0

    init(tracksInteractions: Bool) {
        self.tracksInteractions = tracksInteractions
        pending.reserveCapacity(Self.passCapacity)
        withheld.reserveCapacity(32)
    }

    /// The recognizers an app attached (the tracking drag left out).
    var recognizers: [GestureRecognizer] { arena.recognizers.filter { $0 !== dragRecognizer } }

    func add(_ recognizer: GestureRecognizer) { arena.add(recognizer) }

    /// Detaches a recognizer (one under way is cancelled first, its cancellations passed on).
    func remove(_ recognizer: GestureRecognizer) {
        arena.remove(recognizer)
        guard let context else { return }
        deliverOutput { context.emit($0, after: self) }
    }

    // MARK: The stage

    func install(in context: HIDStageContext) {
        self.context = context
        wakeUp = StageWakeUpTimer(loop: context.loop)
        guard tracksInteractions else { return }
        let loop = context.loop
        loop.addCommonMode(.tracking)
        let drag = PanGestureRecognizer(kind: .drag)
        drag.isSimultaneousWithAll = true
        drag.cancelsTouchesInHandlers = false
        dragRecognizer = drag
        arena.add(drag)
        let stage = UnownedLoopReference(self, loop: loop)
        let source = LoopSource(order: -1, label: "HIDEventSystem tracking") { stage.value.runTrackingMode() }
        trackingSource = source
        loop.add(source, to: .common)
    }

    /// Keeps digitizer frames for the pass's evaluation and takes withheld touches out.
    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .digitizer(let frame):
            var known = surface(of: event.device) != nil
            if !known, let context, let info = context.device(event.device) {
                let mapping = inScreenPoints ? context.system.screenMapping(for: event.device) : nil
                let own = GestureSurface(device: info)
                surfaces.append(
                    (event.device, own.kind == .touchscreen && mapping != nil ? GestureSurface(device: info, screen: mapping!) : own))
                known = true
            }
            if known {
                pending.append(.frame(event.device, event.timestamp, frame))
                if pending.count >= Self.passCapacity { evaluate(emit: emit) }
            }
            guard !withheld.isEmpty else { return emit(event) }
            var kept = frame
            var changed = false
            for index in 0..<frame.count {
                let contact = frame[index]
                guard isWithheld(event.device, contact.trackingID) else { continue }
                kept.remove(trackingID: contact.trackingID)
                changed = true
                if contact.phase == .ended || contact.phase == .cancelled {
                    withheld.removeAll { $0.0 == event.device && $0.1 == contact.trackingID }
                }
            }
            guard changed else { return emit(event) }
            if kept.count == 0 { return }
            kept.fingerCount = min(kept.fingerCount, kept.count)
            var stripped = event
            stripped.payload = .digitizer(kept)
            emit(stripped)
        case .deviceRemoved:
            pending.append(.removed(event.device))
            withheld.removeAll { $0.0 == event.device }
            emit(event)
        default:
            emit(event)
        }
    }

    func beforeWaiting(emit: (HIDEvent) -> Void) { evaluate(emit: emit) }

    /// Gestures under way end cancelled, and the recognizers go: a stopped system keeps
    /// nothing of its client's alive (an action that captures the system would otherwise
    /// keep it for ever).
    func remove(emit: (HIDEvent) -> Void) {
        evaluate(emit: emit)
        trackingWanted = false
        if inTrackingRun, let loop = context?.loop, loop.currentMode == .tracking { loop.stop() }
        wakeUp?.invalidate()
        wakeUp = nil
        trackingSource?.invalidate()
        trackingSource = nil
        for recognizer in arena.recognizers { arena.remove(recognizer) }
        dragRecognizer = nil
        deliverOutput(emit: emit)
        context = nil
    }

    // MARK: At BeforeWaiting

    /// Feeds the pass's frames and the time to the recognizers, then passes on the touches
    /// they took back and runs their actions.
    func evaluate(emit: (HIDEvent) -> Void) {
        guard !evaluating else { return }
        evaluating = true
        defer { evaluating = false }
        let now = MonotonicInstant.now
        var removed: [HIDDeviceID] = []
        if !pending.isEmpty {
            for entry in pending {
                switch entry {
                case .frame(let device, let time, let frame):
                    guard let surface = surface(of: device) else { continue }
                    if let index = latestFrames.firstIndex(where: { $0.0 == device }) {
                        latestFrames[index].1 = time
                    } else {
                        latestFrames.append((device, time))
                    }
                    var lag = now - time
                    if lag < .zero || lag > Self.maximumLag { lag = .zero }
                    if lag >= inputLag || now - inputLagSince > .seconds(1) {
                        inputLag = lag
                        inputLagSince = now
                    }
                    // Deadlines that passed before this frame first, as they happened.
                    arena.advance(to: time)
                    arena.process(frame, device: device, at: time, surface: surface)
                case .removed(let device):
                    arena.removeDevice(device)
                    surfaces.removeAll { $0.0 == device }
                    removed.append(device)
                }
            }
            pending.removeAll(keepingCapacity: true)
        }
        // As far as the frames are known to have come: now, less the chain's lag.
        arena.advance(to: now.advanced(by: .zero - inputLag))
        deliverOutput(emit: emit)
        // (A removed device's touches are taken back above, at its latest frame's time.)
        if !removed.isEmpty { latestFrames.removeAll { removed.contains($0.0) } }
        // What touchpads made of these frames goes on now that claims are known.
        context?.system.pipeline.touchpad?.gesturesEvaluated()
        wakeUp?.arm(at: arena.nextDeadline.map { $0 + inputLag })
        updateTracking()
    }

    /// Passes on the touches taken back (cancelled), then calls the actions.
    ///
    /// A device's frame of cancelled touches carries the time of the device's latest frame
    /// the recognizers evaluated (the input that made them take the touches back, or the
    /// last before a deadline did), on the device's own clock, as every event of the chain
    /// carries the time of what made it: never the clock's time as it goes out, which
    /// would put it out of order with the device's frames.
    private func deliverOutput(emit: (HIDEvent) -> Void) {
        guard arena.hasOutput else { return }
        // One frame per device with every touch taken back.
        var frame = DigitizerFrame()
        var frameDevice: HIDDeviceID?
        func flush() {
            if let device = frameDevice, frame.count > 0 {
                let time = latestFrames.first { $0.0 == device }?.1 ?? .now
                emit(HIDEvent(device: device, timestamp: time, payload: .digitizer(frame)))
            }
            frame = DigitizerFrame()
        }
        arena.takeCancellations { device, id in
            guard !isWithheld(device, id) else { return }
            context?.system.pipeline.touchpad?.touchClaimed(device: device, id: id)
            withheld.append((device, id))
            if frameDevice != device {
                flush()
                frameDevice = device
            }
            guard let seen = context?.system.ledgers.delivered[device].touches else { return }
            for index in 0..<seen.count where seen[index].trackingID == id {
                var contact = seen[index]
                contact.phase = .cancelled
                frame.append(contact)
            }
        }
        flush()
        arena.takeReports { recognizer, event in
            guard recognizer !== dragRecognizer else { return }
            if recognizer.cancelsTouchesInHandlers, event.state == .began || (recognizer.isDiscrete && event.state == .ended) {
                context?.system.pipeline.touchpad?.gestureClaimed(device: event.device)
            }
            reported += 1
            for action in recognizer.actions { Self.callGestureAction(action, event) }
        }
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    static func callGestureAction(_ action: (GestureEvent) -> Void, _ event: GestureEvent) {
        action(event)
    }

    /// Forgets every device's surface (the screens or the unit changed): the next frame of
    /// each works it out again.
    func forgetSurfaces() { surfaces.removeAll() }

    private func surface(of device: HIDDeviceID) -> GestureSurface? {
        for (id, surface) in surfaces where id == device { return surface }
        return nil
    }

    private func isWithheld(_ device: HIDDeviceID, _ id: Int32) -> Bool {
        for entry in withheld where entry.0 == device && entry.1 == id { return true }
        return false
    }

    // MARK: Tracking

    /// Starts or ends the tracking run as drags begin and end.
    private func updateTracking() {
        guard tracksInteractions, let source = trackingSource, let loop = context?.loop else { return }
        let wanted = arena.trackingCount > 0
        guard wanted != trackingWanted else { return }
        trackingWanted = wanted
        if wanted {
            source.signal()
            loop.wakeUp()
        } else if inTrackingRun, loop.currentMode == .tracking {
            loop.stop()
        }
    }

    /// The tracking source's perform: runs the loop in `RingRunLoop.Mode.tracking`
    /// (nested) while a drag lasts, as a scroll view runs the main loop in
    /// `UITrackingRunLoopMode`: timers of the default mode wait, common ones go on.
    private func runTrackingMode() {
        guard trackingWanted, !inTrackingRun, let loop = context?.loop else { return }
        inTrackingRun = true
        defer { inTrackingRun = false }
        // Returns when the drag ends (the observer stops it), or when the app stops the
        // innermost run itself.
        loop.run(mode: .tracking, until: .distantFuture)
    }
}
