import RingLoop

/// The motion recognizers (``ShakeRecognizer``, ``OrientationRecognizer``): every sample
/// of every ``HIDDeviceClass/motion`` device is kept for the pass (before coalescing, so
/// the recognizers see them all) and evaluated at BeforeWaiting; a timer wakes the loop
/// for the recognizers' deadlines (a shake ends once the hand is still). A device's
/// removal cancels what was under way on it. The stage passes every event on unchanged.
final class MotionStage: HIDEventStage {
    enum Pending {
        case sample(HIDDeviceID, MonotonicInstant, MotionEvent)
        case removed(HIDDeviceID, MonotonicInstant)
    }

    /// Samples a pass buffers before they are evaluated without waiting for BeforeWaiting.
    static let passCapacity = 256

    private(set) var recognizers: [MotionRecognizer] = []
    private var pending: [Pending] = []
    private var wakeUp: StageWakeUpTimer?
    /// How far behind the samples the loop is (now − the newest sample's stamp, 0…2 s):
    /// deadlines pass this much later, so samples still on their way are seen first.
    private var lag: Duration = .zero
    private var evaluating = false

    init() { pending.reserveCapacity(Self.passCapacity) }

    func add(_ recognizer: MotionRecognizer) {
        guard !recognizers.contains(where: { $0 === recognizer }) else { return }
        precondition(!recognizer.isAttached, "a motion recognizer belongs to one event system at a time")
        recognizer.isAttached = true
        recognizers.append(recognizer)
    }

    /// Returns whether it was attached here.
    @discardableResult
    func remove(_ recognizer: MotionRecognizer) -> Bool {
        guard let index = recognizers.firstIndex(where: { $0 === recognizer }) else { return false }
        recognizers.remove(at: index)
        recognizer.isAttached = false
        return true
    }

    func install(in context: HIDStageContext) {
        wakeUp = StageWakeUpTimer(loop: context.loop)
    }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .motion(let sample): pending.append(.sample(event.device, event.timestamp, sample))
        case .deviceRemoved: pending.append(.removed(event.device, event.timestamp))
        default: return emit(event)
        }
        if pending.count >= Self.passCapacity { evaluate() }
        emit(event)
    }

    func beforeWaiting(emit: (HIDEvent) -> Void) { evaluate() }

    func remove(emit: (HIDEvent) -> Void) {
        evaluate()
        wakeUp?.invalidate()
        wakeUp = nil
        for recognizer in recognizers { recognizer.isAttached = false }
        recognizers = []
    }

    /// Feeds the pass's samples and the time to the recognizers (their actions run as
    /// they decide), then arms the timer for the earliest deadline.
    func evaluate() {
        guard !evaluating else { return }
        evaluating = true
        defer { evaluating = false }
        let now = MonotonicInstant.now
        for entry in pending {
            switch entry {
            case .sample(let device, let time, let sample):
                var lag = now - time
                if lag < .zero || lag > GestureStage.maximumLag { lag = .zero }
                self.lag = lag
                for recognizer in recognizers { recognizer.process(sample, device: device, at: time) }
            case .removed(let device, let time):
                for recognizer in recognizers { recognizer.removeDevice(device, at: time) }
            }
        }
        pending.removeAll(keepingCapacity: true)
        let seen = now.advanced(by: .zero - lag)
        var deadline: MonotonicInstant?
        for recognizer in recognizers {
            recognizer.advance(to: seen)
            if let due = recognizer.deadline { deadline = min(deadline ?? due, due) }
        }
        wakeUp?.arm(at: deadline.map { $0 + lag })
    }
}
