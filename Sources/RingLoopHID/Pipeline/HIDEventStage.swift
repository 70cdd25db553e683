import RingLoop

/// One stage of the input chain's drain, as UIKit turns an `IOHIDEvent` into a `UIEvent`
/// in steps: a keymap gives a key its text, a screen mapping gives a touch its point, a
/// recognizer turns touches into a gesture. The event system's source0 takes each event
/// off the queue and hands it to its stages in one fixed order
/// (``HIDEventSystem/stageOrder``); each stage passes on zero, one or more events to the
/// next, and may keep state, do work when the loop is about to wait, and wake the loop
/// with a timer of its own.
///
/// An app adds its own stages with ``HIDEventSystem/addStage(_:)``: they run after the
/// library's (gestures included) and before the handlers, in the order they were added —
/// the documented way to map or consume events before any handler sees them:
///
/// ```swift
/// /// Turns the right Alt key into the Compose key.
/// final class RightAltIsCompose: HIDEventStage {
///     func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
///         guard case .key(var key) = event.payload, key.code == 100 else { return emit(event) }
///         key.code = 127
///         var mapped = event
///         mapped.payload = .key(key)
///         emit(mapped)
///     }
/// }
/// system.addStage(RightAltIsCompose())
/// ```
///
/// Every member runs on the client loop's thread. `emit` is valid only during the call
/// that receives it; to emit later (from a timer), call ``HIDStageContext/emit(_:after:)``.
public protocol HIDEventStage: AnyObject {
    /// Called when the stage joins a started system, or when its system starts: add the
    /// stage's timers to `context.loop` here, and keep `context` to emit from them.
    func install(in context: HIDStageContext)

    /// Takes one event and passes on what the next stage should see: the event itself, a
    /// changed one, several, or none (the event is consumed here).
    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void)

    /// Called when the loop is about to wait (BeforeWaiting), after every event the pass
    /// took has gone through the stages, in the stages' order: what the stage held for the
    /// pass (coalesced motion, frames for the recognizers) goes on now. A stage that
    /// receives events after its turn, from a later stage's turn through
    /// ``HIDStageContext/emit(_:after:)`` (a touchpad's motion, released once the
    /// recognizers evaluated the pass), is called again, and so are the stages after it:
    /// what reaches a stage before the loop waits goes on before it waits. So one
    /// BeforeWaiting may call it several times — at most 8 rounds
    /// (`HIDEventPipeline.maximumBeforeWaitingRounds`; stages that keep handing each other
    /// events go on at the next pass after that) — and each call should pass on only what
    /// it holds then.
    func beforeWaiting(emit: (HIDEvent) -> Void)

    /// Called each time the system's queue has been drained (once per source0 perform).
    func drained(emit: (HIDEvent) -> Void)

    /// Called when a client of an event server gains or loses the focus: a stage that
    /// keeps state across events (a compose sequence, a key repeating) starts clean.
    func focusChanged(isFocused: Bool, emit: (HIDEvent) -> Void)

    /// Called when the stage leaves its system (``HIDEventSystem/removeStage(_:)``) or
    /// the system stops: pass on what is held, and take the stage's timers off the loop.
    func remove(emit: (HIDEvent) -> Void)
}

extension HIDEventStage {
    /// Does nothing.
    public func install(in context: HIDStageContext) {}
    /// Does nothing.
    public func beforeWaiting(emit: (HIDEvent) -> Void) {}
    /// Does nothing.
    public func drained(emit: (HIDEvent) -> Void) {}
    /// Does nothing.
    public func focusChanged(isFocused: Bool, emit: (HIDEvent) -> Void) {}
    /// Does nothing.
    public func remove(emit: (HIDEvent) -> Void) {}
}

/// What a stage may use of its event system: the loop, the devices, and a way to pass
/// events on outside ``HIDEventStage/process(_:emit:)`` (from a timer). Client loop
/// thread only.
public final class HIDStageContext {
    unowned let system: HIDEventSystem

    init(system: HIDEventSystem) { self.system = system }

    /// The client loop the system's stages run on.
    public var loop: RingRunLoop { system.loop }

    /// The attached device with `id`, if any.
    public func device(_ id: HIDDeviceID) -> HIDDeviceInfo? { system.device(id) }

    /// What `device`'s attach read and resolved: its udev properties, read once, and its
    /// settings by the settings in force (``HIDEventSystem/setScreens(_:)``). Every stage
    /// that configures a device takes them here, so all see the same answer.
    func attachment(of device: HIDDeviceInfo) -> DeviceAttachment { system.attachPolicy.attachment(of: device) }

    /// Hands `event` to the stages after `stage`, as if `stage` had emitted it now (a key
    /// repeat from a timer, a gesture's cancellations). Does nothing when `stage` is not
    /// one of the system's stages any more.
    public func emit(_ event: HIDEvent, after stage: any HIDEventStage) {
        system.pipeline.emit(event, after: stage)
    }
}
