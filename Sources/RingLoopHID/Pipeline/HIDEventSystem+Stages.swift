import RingLoop

// The stages an app asks for: its own filters, gesture and motion recognizers.
extension HIDEventSystem {
    // MARK: The app's stages

    /// Adds a stage of the app's own after the library's stages (gestures included) and
    /// before the handlers; stages added later come after those added before. A stage
    /// may map, split or consume events (``HIDEventStage``). Added to a started system it
    /// is installed at once. Client loop thread. ``stop()`` lets every stage go, as it
    /// does handlers.
    public func addStage(_ stage: any HIDEventStage) {
        loop.preconditionOnLoopThread("HIDEventSystem.addStage")
        guard !pipeline.appStages.contains(where: { $0 === stage }) else { return }
        pipeline.appStages.append(stage)
        pipeline.stagesChanged()
    }

    /// Takes a stage of the app's out: what it holds goes on to the stages after it
    /// (``HIDEventStage/remove(emit:)``), and it sees no more events.
    public func removeStage(_ stage: any HIDEventStage) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeStage")
        guard pipeline.appStages.contains(where: { $0 === stage }) else { return }
        pipeline.remove(stage)
    }

    /// The stages every event goes through now, in order, by name: the library's
    /// (`keymap`, `motion`, `key repeat`, `coalescing`, `gestures`, when present), the app's (by
    /// type name), `handlers`, and `routing` in an event server.
    public var stageOrder: [String] {
        pipeline.ordered.map { stage in
            switch stage {
            case is KeymapStage: "keymap"
            case is MotionStage: "motion"
            case is KeyRepeatStage: "key repeat"
            case is CoalescingStage: "coalescing"
            case is GestureStage: "gestures"
            case is GamepadLayoutStage: "gamepad layout"
            case is ScreenMappingStage: "screen mapping"
            case is TouchpadStage: "touchpad"
            case is PointerStage: "pointer"
            case is HandlerStage: "handlers"
            default: stage === pipeline.routing ? "routing" : String(describing: type(of: stage))
            }
        }
    }

    // MARK: Gesture recognizers

    /// Attaches a gesture recognizer to the digitizer stream (touchscreens and touchpads).
    ///
    /// Frames are collected as they pass the gesture stage and evaluated when the loop is
    /// about to wait (after motion coalescing), as UIKit's
    /// `_UIGestureRecognizerUpdateObserver` does; the recognizers' actions run there, in
    /// the order their states changed. A timer wakes the loop for deadlines (a long
    /// press, a tap's time limit). Recognizers that begin with
    /// ``GestureRecognizer/cancelsTouchesInHandlers`` make the handlers see their touches
    /// cancelled, and no more of them. Client loop thread; before or after ``start()``.
    /// ``stop()`` cancels gestures under way and lets every recognizer go, as it does
    /// handlers: add them again after a new start.
    public func addGestureRecognizer(_ recognizer: GestureRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.addGestureRecognizer")
        gestureStage().add(recognizer)
    }

    /// Detaches a recognizer (one under way is cancelled first).
    public func removeGestureRecognizer(_ recognizer: GestureRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeGestureRecognizer")
        pipeline.gestures?.remove(recognizer)
    }

    /// The attached recognizers, in the order they were added.
    public var gestureRecognizers: [GestureRecognizer] { pipeline.gestures?.recognizers ?? [] }

    /// Whether recognizers measure a touchscreen mapped to a screen (``setScreens(_:)``) in
    /// that screen's points (``GestureSurface/Unit/screenPoints``) instead of the panel's
    /// millimetres: locations, translations and velocities are in the screen's pixels
    /// after calibration and rotation, so a swipe's direction is the screen's as the app
    /// draws it (a panel mounted in portrait swipes "up" where the user sees up), and
    /// lengths given in millimetres are converted by the screen's physical size (else the
    /// panel's). Touchpads and unmapped touchscreens keep their own units. Client loop
    /// thread; takes effect from each device's next touch.
    public var gesturesInScreenPoints: Bool {
        get { pipeline.gestures?.inScreenPoints ?? false }
        set {
            loop.preconditionOnLoopThread("HIDEventSystem.gesturesInScreenPoints")
            guard newValue || pipeline.gestures != nil else { return }
            let stage = gestureStage()
            stage.inScreenPoints = newValue
            stage.forgetSurfaces()
        }
    }

    /// Whether the loop runs in `RingRunLoop.Mode.tracking` for a drag right now.
    public var isTracking: Bool { pipeline.gestures?.inTrackingRun ?? false }

    /// The gesture stage, once a recognizer was added or tracking configured.
    var gestures: GestureStage? { pipeline.gestures }

    func gestureStage() -> GestureStage {
        if let gestures = pipeline.gestures { return gestures }
        let stage = GestureStage(tracksInteractions: configuration.tracksInteractions)
        pipeline.gestures = stage
        pipeline.stagesChanged()
        return stage
    }

    // MARK: Motion recognizers

    /// Attaches a motion recognizer (``ShakeRecognizer``, ``OrientationRecognizer``) to
    /// the samples of every ``HIDDeviceClass/motion`` device.
    ///
    /// It sees every sample, also when ``Configuration/coalesceMotion`` hands handlers one
    /// per pass, in the order they were read; samples are evaluated when the loop is about
    /// to wait, and the recognizer's actions run there. A timer wakes the loop for
    /// deadlines (a shake ends once the hand is still). A device's removal cancels what
    /// was under way on it. Client loop thread; before or after ``start()``. ``stop()``
    /// lets every recognizer go, as it does handlers.
    public func addMotionRecognizer(_ recognizer: MotionRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.addMotionRecognizer")
        let stage: MotionStage
        if let existing = pipeline.motion {
            stage = existing
        } else {
            stage = MotionStage()
            pipeline.motion = stage
            pipeline.stagesChanged()
        }
        stage.add(recognizer)
    }

    /// Detaches a motion recognizer.
    public func removeMotionRecognizer(_ recognizer: MotionRecognizer) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeMotionRecognizer")
        pipeline.motion?.remove(recognizer)
    }

    /// The attached motion recognizers, in the order they were added.
    public var motionRecognizers: [MotionRecognizer] { pipeline.motion?.recognizers ?? [] }
}
