import RingLoop
import RingLoopEvdev

/// What a touchpad's touches mean to a pointer, as ``TouchpadInterpreter`` makes it.
package enum TouchpadAction: Sendable, Hashable {
    /// The pointer moves: `dx`, `dy` in libinput's normalized units (a 1000-dpi device:
    /// 1 mm is 39.37), unaccelerated; `deviceDX`, `deviceDY` in the touchpad's own units.
    /// Positive is right and down.
    case motion(dx: Double, dy: Double, deviceDX: Double, deviceDY: Double)
    /// A button goes down or up (`BTN_LEFT`, `BTN_RIGHT`, `BTN_MIDDLE`); `isTap`: tapping
    /// made it (not a clickpad's physical click).
    case button(code: UInt16, isDown: Bool, isTap: Bool)
    /// Scrolling by `horizontal`, `vertical` in libinput's scroll value for finger and edge
    /// scrolling (`TouchpadInterpreter.scrollPerMillimetre`), positive right and down;
    /// `isStop` ends a scroll with both values 0 (libinput's axis stop).
    case scroll(horizontal: Double, vertical: Double, source: TouchpadScrollSource, isStop: Bool)
}

/// Which kind of touchpad scrolling made a scroll action.
package enum TouchpadScrollSource: Sendable, Hashable {
    case finger
    case edge
}

/// One touchpad as a pointer: a pure state machine over the decoder's frames (no loop, no
/// timers), as libinput's touchpad code is over evdev frames: tapping (with tap-and-drag
/// and drag lock), a clickpad's software buttons and clickfinger, palm rejection,
/// disable-while-typing, two-finger and edge scrolling, pointer motion.
///
/// Feed it every frame of the device in order (``process(_:at:into:)``), the time as it
/// passes (``advance(to:into:)``, by ``nextDeadline``), keys typed on a keyboard it pairs
/// with (``keyTyped(at:)``) and physical buttons of a touchpad that is not a clickpad
/// (``physicalButton(isDown:at:)``). Allocation-free once warm: the touch table keeps
/// its capacity.
///
/// Written from libinput's documentation (tapping, clickpad software buttons, palm
/// detection, scrolling, disable-while-typing) and from what real touchpads recorded.
package struct TouchpadInterpreter {
    /// The kernel's `MT_TOOL_PALM` (`ABS_MT_TOOL_TYPE`).
    static let palmToolType: Int32 = 2
    /// A jump larger than this in one frame is the touchpad losing the finger, not motion
    /// (libinput's touchpad-jumping-cursors: such deltas are dropped).
    static let jumpThreshold = 20.0
    /// How long a touch that begins in a palm edge has to leave it (libinput: 200 ms).
    static let edgePalmTimeout: Duration = .milliseconds(200)
    /// Millimetres to libinput's normalized units (1000 dpi).
    static let normalizedPerMillimetre = 1000 / 25.4
    /// libinput's finger and edge scroll value per millimetre, measured: libinput 1.22 on
    /// the booted kernel scrolls 10.18 for each 30-unit step (0.968 mm) of hid-multitouch's
    /// ELAN pad (31 units a millimetre), and a quarter of the normalized distance on three
    /// Synaptics pads without resolution (kernel-check, libinput/touchpad).
    static let scrollPerMillimetre = 10.18 * 31 / 30

    package let settings: TouchpadSettings
    let unitsPerMillimetreX: Double
    let unitsPerMillimetreY: Double
    let minimumX: Double
    let minimumY: Double
    /// The pad's size in millimetres.
    package let width: Double
    package let height: Double
    /// A clickpad: the physical button is the whole surface (`INPUT_PROP_BUTTONPAD`).
    package let isClickpad: Bool
    let usesClickfinger: Bool
    let pressureThreshold: Int32?
    let sizeThreshold: Double?
    let palmEdgeWidth: Double
    let isBoundingBox: Bool

    struct Touch {
        enum Role: Equatable {
            /// A finger that moves, taps and scrolls.
            case finger
            /// A palm (by tool type, pressure or size), or a touch in a palm edge.
            case palm
            /// Begun while typing, or claimed by a gesture recognizer: ignored until lifted.
            case ignored
            /// Resting in a clickpad's software button area (it has not left it).
            case buttonArea
        }
        var id: Int32
        var x: Double
        var y: Double
        var startX: Double
        var startY: Double
        var began: MonotonicInstant
        var role: Role
        /// Begun in a palm edge (it becomes a finger by leaving it in time).
        var inPalmEdge = false
        /// The scrolling edge it began on, for edge scrolling.
        var scrollEdge: Edge?
        var edgeScrolling = false
        var movedBeyondTap = false
        var deltaX = 0.0
        var deltaY = 0.0
        var isLive = true
    }

    enum Edge { case right, bottom }

    enum TapState: Equatable {
        case idle
        /// Fingers down that may still be a tap: the most fingers seen, since when.
        case touching(fingers: Int, since: MonotonicInstant)
        /// Fingers down that cannot tap any more; idle when all are up.
        case dead
        /// A one-finger tap's button is down, released at `since` + the tap timeout unless a
        /// finger comes (tap-and-drag, a double tap).
        case tapped(button: UInt16, since: MonotonicInstant)
        /// A finger came after a tap: a drag when it stays or moves, a double tap when it lifts.
        case dragOrDoubleTap(button: UInt16, since: MonotonicInstant)
        /// The tap's button is held while the finger moves.
        case dragging(button: UInt16)
        /// Drag lock: the finger lifted during a drag; the button stays held until the timeout.
        case dragLockWait(button: UInt16, since: MonotonicInstant)
        /// A finger came back during drag lock: a drag again when it stays, the end when it taps.
        case dragLockTouch(button: UInt16, since: MonotonicInstant)
    }

    var touches: [Touch] = []
    var tap = TapState.idle
    /// The button a clickpad's physical click pressed, while it is down.
    var clickButton: UInt16?
    var physicalButtons = 0
    var lastFingers = 0
    /// Scrolling under way: which axes passed the threshold, and the movement before.
    var scrollSource: TouchpadScrollSource?
    var scrollHorizontal = false
    var scrollVertical = false
    var pendingScrollX = 0.0
    var pendingScrollY = 0.0
    /// Disable-while-typing: touches that begin before this are ignored.
    var typingUntil = MonotonicInstant(nanoseconds: 0)
    var lastKey = MonotonicInstant(nanoseconds: 0)
    /// The tap button the interpreter holds down (its press went out).
    var heldTapButton: UInt16?
    /// Tracking ids of the touches since the pad was last empty (whose taps a recognizer may claim).
    var sequence: [Int32] = []

    /// Normalized units (libinput's 1000 dpi) per unit of the pad's horizontal axis.
    package var normalizedPerUnitX: Double { Self.normalizedPerMillimetre / unitsPerMillimetreX }

    /// The interpreter of `device` (a touchpad) with `settings`.
    package init(device: HIDDeviceInfo, settings: TouchpadSettings) {
        self.settings = settings
        let axisX = device.axes[Evdev.ABS_MT_POSITION_X] ?? device.axes[Evdev.ABS_X]
        let axisY = device.axes[Evdev.ABS_MT_POSITION_Y] ?? device.axes[Evdev.ABS_Y]
        func span(_ axis: AbsoluteAxis?) -> Double {
            guard let axis, axis.maximum > axis.minimum else { return 1 }
            return Double(Int64(axis.maximum) - Int64(axis.minimum))
        }
        let resolved = (axisX?.resolution ?? 0) > 0 && (axisY?.resolution ?? 0) > 0
        // libinput takes a touchpad without resolution as 69 × 50 mm.
        unitsPerMillimetreX = resolved ? Double(axisX!.resolution) : span(axisX) / 69
        unitsPerMillimetreY = resolved ? Double(axisY!.resolution) : span(axisY) / 50
        minimumX = Double(axisX?.minimum ?? 0)
        minimumY = Double(axisY?.minimum ?? 0)
        width = span(axisX) / unitsPerMillimetreX
        height = span(axisY) / unitsPerMillimetreY
        isClickpad = device.properties.contains(Evdev.INPUT_PROP_BUTTONPAD)
        switch settings.clickMethod {
        case .clickfinger: usesClickfinger = true
        case .buttonAreas: usesClickfinger = false
        case .automatic: usesClickfinger = device.vendor == 0x05ac
        }
        if let threshold = settings.palmPressureThreshold {
            pressureThreshold = threshold
        } else if let pressure = device.axes[Evdev.ABS_MT_PRESSURE], pressure.maximum > 130 {
            pressureThreshold = 130
        } else {
            pressureThreshold = nil
        }
        if let size = settings.palmSizeThreshold, device.axes[Evdev.ABS_MT_TOUCH_MAJOR] != nil {
            sizeThreshold = size * unitsPerMillimetreX
        } else {
            sizeThreshold = nil
        }
        // Palm edges: the outer 5 % on each side and at the top, on pads wide enough to
        // rest a palm on (libinput leaves pads under 70 mm alone).
        palmEdgeWidth = width >= 70 ? width * 0.05 : 0
        isBoundingBox = device.isSemiMultitouch
        touches.reserveCapacity(DigitizerFrame.capacity)
        sequence.reserveCapacity(DigitizerFrame.capacity)
    }

    /// When ``advance(to:into:)`` has something to do next (a tap's release, a drag lock's
    /// end, a touch that can no longer tap); `nil` when nothing waits.
    package var nextDeadline: MonotonicInstant? {
        switch tap {
        case .touching(_, let since), .tapped(_, let since), .dragOrDoubleTap(_, let since), .dragLockTouch(_, let since):
            since + settings.tapTimeout
        case .dragLockWait(_, let since): since + settings.dragLockTimeout
        case .idle, .dead, .dragging: nil
        }
    }

    // MARK: Time

    /// Lets the time pass to `now`: a tap's button released, a drag lock ended, a touch
    /// held too long to tap.
    package mutating func advance(to now: MonotonicInstant, into out: inout [TouchpadAction]) {
        guard let deadline = nextDeadline, deadline <= now else { return }
        switch tap {
        case .touching: tap = .dead
        case .tapped(let button, _):
            release(button, into: &out)
            tap = .idle
        case .dragOrDoubleTap(let button, _), .dragLockTouch(let button, _): tap = .dragging(button: button)
        case .dragLockWait(let button, _):
            release(button, into: &out)
            tap = .idle
        case .idle, .dead, .dragging: break
        }
    }

    // MARK: Frames

    /// Takes one frame of the touchpad (its contacts, finger count and clickpad button) at
    /// the kernel's `time`, and appends what it means.
    package mutating func process(_ frame: DigitizerFrame, at time: MonotonicInstant, into out: inout [TouchpadAction]) {
        advance(to: time, into: &out)
        updateTouches(frame, at: time)
        let fingers = fingerCount(frame)
        if fingers != lastFingers {
            // When fingers come or go, positions jump (a bounding box's corners, a pad
            // swapping slots): the frame moves nothing.
            for index in touches.indices {
                touches[index].deltaX = 0
                touches[index].deltaY = 0
            }
            lastFingers = fingers
        }
        if isClickpad { updateClick(down: frame.buttonDown, fingers: fingers, into: &out) }
        if settings.tapping { updateTap(fingers: fingers, at: time, into: &out) }
        updatePointer(fingers: fingers, into: &out)
        touches.removeAll { !$0.isLive }
        if touches.isEmpty { sequence.removeAll(keepingCapacity: true) }
    }

    mutating func updateTouches(_ frame: DigitizerFrame, at time: MonotonicInstant) {
        for index in touches.indices {
            touches[index].deltaX = 0
            touches[index].deltaY = 0
        }
        for index in 0..<frame.count {
            let contact = frame[index]
            let x = (Double(contact.x) - minimumX) / unitsPerMillimetreX
            let y = (Double(contact.y) - minimumY) / unitsPerMillimetreY
            // Contacts come in the order of the table most frames: look there first.
            let known =
                index < touches.count && touches[index].id == contact.trackingID
                ? index : touches.firstIndex { $0.id == contact.trackingID }
            switch contact.phase {
            case .ended, .cancelled:
                guard let known else { continue }
                touches[known].isLive = false
                if contact.phase == .cancelled, case .touching = tap { tap = .dead }
            case .began, .moved, .stationary:
                guard let known else {
                    touches.append(newTouch(contact, x: x, y: y, at: time))
                    if !sequence.contains(contact.trackingID) { sequence.append(contact.trackingID) }
                    continue
                }
                var touch = touches[known]
                let dx = x - touch.x
                let dy = y - touch.y
                if (dx * dx + dy * dy).squareRoot() <= Self.jumpThreshold {
                    touch.deltaX = dx
                    touch.deltaY = dy
                }
                touch.x = x
                touch.y = y
                let fromStartX = x - touch.startX
                let fromStartY = y - touch.startY
                if (fromStartX * fromStartX + fromStartY * fromStartY).squareRoot() > settings.tapMovementThreshold {
                    touch.movedBeyondTap = true
                }
                classifyPalm(&touch, contact, at: time)
                if touch.role == .buttonArea, !isInButtonArea(y: y) { touch.role = .finger }
                touches[known] = touch
            }
        }
    }

    func newTouch(_ contact: Contact, x: Double, y: Double, at time: MonotonicInstant) -> Touch {
        var touch = Touch(id: contact.trackingID, x: x, y: y, startX: x, startY: y, began: time, role: .finger)
        if settings.disableWhileTyping, time < typingUntil {
            touch.role = .ignored
        } else if isClickpad, !usesClickfinger, isInButtonArea(y: y) {
            touch.role = .buttonArea
        }
        if settings.scrollMethod == .edge {
            if x >= width - settings.edgeScrollWidth {
                touch.scrollEdge = .right
            } else if y >= height - settings.edgeScrollWidth {
                touch.scrollEdge = .bottom
            }
        }
        if settings.palmDetection, touch.role == .finger, !isBoundingBox {
            let rightEdge = settings.scrollMethod == .edge ? width : width - palmEdgeWidth
            if palmEdgeWidth > 0, x < palmEdgeWidth || x > rightEdge || y < palmEdgeWidth {
                touch.inPalmEdge = true
                touch.role = .palm
            }
        }
        var classified = touch
        classifyPalm(&classified, contact, at: time)
        return classified
    }

    /// A palm by the device's word, its pressure or its size; a palm-edge touch becomes a
    /// finger when it leaves the edge within ``edgePalmTimeout``.
    func classifyPalm(_ touch: inout Touch, _ contact: Contact, at time: MonotonicInstant) {
        guard settings.palmDetection, touch.role != .ignored else { return }
        if contact.toolType == Self.palmToolType
            || pressureThreshold.map({ contact.pressure > $0 }) == true
            || sizeThreshold.map({ Double(contact.size) > $0 }) == true
        {
            touch.role = .palm
            touch.inPalmEdge = false
            return
        }
        if touch.inPalmEdge {
            let rightEdge = settings.scrollMethod == .edge ? width : width - palmEdgeWidth
            let inEdge = touch.x < palmEdgeWidth || touch.x > rightEdge || touch.y < palmEdgeWidth
            if !inEdge {
                touch.inPalmEdge = false
                if time - touch.began <= Self.edgePalmTimeout { touch.role = .finger }
            }
        }
    }

    func isInButtonArea(y: Double) -> Bool { y >= height - settings.buttonAreaHeight }

    /// Fingers that count: live fingers, and fingers the pad counts (`BTN_TOOL_*`) beyond
    /// the contacts it reports (two slots, three fingers).
    func fingerCount(_ frame: DigitizerFrame) -> Int {
        var fingers = 0
        var live = 0
        for touch in touches where touch.isLive {
            live += 1
            if touch.role == .finger { fingers += 1 }
        }
        // A semi-multitouch pad's contacts are a bounding box's corners: its tools count.
        if isBoundingBox { return fingers > 0 ? frame.fingerCount : 0 }
        return fingers + max(0, frame.fingerCount - live)
    }

    // MARK: Clicks

    mutating func updateClick(down: Bool, fingers: Int, into out: inout [TouchpadAction]) {
        guard down != (clickButton != nil) else { return }
        if let button = clickButton {
            out.append(.button(code: button, isDown: false, isTap: false))
            clickButton = nil
            return
        }
        let button: UInt16
        if usesClickfinger {
            button = fingers >= 3 ? Evdev.BTN_MIDDLE : fingers == 2 ? Evdev.BTN_RIGHT : Evdev.BTN_LEFT
        } else {
            // The software buttons: a finger in the right half of the bottom strip makes it
            // a right click; anywhere else is a left click.
            var right = false
            for touch in touches where touch.isLive && touch.role != .palm && isInButtonArea(y: touch.y) {
                if touch.x >= width / 2 { right = true }
            }
            button = right ? Evdev.BTN_RIGHT : Evdev.BTN_LEFT
        }
        clickButton = button
        out.append(.button(code: button, isDown: true, isTap: false))
        if case .touching = tap { tap = .dead }
    }

    /// A physical button of a touchpad that is not a clickpad went down or up: a tap under
    /// way is no tap.
    package mutating func physicalButton(isDown: Bool, at time: MonotonicInstant) {
        physicalButtons = max(0, physicalButtons + (isDown ? 1 : -1))
        if isDown, case .touching = tap { tap = .dead }
    }

    // MARK: Ending

    /// The device went away (or the stage leaves): buttons held are released, a scroll
    /// under way stops, and every touch is forgotten.
    package mutating func reset(into out: inout [TouchpadAction]) {
        if let button = heldTapButton { release(button, into: &out) }
        if let button = clickButton { out.append(.button(code: button, isDown: false, isTap: false)) }
        clickButton = nil
        if scrollSource != nil { stopScroll(into: &out) }
        tap = .idle
        lastFingers = 0
        touches.removeAll(keepingCapacity: true)
        sequence.removeAll(keepingCapacity: true)
        physicalButtons = 0
    }
}
