import ArgumentParser
import RingLoopHID

/// `--touchpad`, `--tap`, `--dwt` and the other touchpad switches: touchpads as pointers
/// (the touchpad stage, libinput's options) for `monitor` and `serve`. Any of them puts
/// the stage in the chain; what is not given is libinput's default. Checked in
/// `validate()`, so a bad value is refused before anything starts, with what would be valid.
struct TouchpadOptions: ParsableArguments {
    @Flag(help: "Make touchpads pointers: one finger moves, two fingers scroll, a clickpad's click presses a button (libinput's defaults).")
    var touchpad = false

    @Flag(help: "Tap-to-click: a tap of one, two, three fingers is a left, right, middle click (implies --touchpad).")
    var tap = false

    @Option(
        name: .customLong("tap-map"),
        help: ArgumentHelp("The buttons of two- and three-finger taps: lrm (right, middle) or lmr.", valueName: "lrm|lmr"))
    var tapMap: String?

    @Flag(name: .customLong("no-tap-drag"), help: "No tap-and-drag: a tap is a click, never the start of a drag.")
    var noTapDrag = false

    @Flag(name: .customLong("drag-lock"), help: "Drag lock: a tap-and-drag survives a lifted finger for 300 ms.")
    var dragLock = false

    @Option(
        name: .customLong("click-method"),
        help: ArgumentHelp(
            "What a clickpad's click presses: areas (software buttons), clickfinger (by fingers), auto (clickfinger on Apple's).",
            valueName: "areas|clickfinger|auto"))
    var clickMethod: String?

    @Option(
        name: .customLong("scroll-method"),
        help: ArgumentHelp(
            "What scrolls on a touchpad: two-finger, edge (right and bottom edges) or none.", valueName: "two-finger|edge|none"))
    var scrollMethod: String?

    @Flag(
        inversion: .prefixedNo,
        help: "Disable-while-typing: touches that begin while a built-in keyboard types are ignored (on by default).")
    var dwt: Bool?

    @Flag(name: .customLong("no-palm"), help: "No palm rejection (by MT_TOOL_PALM, pressure, size and edges).")
    var noPalm = false

    @Option(
        name: .customLong("palm-pressure"),
        help: ArgumentHelp("The contact pressure above which a touch is a palm (device units, 1 or more).", valueName: "units"))
    var palmPressure: Int32?

    /// Whether any of the options was given.
    var isGiven: Bool {
        touchpad || tap || tapMap != nil || noTapDrag || dragLock || clickMethod != nil || scrollMethod != nil || dwt != nil
            || noPalm || palmPressure != nil
    }

    static let tapMaps: [String: TouchpadSettings.TapButtonMap] = ["lrm": .leftRightMiddle, "lmr": .leftMiddleRight]
    static let clickMethods: [String: TouchpadSettings.ClickMethod] = [
        "areas": .buttonAreas, "clickfinger": .clickfinger, "auto": .automatic,
    ]
    static let scrollMethods: [String: TouchpadSettings.ScrollMethod] = ["two-finger": .twoFinger, "edge": .edge, "none": .none]

    func validate() throws { _ = try parsed() }

    /// The settings the options describe, or `nil` when none was given.
    var settings: TouchpadSettings? { isGiven ? try? parsed() : nil }

    private func parsed() throws -> TouchpadSettings {
        func choice<Value>(_ value: String?, _ option: String, _ table: [String: Value]) throws -> Value? {
            guard let value else { return nil }
            guard let chosen = table[value] else {
                throw ValidationError("\(option): '\(value)' is not one of \(table.keys.sorted().joined(separator: ", "))")
            }
            return chosen
        }
        var settings = TouchpadSettings(tapping: tap, tapAndDrag: !noTapDrag, dragLock: dragLock, palmDetection: !noPalm)
        if let map = try choice(tapMap, "--tap-map", Self.tapMaps) { settings.tapButtonMap = map }
        if let method = try choice(clickMethod, "--click-method", Self.clickMethods) { settings.clickMethod = method }
        if let method = try choice(scrollMethod, "--scroll-method", Self.scrollMethods) { settings.scrollMethod = method }
        if let dwt { settings.disableWhileTyping = dwt }
        if let palmPressure {
            guard palmPressure >= 1 else { throw ValidationError("--palm-pressure must be 1 or more device units, got \(palmPressure)") }
            settings.palmPressureThreshold = palmPressure
        }
        return settings
    }
}
