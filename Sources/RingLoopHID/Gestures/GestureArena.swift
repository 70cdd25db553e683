import RingLoop

/// Where recognizers meet: it keeps each device's touches, feeds frames and deadlines to
/// the recognizers, and applies their requests with UIKit's rules —
/// - a recognizer that requires others to fail holds its begin (or recognition) until
///   they have all failed, and fails as soon as one of them succeeds;
/// - the first gesture to begin on a device wins: recognizers that cannot recognize
///   simultaneously with it fail, and one that wants to begin while a rival is under way
///   fails;
/// - once a device has no touches left, finished recognizers return to possible, and
///   possible ones with nothing left to wait for fail.
///
/// Pure: time comes from the frames' timestamps and from ``advance(to:)``, so recordings
/// can be evaluated from memory exactly as the loop evaluates them. Reports and touch
/// cancellations are collected for the caller to deliver. Loop thread only. Per frame it
/// allocates nothing (the first frame of a device adds its table).
final class GestureArena {
    /// One device's touches after its latest frame.
    /// One device's touches after its latest frame, and the storage the next frame is
    /// built in (the one before last: frames alternate between the two, so neither is
    /// copied nor allocated).
    struct DeviceTouches {
        var device: HIDDeviceID
        var touches: GestureTouches
        var spare: GestureTouches?
    }

    // Exempt from dynamic exclusivity checks (a large share of the per-frame cost): the
    // arena lives on the client loop's thread and no access to these overlaps another.
    @exclusivity(unchecked) private(set) var recognizers: [GestureRecognizer] = []
    @exclusivity(unchecked) private var tables: [DeviceTouches] = []
    @exclusivity(unchecked) private var reports: [(GestureRecognizer, GestureEvent)] = []
    @exclusivity(unchecked) private var spareReports: [(GestureRecognizer, GestureEvent)] = []
    /// Touches handlers must see cancelled: (device, tracking id).
    @exclusivity(unchecked) private(set) var cancellations: [(HIDDeviceID, Int32)] = []
    /// Recognizers with ``GestureRecognizer/tracksInteraction`` under way.
    @exclusivity(unchecked) private(set) var trackingCount = 0
    /// The time of the frame or deadline being handled: reports are stamped with it.
    @exclusivity(unchecked) private var now = MonotonicInstant(nanoseconds: 0)

    deinit {
        for recognizer in recognizers { recognizer.arena = nil }
    }

    init() {
        reports.reserveCapacity(64)
        spareReports.reserveCapacity(64)
        cancellations.reserveCapacity(32)
    }

    func add(_ recognizer: GestureRecognizer) {
        guard !recognizers.contains(where: { $0 === recognizer }) else { return }
        precondition(recognizer.arena == nil, "a gesture recognizer belongs to one event system at a time")
        recognizer.arena = self
        recognizers.append(recognizer)
    }

    func remove(_ recognizer: GestureRecognizer) {
        guard let index = recognizers.firstIndex(where: { $0 === recognizer }) else { return }
        if recognizer.isActive { commit(recognizer, .cancelled, recognizer.values) }
        recognizers.remove(at: index)
        recognizer.arena = nil
        resetRecognizer(recognizer)
    }

    // MARK: Input

    /// Feeds one digitizer frame of `device`.
    func process(_ frame: DigitizerFrame, device: HIDDeviceID, at time: MonotonicInstant, surface: GestureSurface) {
        now = time
        let slot = tableIndex(for: device)
        let previous = tables[slot].touches
        var touches = tables[slot].spare ?? GestureTouches()
        tables[slot].spare = nil
        touches.removeAll()
        touches.device = device
        touches.surface = surface
        touches.timestamp = time
        let millimetres = surface.unit == .millimetres
        for index in 0..<frame.count {
            let contact = frame[index]
            var touch = GestureTouch()
            touch.id = contact.trackingID
            if surface.unit == .screenPoints {
                // The screen-mapping stage ran first; a contact it did not map (its
                // mapping just taken away) is placed by its normalized position.
                let point = contact.screenLocation
                touch.location = GesturePoint(
                    x: point?.x ?? contact.normalizedX * surface.width, y: point?.y ?? contact.normalizedY * surface.height)
            } else {
                touch.location =
                    millimetres
                    ? GesturePoint(x: contact.millimetresX ?? 0, y: contact.millimetresY ?? 0)
                    : GesturePoint(x: Double(contact.x), y: Double(contact.y))
            }
            touch.normalized = GesturePoint(x: contact.normalizedX, y: contact.normalizedY)
            touch.phase = contact.phase
            if contact.phase != .began, let known = previous.index(of: contact.trackingID) {
                touch.startLocation = previous[known].startLocation
                touch.began = previous[known].began
            } else {
                touch.startLocation = touch.location
                touch.began = time
            }
            if contact.phase == .cancelled { touches.hasCancelled = true }
            touches.append(touch)
        }
        let live = touches.liveCount
        touches.fingerCount = surface.kind == .touchpad && frame.fingerCount > 0 && live > 0 ? max(frame.fingerCount, live) : live
        tables[slot].touches = touches
        defer { if slot < tables.count, tables[slot].device == device { tables[slot].spare = previous } }

        if touches.hasCancelled {
            for recognizer in recognizers where recognizer.device == device { abandon(recognizer) }
        }
        let kind = GestureRecognizer.bit(surface.kind)
        for recognizer in recognizers
        where recognizer.isEnabled && !recognizer.isFinished && recognizer.surfaceMask & kind != 0 {
            if recognizer.device == nil {
                guard touches.hasBegan else { continue }
                recognizer.device = device
                recognizer.surface = surface
            }
            guard recognizer.device == device else { continue }
            Self.callTouchesChanged(recognizer, touches)
        }
        if live == 0 { settle(device) }
    }

    /// Lets recognizers whose deadline has passed look again.
    func advance(to now: MonotonicInstant) {
        self.now = now
        var due = false
        for recognizer in recognizers where !recognizer.isFinished && recognizer.device != nil {
            if let deadline = recognizer.deadline, deadline <= now {
                due = true
                recognizer.deadlineReached(at: now)
            }
        }
        guard due else { return }
        for table in tables where table.touches.liveCount == 0 { settle(table.device) }
    }

    /// The device went away: gestures on it are cancelled, possible ones fail.
    func removeDevice(_ device: HIDDeviceID) {
        for recognizer in recognizers where recognizer.device == device { abandon(recognizer) }
        settle(device)
        tables.removeAll { $0.device == device }
    }

    /// The earliest deadline of a recognizer that is following touches.
    var nextDeadline: MonotonicInstant? {
        var earliest: MonotonicInstant?
        for recognizer in recognizers where !recognizer.isFinished && recognizer.device != nil {
            if let deadline = recognizer.deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// The stamp of `device`'s latest frame, if it sent one.
    func latestFrameTime(of device: HIDDeviceID) -> MonotonicInstant? {
        tables.first { $0.device == device }?.touches.timestamp
    }

    /// Whether reports or cancellations wait to be taken.
    var hasOutput: Bool { !reports.isEmpty || !cancellations.isEmpty }

    /// Hands over the reports made since the last call, in order.
    func takeReports(_ body: (GestureRecognizer, GestureEvent) -> Void) {
        guard !reports.isEmpty else { return }
        swap(&reports, &spareReports)
        for (recognizer, event) in spareReports { body(recognizer, event) }
        spareReports.removeAll(keepingCapacity: true)
    }

    /// Hands over the touches to cancel in the handler chain.
    func takeCancellations(_ body: (HIDDeviceID, Int32) -> Void) {
        guard !cancellations.isEmpty else { return }
        for (device, id) in cancellations { body(device, id) }
        cancellations.removeAll(keepingCapacity: true)
    }

    /// Stable name for profiles: time here is the recognizer's.
    @inline(never)
    private static func callTouchesChanged(_ recognizer: GestureRecognizer, _ touches: GestureTouches) {
        recognizer.touchesChanged(touches)
    }

    private func tableIndex(for device: HIDDeviceID) -> Int {
        if let index = tables.firstIndex(where: { $0.device == device }) { return index }
        var touches = GestureTouches()
        touches.device = device
        tables.append(DeviceTouches(device: device, touches: touches))
        return tables.count - 1
    }

    // MARK: Applying requests

    /// A request from a recognizer (see ``GestureRecognizer/request(_:_:)``).
    func apply(_ recognizer: GestureRecognizer, _ state: GestureRecognizer.State, _ values: GestureValues) {
        guard !recognizer.isFinished, recognizer.device != nil else { return }
        var values = values
        values.unit = recognizer.surface.unit
        if recognizer.held != nil {
            switch state {
            case .began, .changed: recognizer.held = values
            case .ended:
                recognizer.held = values
                recognizer.heldEnded = true
            case .cancelled, .failed: fail(recognizer)
            case .possible: break
            }
            return
        }
        switch (recognizer.state, state) {
        case (.possible, .began), (.possible, .ended):
            beginOrHold(recognizer, ended: state == .ended, values)
        case (.possible, .failed), (.possible, .cancelled):
            fail(recognizer)
        case (.began, .began), (.began, .changed), (.changed, .began), (.changed, .changed):
            commit(recognizer, .changed, values)
        case (.began, .ended), (.changed, .ended), (.began, .cancelled), (.changed, .cancelled):
            commit(recognizer, state, values)
        case (.began, .failed), (.changed, .failed):
            commit(recognizer, .cancelled, values)
        default:
            break
        }
    }

    /// Ends a recognizer from outside (disabled): cancelled if under way, else failed.
    func force(_ recognizer: GestureRecognizer, to state: GestureRecognizer.State) {
        abandon(recognizer)
    }

    private func abandon(_ recognizer: GestureRecognizer) {
        if recognizer.isActive {
            commit(recognizer, .cancelled, recognizer.values)
        } else if recognizer.state == .possible {
            fail(recognizer)
        }
    }

    private func beginOrHold(_ recognizer: GestureRecognizer, ended: Bool, _ values: GestureValues) {
        for rival in recognizers
        where rival !== recognizer && rival.device == recognizer.device
            && (rival.isActive || (rival.state == .ended && rival.isDiscrete)) && GestureRecognizer.prevents(rival, recognizer)
        {
            _ = rival
            fail(recognizer)
            return
        }
        var waiting = false
        for other in recognizer.required {
            switch other.state {
            case .began, .changed, .ended:
                fail(recognizer)
                return
            case .possible:
                if other.device == nil || other.device == recognizer.device { waiting = true }
            case .cancelled, .failed:
                break
            }
        }
        if waiting {
            recognizer.held = values
            recognizer.heldEnded = ended && !recognizer.isDiscrete
            return
        }
        commit(recognizer, recognizer.isDiscrete ? .ended : .began, values)
        // The winner: rivals that cannot share fail, and so does whatever waited for it to fail.
        for other in recognizers where other !== recognizer && other.state == .possible {
            if other.required.contains(where: { $0 === recognizer }) {
                fail(other)
            } else if other.device == recognizer.device, GestureRecognizer.prevents(recognizer, other) {
                fail(other)
            }
        }
        if recognizer.cancelsTouchesInHandlers, let device = recognizer.device,
            let table = tables.first(where: { $0.device == device })
        {
            for index in 0..<table.touches.count {
                let touch = table.touches[index]
                if touch.phase != .ended && touch.phase != .cancelled { cancellations.append((device, touch.id)) }
            }
        }
        if ended && !recognizer.isDiscrete { commit(recognizer, .ended, values) }
    }

    private func fail(_ recognizer: GestureRecognizer) {
        guard recognizer.state == .possible else { return }
        recognizer.state = .failed
        recognizer.held = nil
        recognizer.heldEnded = false
        // Recognizers waiting for this one: released when all they wait for have failed.
        for waiting in recognizers where waiting.held != nil && waiting.required.contains(where: { $0 === recognizer }) {
            if waiting.required.allSatisfy({
                $0.state == .failed || $0.state == .cancelled || $0.device != waiting.device && $0.device != nil
            }) {
                let values = waiting.held!
                let ended = waiting.heldEnded
                waiting.held = nil
                waiting.heldEnded = false
                beginOrHold(waiting, ended: ended, values)
            }
        }
    }

    private func commit(_ recognizer: GestureRecognizer, _ state: GestureRecognizer.State, _ values: GestureValues) {
        let wasActive = recognizer.isActive
        recognizer.state = state
        recognizer.values = values
        if recognizer.tracksInteraction {
            if state == .began { trackingCount += 1 }
            if wasActive && (state == .ended || state == .cancelled) { trackingCount -= 1 }
        }
        guard let device = recognizer.device else { return }
        reports.append(
            (
                recognizer,
                GestureEvent(
                    gesture: recognizer.kind, state: state, values: values, device: device, surface: recognizer.surface,
                    timestamp: now, direction: recognizer.reportedDirection)
            ))
    }

    /// The device has no touches left: possible recognizers with nothing to wait for
    /// fail, then finished ones return to possible.
    private func settle(_ device: HIDDeviceID) {
        for recognizer in recognizers
        where recognizer.device == device && recognizer.state == .possible && recognizer.held == nil && recognizer.deadline == nil {
            fail(recognizer)
        }
        for recognizer in recognizers where recognizer.device == device && recognizer.isFinished {
            resetRecognizer(recognizer)
        }
    }

    private func resetRecognizer(_ recognizer: GestureRecognizer) {
        recognizer.state = .possible
        recognizer.device = nil
        recognizer.held = nil
        recognizer.heldEnded = false
        recognizer.reset()
    }
}
