/// Ready-made sets of recognizers with the relationships apps usually set up, for a
/// program that wants gestures without choosing (and `ringloop monitor --gestures`).
public enum StandardGestures {
    /// UIKit's recognizers: taps with one to three fingers and a double tap (the single
    /// tap waits for it to fail), a long press, one- and two-finger pans (which wait for
    /// the swipes and the edge pan to fail), swipes in four directions, pinch and
    /// rotation (recognized together), an edge pan from any edge; and iPadOS's
    /// multitasking gestures (``multitasking(surfaces:)``): pans and swipes of three to
    /// five fingers, a five-finger pinch. A drag of any number of fingers is a pan, as
    /// with `UIPanGestureRecognizer`'s default of any number of touches.
    public static func uikit(surfaces: Set<GestureSurface.Kind> = Set(GestureSurface.Kind.allCases)) -> [GestureRecognizer] {
        let (taps, pan, scroll) = tapsAndPans()
        let swipes = [SwipeGestureRecognizer.Direction.right, .left, .up, .down].map {
            SwipeGestureRecognizer(directions: $0)
        }
        let edge = ScreenEdgePanGestureRecognizer(edges: .all)
        for swipe in swipes { pan.require(toFail: swipe) }
        pan.require(toFail: edge)
        let pinch = PinchGestureRecognizer()
        let rotation = RotationGestureRecognizer()
        pinch.recognizeSimultaneously { _, other in other === rotation }
        let all = taps + [LongPressGestureRecognizer(), pan, scroll] + swipes + [pinch, rotation, edge]
        for recognizer in all { recognizer.surfaces = surfaces }
        return all + multitasking(surfaces: surfaces)
    }

    /// libinput's touchpad gestures with tapping: taps with one to three fingers and a
    /// double tap, hold, the three- and four-finger swipe, pinch; one-finger motion and
    /// two-finger scrolling as pans, which do not stop a tap (as libinput taps whatever
    /// the pointer does meanwhile) and leave their touches to the pointer: libinput's
    /// touchpad gestures begin at two fingers for a pinch and three for a swipe, and one
    /// finger's motion moves the pointer, two fingers' scroll (libinput's "Gestures"). For
    /// touchpads.
    public static func libinput(surfaces: Set<GestureSurface.Kind> = [.touchpad]) -> [GestureRecognizer] {
        let (taps, pan, scroll) = tapsAndPans()
        for motion in [pan, scroll] {
            motion.recognizeSimultaneously { _, other in other is TapGestureRecognizer }
            motion.cancelsTouchesInHandlers = false
        }
        let all =
            taps + [
                LongPressGestureRecognizer.touchpadHold(), pan, scroll, PanGestureRecognizer.touchpadSwipe(),
                PinchGestureRecognizer.touchpadPinch(),
            ]
        for recognizer in all { recognizer.surfaces = surfaces }
        return all
    }

    /// UIKit's set (with iPadOS's multitasking gestures) on touchscreens and libinput's
    /// on touchpads (where three- and four-finger swipes are libinput's swipe gesture).
    public static func forEverySurface() -> [GestureRecognizer] {
        uikit(surfaces: [.touchscreen]) + libinput(surfaces: [.touchpad])
    }

    private static func tapsAndPans() -> ([GestureRecognizer], PanGestureRecognizer, PanGestureRecognizer) {
        let tap = TapGestureRecognizer(taps: 1, fingers: 1)
        let doubleTap = TapGestureRecognizer(taps: 2, fingers: 1)
        tap.require(toFail: doubleTap)
        let taps: [GestureRecognizer] = [
            tap, TapGestureRecognizer(taps: 1, fingers: 2), TapGestureRecognizer(taps: 1, fingers: 3), doubleTap,
        ]
        return (taps, PanGestureRecognizer(fingers: 1...1), PanGestureRecognizer(fingers: 2...2))
    }
}
