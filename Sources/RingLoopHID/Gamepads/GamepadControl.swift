/// A control of the standard gamepad, by SDL's name (`SDL_GameControllerButton`,
/// `SDL_GameControllerAxis`): what a mapping line's keys name and what ``GamepadEvent``s
/// report. The raw values are SDL's; the order is SDL's buttons, then its axes.
///
/// The face buttons are named by position, as SDL names them: ``a`` is the bottom one
/// (Xbox A, PlayStation cross), ``b`` the right, ``x`` the left, ``y`` the top.
public enum GamepadControl: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case a, b, x, y, back, guide, start, leftstick, rightstick, leftshoulder, rightshoulder
    case dpup, dpdown, dpleft, dpright
    /// Xbox Series X share button, PS5 microphone button, Switch Pro capture button.
    case misc1
    /// Upper or primary paddle, under the right hand (Xbox Elite paddle P1).
    case paddle1
    /// Upper or primary paddle, under the left hand (Xbox Elite paddle P3).
    case paddle2
    /// Lower or secondary paddle, under the right hand (Xbox Elite paddle P2).
    case paddle3
    /// Lower or secondary paddle, under the left hand (Xbox Elite paddle P4).
    case paddle4
    /// The PlayStation touchpad's button.
    case touchpad
    /// Sticks: −1 (left, up) … 1 (right, down).
    case leftx, lefty, rightx, righty
    /// Triggers: 0 (released) … 1.
    case lefttrigger, righttrigger

    /// SDL's name of the control (`a`, `dpup`, `leftx`…), as mapping lines and JSON spell it.
    public var name: String { Self.names[Int(rawValue)] }

    public var description: String { name }

    /// The control SDL names `name`, or `nil`.
    public init?(name: some StringProtocol) {
        guard let index = Self.names.firstIndex(where: { $0.utf8.elementsEqual(name.utf8) }) else { return nil }
        self.init(rawValue: UInt8(index))
    }

    /// Whether the control is an axis (a stick's or a trigger's), not a button.
    public var isAxis: Bool { rawValue >= GamepadControl.leftx.rawValue }

    /// Whether the control is a trigger (0…1).
    public var isTrigger: Bool { self == .lefttrigger || self == .righttrigger }

    /// The other axis of the same stick (`leftx` ↔ `lefty`), for radial dead zones.
    var stickPartner: GamepadControl? {
        switch self {
        case .leftx: .lefty
        case .lefty: .leftx
        case .rightx: .righty
        case .righty: .rightx
        default: nil
        }
    }

    private static let names = [
        "a", "b", "x", "y", "back", "guide", "start", "leftstick", "rightstick", "leftshoulder", "rightshoulder",
        "dpup", "dpdown", "dpleft", "dpright", "misc1", "paddle1", "paddle2", "paddle3", "paddle4", "touchpad",
        "leftx", "lefty", "rightx", "righty", "lefttrigger", "righttrigger",
    ]
}

/// A control of the standard gamepad changed: by SDL's name, its value after the dead
/// zone, and the raw value it came from.
///
/// Made by ``GamepadLayout`` from a device's raw buttons, axes and hats through its SDL
/// mapping. Buttons are 0 or 1; sticks −1…1 (up and left negative, as SDL); triggers 0…1.
public struct GamepadEvent: Sendable, Hashable {
    /// The control.
    public var control: GamepadControl
    /// The control's new value: 0 or 1 for a button, −1…1 for a stick axis, 0…1 for a
    /// trigger, after the dead zone.
    public var value: Double
    /// The input it came from, in device units: the axis's value, 1 or 0 for a button,
    /// the hat axis's value (−1, 0, 1 on most pads).
    public var raw: Int32

    /// A standard gamepad event.
    public init(control: GamepadControl, value: Double, raw: Int32) {
        self.control = control
        self.value = value
        self.raw = raw
    }
}
