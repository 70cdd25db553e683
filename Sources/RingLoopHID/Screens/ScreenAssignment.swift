/// Which screen each absolute device maps to.
///
/// In order: the last rule that matches the device (rules come from the settings file's
/// `screen =` keys or from the app); else the screen named by the device's udev
/// `WL_OUTPUT` property, as libinput's integrations (Weston) bind a touchscreen to an
/// output; else the only screen, when there is exactly one. A device none of these
/// places has no screen: its events carry no screen location (and the reason is said).
public struct ScreenAssignment: Sendable, Hashable {
    /// One rule: the devices it matches map to the screen named `screen`.
    public struct Rule: Sendable, Hashable {
        /// The devices the rule applies to.
        public var match: DeviceMatch
        /// The name of the screen they map to.
        public var screen: String

        /// Devices matching `match` map to the screen named `screen`.
        public init(match: DeviceMatch, screen: String) {
            self.match = match
            self.screen = screen
        }
    }

    /// The screens of the layout.
    public var screens: [ScreenDescription]
    /// Rules, later ones winning.
    public var rules: [Rule]

    /// An assignment of devices to `screens` by `rules`.
    public init(screens: [ScreenDescription], rules: [Rule] = []) {
        self.screens = screens
        self.rules = rules
    }

    /// Why a device maps to a screen, or why to none.
    public enum Reason: Sendable, Hashable, CustomStringConvertible {
        /// A rule matched.
        case rule(DeviceMatch)
        /// The device's udev `WL_OUTPUT` property named the screen.
        case outputProperty(String)
        /// The layout has one screen.
        case onlyScreen
        /// A rule or the output property named a screen the layout does not have.
        case unknownScreen(String)
        /// The layout has no screen, or several and nothing chose one.
        case noScreenChosen(screenCount: Int)

        public var description: String {
            switch self {
            case .rule(let match): "the rule for \(match)"
            case .outputProperty(let name): "udev's WL_OUTPUT=\(name)"
            case .onlyScreen: "the only screen"
            case .unknownScreen(let name): "no screen is named '\(name)'"
            case .noScreenChosen(let count):
                count == 0 ? "no screen is described" : "\(count) screens and no rule or WL_OUTPUT chooses one"
            }
        }
    }

    /// The screen `device` maps to (or `nil`), and why.
    public func screen(for device: DeviceIdentity) -> (screen: ScreenDescription?, reason: Reason) {
        if let rule = rules.last(where: { $0.match.matches(device) }) {
            guard let screen = screens.first(where: { $0.name == rule.screen }) else { return (nil, .unknownScreen(rule.screen)) }
            return (screen, .rule(rule.match))
        }
        if let output = device.properties[DeviceIdentity.outputProperty] {
            guard let screen = screens.first(where: { $0.name == output }) else { return (nil, .unknownScreen(output)) }
            return (screen, .outputProperty(output))
        }
        if screens.count == 1 { return (screens[0], .onlyScreen) }
        return (nil, .noScreenChosen(screenCount: screens.count))
    }
}
