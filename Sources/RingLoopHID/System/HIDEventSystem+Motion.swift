import RingLoop

/// The event system's motion recognizers (client loop thread only): the samples of the
/// current pass, the observer that evaluates them at BeforeWaiting after the gestures,
/// and the timer for their deadlines.
final class MotionMachinery {
    enum Pending {
        case sample(HIDDeviceID, MonotonicInstant, MotionEvent)
        case removed(HIDDeviceID, MonotonicInstant)
    }

    /// Samples a pass buffers before they are evaluated without waiting for BeforeWaiting.
    static let passCapacity = 256
    /// After the gesture observer, as UIKit delivers motion events after touches.
    static let observerOrder = GestureMachinery.observerOrder + 1

    var recognizers: [MotionRecognizer] = []
    var pending: [Pending] = []
    var observer: LoopObserver?
    var timer: LoopTimer?
    var armedDeadline: MonotonicInstant?
    /// How far behind the samples the loop is (now − the newest sample's stamp, 0…2 s):
    /// deadlines pass this much later, so samples still on their way are seen first.
    var lag: Duration = .zero
    var evaluating = false

    init() { pending.reserveCapacity(Self.passCapacity) }
}

extension HIDEventSystem {
    // MARK: Motion recognizers

    /// Attaches a motion recognizer (``ShakeRecognizer``, ``OrientationRecognizer``) to
    /// the samples of every ``HIDDeviceClass/motion`` device.
    ///
    /// It sees every sample, also when ``Configuration/coalesceMotion`` hands handlers one
    /// per pass, in the order they were read; samples are evaluated in an observer at
    /// BeforeWaiting after the gesture recognizers', and the recognizer's actions run
    /// there. A timer wakes the loop for deadlines (a shake ends once the hand is still).
    /// A device's removal cancels what was under way on it. Client loop thread; before or
    /// after ``start()``. ``stop()`` lets every recognizer go, as it does handlers.
    public func addMotionRecognizer(_ recognizer: MotionRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.addMotionRecognizer")
        let machinery = motion ?? MotionMachinery()
        motion = machinery
        guard !machinery.recognizers.contains(where: { $0 === recognizer }) else { return }
        precondition(!recognizer.isAttached, "a motion recognizer belongs to one event system at a time")
        recognizer.isAttached = true
        machinery.recognizers.append(recognizer)
        installMotionItems(machinery)
    }

    /// Detaches a motion recognizer.
    public func removeMotionRecognizer(_ recognizer: MotionRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeMotionRecognizer")
        guard let machinery = motion, let index = machinery.recognizers.firstIndex(where: { $0 === recognizer }) else {
            return
        }
        machinery.recognizers.remove(at: index)
        recognizer.isAttached = false
    }

    /// The attached motion recognizers, in the order they were added.
    public var motionRecognizers: [MotionRecognizer] { motion?.recognizers ?? [] }

    /// Adds the observer and the deadline timer (once the system is started).
    func installMotionItems(_ machinery: MotionMachinery) {
        guard dispatchSource != nil, machinery.observer == nil else { return }
        let system = UnownedLoopReference(self, loop: loop)
        let observer = LoopObserver(
            activities: [.beforeWaiting, .exit], order: MotionMachinery.observerOrder, label: "HIDEventSystem motion"
        ) { _, _ in
            system.value.evaluateMotion()
        }
        machinery.observer = observer
        loop.add(observer, to: .common)
        // Fires only to wake the loop: the observer evaluates deadlines at BeforeWaiting.
        let timer = LoopTimer(fireDate: .distantFuture, interval: .seconds(86_400 * 365)) { _ in }
        machinery.timer = timer
        loop.add(timer, to: .common)
    }

    func removeMotionItems() {
        guard let machinery = motion else { return }
        evaluateMotion()
        machinery.observer?.invalidate()
        machinery.observer = nil
        machinery.timer?.invalidate()
        machinery.timer = nil
        machinery.armedDeadline = nil
        for recognizer in machinery.recognizers { recognizer.isAttached = false }
        machinery.recognizers = []
        motion = nil
    }

    /// Takes a sample (or a removal) in for the pass's evaluation, before coalescing.
    func motionTap(_ event: HIDEvent, _ machinery: MotionMachinery) {
        switch event.payload {
        case .motion(let sample): machinery.pending.append(.sample(event.device, event.timestamp, sample))
        case .deviceRemoved: machinery.pending.append(.removed(event.device, event.timestamp))
        default: return
        }
        if machinery.pending.count >= MotionMachinery.passCapacity { evaluateMotion() }
    }

    /// Feeds the pass's samples and the time to the recognizers (their actions run as
    /// they decide), then arms the timer for the earliest deadline.
    func evaluateMotion() {
        guard let machinery = motion, !machinery.evaluating else { return }
        machinery.evaluating = true
        defer { machinery.evaluating = false }
        let now = MonotonicInstant.now
        for entry in machinery.pending {
            switch entry {
            case .sample(let device, let time, let sample):
                var lag = now - time
                if lag < .zero || lag > GestureMachinery.maximumLag { lag = .zero }
                machinery.lag = lag
                for recognizer in machinery.recognizers { recognizer.process(sample, device: device, at: time) }
            case .removed(let device, let time):
                for recognizer in machinery.recognizers { recognizer.removeDevice(device, at: time) }
            }
        }
        machinery.pending.removeAll(keepingCapacity: true)
        let seen = now.advanced(by: .zero - machinery.lag)
        var deadline: MonotonicInstant?
        for recognizer in machinery.recognizers {
            recognizer.advance(to: seen)
            if let due = recognizer.deadline { deadline = min(deadline ?? due, due) }
        }
        let armed = deadline.map { $0 + machinery.lag }
        if armed != machinery.armedDeadline, let timer = machinery.timer {
            machinery.armedDeadline = armed
            timer.nextFireDate = armed ?? .distantFuture
        }
    }
}
