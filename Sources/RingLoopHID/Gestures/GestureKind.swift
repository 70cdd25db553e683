/// What a gesture is: the kind a recognizer reports in each ``GestureEvent``, and its
/// name in the command's reports and JSON (``rawValue``).
///
/// The ready-made recognizers report the constants below; a recognizer of your own (or
/// one of theirs given another kind, as a two-finger pan used for scrolling) reports
/// any kind you make, `GestureKind("scroll")`. Compare and switch on kinds, not on their
/// names:
///
/// ```swift
/// switch event.gesture {
/// case .tap: select(at: event.values.location)
/// case .pinch: zoom(by: event.values.scale)
/// default: break
/// }
/// ```
public struct GestureKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The kind's name (`tap`, `doubleTap`, `pan`…), as reports and JSON show it.
    public let rawValue: String

    /// The kind named `rawValue`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The kind named `name`.
    public init(_ name: String) { self.rawValue = name }

    /// The kind's name.
    public var description: String { rawValue }

    /// A single tap (``TapGestureRecognizer`` of one tap, any number of fingers).
    public static let tap = GestureKind("tap")
    /// Two taps in a row (``TapGestureRecognizer`` of two taps).
    public static let doubleTap = GestureKind("doubleTap")
    /// Three taps in a row (``TapGestureRecognizer`` of three taps).
    public static let tripleTap = GestureKind("tripleTap")
    /// Fingers held still (``LongPressGestureRecognizer``).
    public static let longPress = GestureKind("longPress")
    /// libinput's hold: fingers resting on a touchpad
    /// (``LongPressGestureRecognizer/touchpadHold()``).
    public static let hold = GestureKind("hold")
    /// Fingers dragged (``PanGestureRecognizer``).
    public static let pan = GestureKind("pan")
    /// A pan from an edge of the screen (``ScreenEdgePanGestureRecognizer``).
    public static let edgePan = GestureKind("edgePan")
    /// libinput's swipe: three or four fingers moving on a touchpad
    /// (``PanGestureRecognizer/touchpadSwipe()``).
    public static let touchpadSwipe = GestureKind("touchpadSwipe")
    /// A quick stroke in one direction (``SwipeGestureRecognizer``).
    public static let swipe = GestureKind("swipe")
    /// Two fingers drawn apart or together (``PinchGestureRecognizer``), or a hand
    /// closing or opening (``SpreadPinchGestureRecognizer``).
    public static let pinch = GestureKind("pinch")
    /// libinput's pinch: two to four fingers on a touchpad, with a rotation
    /// (``PinchGestureRecognizer/touchpadPinch()``).
    public static let touchpadPinch = GestureKind("touchpadPinch")
    /// Two fingers turning (``RotationGestureRecognizer``).
    public static let rotation = GestureKind("rotation")
    /// Any drag, followed when the event system tracks interactions
    /// (``HIDEventSystem/Configuration/tracksInteractions``).
    public static let drag = GestureKind("drag")
    /// The device shaken (``ShakeRecognizer``, UIKit's `.motionShake`).
    public static let shake = GestureKind("shake")
    /// The device turned to another orientation (``OrientationRecognizer``,
    /// `UIDevice.orientation`).
    public static let orientation = GestureKind("orientation")
}
