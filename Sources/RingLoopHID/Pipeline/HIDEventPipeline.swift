import RingLoop

/// The stages of one event system's drain (DESIGN.md §3a), in the order
/// ``stageOrder()`` names, and what runs them: the source0 hands each event to the first
/// stage, each stage's `emit` to the next; one observer gives every stage its
/// BeforeWaiting turn, in the same order. Client loop thread only.
///
/// A stage that is not needed is absent, not idle: a system without key repeat, coalescing
/// or recognizers runs its events through the handlers alone.
final class HIDEventPipeline {
    // The library's stages, each present only when configured or asked for.
    var keymap: KeymapStage?
    /// Whether an event server ends the keymap's compose sequence when its focus moves.
    var keymapFollowsServerFocus = false
    var motion: MotionStage?
    var keyRepeat: KeyRepeatStage?
    var coalescing: CoalescingStage?
    var gestures: GestureStage?
    var gamepadLayout: GamepadLayoutStage?
    var screenMapping: ScreenMappingStage?
    var touchpad: TouchpadStage?
    var pointer: PointerStage?
    /// The app's own stages (``HIDEventSystem/addStage(_:)``), in the order added.
    var appStages: [any HIDEventStage] = []
    /// The handlers (always there).
    let handlers: HandlerStage
    /// An event server's routing to its clients, after its own handlers.
    var routing: (any HIDEventStage)?

    /// ``stageOrder()`` as of the last change (read per event).
    private(set) var ordered: [any HIDEventStage] = []
    /// The context the stages were installed with; `nil` while the system is not started.
    private(set) var context: HIDStageContext?
    private var observer: LoopObserver?

    init(handlers: HandlerStage) {
        self.handlers = handlers
        ordered = stageOrder()
    }

    /// The drain's stages, in order: what a frame goes through from the queue to the
    /// handlers (and, in a server, to its clients).
    func stageOrder() -> [any HIDEventStage] {
        let library: [(any HIDEventStage)?] = [
            // The stages that give events their meaning come first (DESIGN.md §3a): the
            // screen's pixels for absolute positions, the pointer (acceleration, the
            // cursor, wheels, debounced buttons), then SDL's standard gamepad.
            screenMapping,
            // Touchpads as pointers: motion, clicks and scrolling from their touches.
            touchpad,
            pointer,
            gamepadLayout,
            // Motion recognizers see every sample, before key repeat and coalescing.
            motion,
            // Key repeat from loop timers in place of the kernel's.
            keyRepeat,
            // The keymap after key repeat: the chain's own repeats get their text from the
            // seat's state when they fire (Shift pressed meanwhile), and a repeat of a key
            // the keymap says does not repeat (Caps Lock) is consumed there.
            keymap,
            // One motion event per device and pass, flushed at BeforeWaiting.
            coalescing,
            // Touch frames for the recognizers; touches they claim taken back.
            gestures,
        ]
        var stages = library.compactMap { $0 }
        stages.append(contentsOf: appStages)
        stages.append(handlers)
        if let routing { stages.append(routing) }
        return stages
    }

    // MARK: Running events through

    /// Hands `event` to the first stage.
    @inline(__always)
    func run(_ event: HIDEvent) {
        let stages = ordered
        Self.run(event, from: 0, in: stages)
    }

    /// Hands `event` to the stages after `stage` (nothing when `stage` is gone).
    func emit(_ event: HIDEvent, after stage: any HIDEventStage) {
        let stages = ordered
        guard let index = stages.firstIndex(where: { $0 === stage }) else { return }
        // During BeforeWaiting, an event for a stage whose turn has come already (a
        // touchpad's motion, released by the recognizers' turn) gives it another. Whether
        // it has come is looked up in the round's own list, and the stage is kept by
        // identity: a stage added or removed during the round (by a gesture's action, a
        // handler, a stage's turn) moves the indices of ``ordered``.
        if let turn = beforeWaitingTurn, index + 1 < stages.count {
            let next = stages[index + 1]
            // (A stage not in the round's list was added during it: it has had no turn.)
            let hadItsTurn = roundStages.firstIndex(where: { $0 === next }).map { $0 <= turn } ?? true
            if hadItsTurn, !turnAgain.contains(where: { $0 === next }) { turnAgain.append(next) }
        }
        Self.run(event, from: index + 1, in: stages)
    }

    static func run(_ event: HIDEvent, from index: Int, in stages: [any HIDEventStage]) {
        guard index < stages.count else { return }
        stages[index].process(event) { run($0, from: index + 1, in: stages) }
    }

    /// The stage whose BeforeWaiting turn runs (its index in ``roundStages``); `nil`
    /// outside ``beforeWaiting()``.
    private var beforeWaitingTurn: Int?
    /// The stages of the BeforeWaiting round under way, as ``ordered`` was when it began.
    private var roundStages: [any HIDEventStage] = []
    /// The stages that received an event after their BeforeWaiting turn (from a later
    /// stage's turn, through ``emit(_:after:)``), so take another: the next round starts
    /// at the first of them in ``ordered`` as it is then.
    private var turnAgain: [any HIDEventStage] = []
    /// The most rounds of turns one BeforeWaiting runs: stages that keep handing each
    /// other events at every turn wait for the next pass after that many.
    static let maximumBeforeWaitingRounds = 8

    /// Every stage's BeforeWaiting turn, in order; what a stage emits goes through the
    /// stages after it. A stage that receives events after its turn, from a later stage's
    /// turn (the touchpad's pointer events, which wait for the recognizers' evaluation, go
    /// through coalescing after coalescing's turn), takes another, and so do the stages
    /// after it: what any stage passes on before the loop waits reaches the handlers before
    /// it waits.
    func beforeWaiting() {
        let outer = (beforeWaitingTurn, roundStages, turnAgain)
        defer { (beforeWaitingTurn, roundStages, turnAgain) = outer }
        var first = 0
        for _ in 0..<Self.maximumBeforeWaitingRounds {
            let stages = ordered
            roundStages = stages
            turnAgain = []
            for index in stages.indices where index >= first {
                beforeWaitingTurn = index
                stages[index].beforeWaiting { Self.run($0, from: index + 1, in: stages) }
            }
            let again = turnAgain
            guard let next = ordered.firstIndex(where: { stage in again.contains { $0 === stage } }) else { return }
            first = next
        }
    }

    /// Every stage's turn after the queue was drained.
    func drained() {
        let stages = ordered
        for index in stages.indices {
            stages[index].drained { Self.run($0, from: index + 1, in: stages) }
        }
    }

    /// Tells every stage that the focus came or went.
    func focusChanged(isFocused: Bool) {
        let stages = ordered
        for index in stages.indices {
            stages[index].focusChanged(isFocused: isFocused) { Self.run($0, from: index + 1, in: stages) }
        }
    }

    // MARK: Changing the stages

    /// Takes a new order after a stage was set or cleared, installing a new one in a
    /// started system.
    func stagesChanged() {
        let previous = ordered
        ordered = stageOrder()
        guard let context else { return }
        for stage in ordered where !previous.contains(where: { $0 === stage }) { stage.install(in: context) }
    }

    /// Takes `stage` out: what it holds goes on to the stages after it, then it is gone.
    func remove(_ stage: any HIDEventStage) {
        if context != nil, let index = ordered.firstIndex(where: { $0 === stage }) {
            let stages = ordered
            stage.remove { Self.run($0, from: index + 1, in: stages) }
        }
        appStages.removeAll { $0 === stage }
        if stage === motion { motion = nil }
        if stage === keyRepeat { keyRepeat = nil }
        if stage === coalescing { coalescing = nil }
        if stage === gestures { gestures = nil }
        if stage === screenMapping { screenMapping = nil }
        if stage === touchpad { touchpad = nil }
        if stage === pointer { pointer = nil }
        if stage === routing { routing = nil }
        ordered = stageOrder()
    }

    /// Installs every stage and the BeforeWaiting observer (the system starts).
    func start(_ context: HIDStageContext) {
        self.context = context
        ordered = stageOrder()
        for stage in ordered { stage.install(in: context) }
        let pipeline = UnownedLoopReference(self, loop: context.loop)
        let observer = LoopObserver(
            activities: [.beforeWaiting, .exit], order: Self.observerOrder, label: "HIDEventSystem stages"
        ) { _, _ in pipeline.value.beforeWaiting() }
        self.observer = observer
        context.loop.add(observer, to: .common)
    }

    /// Where the stages' BeforeWaiting turn comes among the loop's observers: where
    /// UIKit's gesture observer is, after an app's observers of the default order.
    static let observerOrder = 2_000_000

    /// Removes every stage in order (what each holds goes through the ones after it),
    /// then lets go of all but the handlers (the system stops).
    func stop() {
        let stages = ordered
        if context != nil {
            for index in stages.indices { stages[index].remove { Self.run($0, from: index + 1, in: stages) } }
        }
        observer?.invalidate()
        observer = nil
        context = nil
        motion = nil
        keyRepeat = nil
        coalescing = nil
        gestures = nil
        appStages = []
        routing = nil
        ordered = stageOrder()
    }
}
