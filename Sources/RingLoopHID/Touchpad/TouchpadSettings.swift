import RingLoop
import RingLoopEvdev

/// How a touchpad works as a pointer (the touchpad stage, ``HIDEventSystem/setTouchpadSettings(_:)``):
/// libinput's touchpad options, each switchable, with libinput's defaults where libinput
/// documents one.
///
/// Lengths are in millimetres. A touchpad that does not report its resolution is taken
/// as libinput takes it: 69 mm wide and 50 mm high.
public struct TouchpadSettings: Sendable, Hashable {
    /// What a physical click of a clickpad (a touchpad whose whole surface is the button,
    /// `INPUT_PROP_BUTTONPAD`) presses.
    public enum ClickMethod: String, Sendable, Hashable, CaseIterable {
        /// Software button areas: the bottom strip of the pad is split into a left and a
        /// right button; a click anywhere else is a left click (libinput's default on
        /// clickpads other than Apple's).
        case buttonAreas
        /// Clickfinger: the number of fingers on the pad chooses the button, one for
        /// left, two for right, three for middle (libinput's default on Apple's
        /// touchpads).
        case clickfinger
        /// Each clickpad's default: clickfinger on Apple's (vendor 0x05ac), button areas
        /// elsewhere.
        case automatic
    }

    /// What scrolls.
    public enum ScrollMethod: String, Sendable, Hashable, CaseIterable {
        /// Two fingers moving together (libinput's default on touchpads that see two fingers).
        case twoFinger
        /// One finger moving along the right edge (vertical) or the bottom edge (horizontal).
        case edge
        /// Nothing scrolls: two fingers do nothing, the edges move the pointer.
        case none
    }

    /// Which button a tap of two and of three fingers is (libinput's tap button map).
    public enum TapButtonMap: String, Sendable, Hashable, CaseIterable {
        /// One finger left, two right, three middle (libinput's default, `lrm`).
        case leftRightMiddle
        /// One finger left, two middle, three right (`lmr`).
        case leftMiddleRight
    }

    /// Tap-to-click: a short touch of one, two or three fingers that does not move is a
    /// click (left, right, middle by ``tapButtonMap``). Off by default, as in libinput.
    public var tapping: Bool
    /// Which button a tap of two and of three fingers is.
    public var tapButtonMap: TapButtonMap
    /// Tap-and-drag: a tap followed at once by a finger that stays down holds the button
    /// while the finger moves (on by default, as in libinput).
    public var tapAndDrag: Bool
    /// Drag lock: lifting the finger during a tap-and-drag keeps the button held for
    /// ``dragLockTimeout``; putting a finger back continues the drag, a tap ends it. Off by
    /// default, as in libinput.
    public var dragLock: Bool
    /// What a clickpad's physical click presses.
    public var clickMethod: ClickMethod
    /// What scrolls.
    public var scrollMethod: ScrollMethod
    /// Palm rejection: a contact the device marks as a palm (`MT_TOOL_PALM`), one pressing
    /// harder than ``palmPressureThreshold`` or wider than ``palmSizeThreshold``, and one that
    /// begins in the side or top edges and stays there, moves nothing and taps nothing.
    public var palmDetection: Bool
    /// The pressure (`ABS_MT_PRESSURE` units) above which a contact is a palm; `nil`: 130 where
    /// the device reports `ABS_MT_PRESSURE` with a range above that (libinput's default),
    /// never elsewhere.
    public var palmPressureThreshold: Int32?
    /// The touch major axis in millimetres above which a contact is a palm; `nil`: never
    /// (libinput sets it only for devices it knows).
    public var palmSizeThreshold: Double?
    /// Disable-while-typing: while keys of a built-in keyboard are typed, touches that begin
    /// on a built-in touchpad move nothing and tap nothing, until ``typingTimeout`` after the
    /// last key (``longTypingTimeout`` once several keys were typed). Modifiers alone do not
    /// count, so a modifier and a click still work. On by default, as in libinput.
    public var disableWhileTyping: Bool

    /// The longest touch that can be a tap, and the longest pause between a tap and the
    /// finger that starts a drag or a double tap (libinput: 180 ms).
    public var tapTimeout: Duration
    /// How far a finger may move from where it touched and still tap, in millimetres.
    /// libinput calls it implementation-defined; 5 mm is what real taps need: the taps
    /// recorded on an ALPS GlidePoint (devices/real) wander up to 4.4 mm while down, and it is
    /// the gesture recognizers' tap allowance too, so a tap is the same thing to both.
    public var tapMovementThreshold: Double
    /// How long drag lock waits for a finger to come back (libinput: 300 ms).
    public var dragLockTimeout: Duration
    /// How far two fingers must move, in millimetres, before they scroll on that axis;
    /// once scrolling, any movement scrolls.
    public var scrollThreshold: Double
    /// Once two fingers scroll on one axis, how far they must move along the other before
    /// it scrolls too (a direction lock: a vertical scroll's sideways drift scrolls nothing).
    public var scrollDirectionLockThreshold: Double
    /// The width of the right and the height of the bottom edge that scroll with edge
    /// scrolling, in millimetres.
    public var edgeScrollWidth: Double
    /// The height of the software buttons at the bottom of a clickpad, in millimetres.
    public var buttonAreaHeight: Double
    /// How long touches are ignored after a key of a built-in keyboard (libinput: 200 ms).
    public var typingTimeout: Duration
    /// How long after the last key of a sequence of several (libinput: 500 ms).
    public var longTypingTimeout: Duration

    /// libinput's defaults, tapping off; change what differs.
    /// - Parameters:
    ///   - tapping: Whether taps click.
    ///   - tapButtonMap: Which button two- and three-finger taps press.
    ///   - tapAndDrag: Whether a tap followed by a finger that stays down drags.
    ///   - dragLock: Whether a drag survives a lifted finger for ``dragLockTimeout``.
    ///   - clickMethod: What a clickpad's physical click presses.
    ///   - scrollMethod: What scrolls.
    ///   - palmDetection: Whether palms are ignored.
    ///   - disableWhileTyping: Whether touches are ignored while a built-in keyboard types.
    public init(
        tapping: Bool = false, tapButtonMap: TapButtonMap = .leftRightMiddle, tapAndDrag: Bool = true, dragLock: Bool = false,
        clickMethod: ClickMethod = .automatic, scrollMethod: ScrollMethod = .twoFinger, palmDetection: Bool = true,
        disableWhileTyping: Bool = true
    ) {
        self.tapping = tapping
        self.tapButtonMap = tapButtonMap
        self.tapAndDrag = tapAndDrag
        self.dragLock = dragLock
        self.clickMethod = clickMethod
        self.scrollMethod = scrollMethod
        self.palmDetection = palmDetection
        self.palmPressureThreshold = nil
        self.palmSizeThreshold = nil
        self.disableWhileTyping = disableWhileTyping
        tapTimeout = .milliseconds(180)
        tapMovementThreshold = 5
        dragLockTimeout = .milliseconds(300)
        scrollThreshold = 2
        scrollDirectionLockThreshold = 5
        edgeScrollWidth = 7
        buttonAreaHeight = 10
        typingTimeout = .milliseconds(200)
        longTypingTimeout = .milliseconds(500)
    }

    /// The button a tap of `fingers` fingers presses (`nil` past three).
    func tapButton(fingers: Int) -> UInt16? {
        switch fingers {
        case 1: Evdev.BTN_LEFT
        case 2: tapButtonMap == .leftRightMiddle ? Evdev.BTN_RIGHT : Evdev.BTN_MIDDLE
        case 3: tapButtonMap == .leftRightMiddle ? Evdev.BTN_MIDDLE : Evdev.BTN_RIGHT
        default: nil
        }
    }
}
