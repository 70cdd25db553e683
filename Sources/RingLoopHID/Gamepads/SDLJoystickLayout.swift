import RingLoopEvdev

/// How SDL 2's Linux backend numbers an evdev device's inputs: the `bN`, `aN` and `hN`
/// that mapping lines name.
///
/// Buttons: the key codes the device has from `BTN_JOYSTICK` up to (not including)
/// `KEY_MAX`, then those below `BTN_JOYSTICK`, each in code order. Hats: each
/// `ABS_HATnX`/`ABS_HATnY` pair SDL takes for a digital hat — both present axes ranging
/// −1…1, or both without fuzz, flat and resolution — numbered in pair order. Axes: every
/// absolute code below `ABS_MAX` but those of digital hats, in code order (an analog hat's
/// axes are axes). This is SDL 2.28's rule; SDL 2.26 read past its hat table for codes
/// outside the hats and so also skipped some codes from `ABS_PRESSURE` on where a device
/// had a digital hat — gamepads' usual axes (`ABS_X`…`ABS_RZ`, throttles, hats) are
/// numbered the same by both.
public struct SDLJoystickLayout: Sendable, Hashable {
    /// Key codes in SDL's button order (`b0` is `buttons[0]`).
    public private(set) var buttons: [UInt16] = []
    /// Absolute codes in SDL's axis order.
    public private(set) var axes: [UInt16] = []
    /// The digital hats in SDL's order: which pair each is (0 for `ABS_HAT0X`/`Y`…).
    public private(set) var hats: [Int] = []

    /// SDL's numbering of a device with these codes and axes.
    public init(description: InputDeviceDescription) {
        let keys = description.codes[Evdev.EV_KEY] ?? []
        let absolute = description.codes[Evdev.EV_ABS] ?? []
        for code in Evdev.BTN_JOYSTICK..<Evdev.KEY_MAX where keys.contains(code) { buttons.append(code) }
        for code in 0..<Evdev.BTN_JOYSTICK where keys.contains(code) { buttons.append(code) }
        var digitalPairs = Set<Int>()
        for pair in 0..<4 {
            let xCode = Evdev.ABS_HAT0X + UInt16(pair * 2)
            let x = absolute.contains(xCode) ? description.absoluteAxes[xCode] : nil
            let y = absolute.contains(xCode + 1) ? description.absoluteAxes[xCode + 1] : nil
            if Self.isDigitalHat(x: x, y: y) {
                hats.append(pair)
                digitalPairs.insert(pair)
            }
        }
        for code in 0..<Evdev.ABS_MAX where absolute.contains(code) {
            if (Evdev.ABS_HAT0X...Evdev.ABS_HAT3Y).contains(code) && digitalPairs.contains(Int(code - Evdev.ABS_HAT0X) / 2) {
                continue
            }
            axes.append(code)
        }
    }

    /// SDL's guess that two hat axes are a digital hat (`GuessIfAxesAreDigitalHat`).
    static func isDigitalHat(x: AbsoluteAxis?, y: AbsoluteAxis?) -> Bool {
        if x == nil && y == nil { return false }
        let bothUnit = [x, y].allSatisfy { axis in axis.map { $0.minimum == -1 && $0.maximum == 1 } ?? true }
        if bothUnit { return true }
        return [x, y].allSatisfy { axis in axis.map { $0.fuzz == 0 && $0.flat == 0 && $0.resolution == 0 } ?? true }
    }

    /// SDL's button number of a key code, or `nil`.
    public func buttonIndex(of code: UInt16) -> Int? { buttons.firstIndex(of: code) }
    /// SDL's axis number of an absolute code, or `nil`.
    public func axisIndex(of code: UInt16) -> Int? { axes.firstIndex(of: code) }
    /// SDL's hat number of a hat pair (0 for `ABS_HAT0X`/`Y`), or `nil`.
    public func hatIndex(ofPair pair: Int) -> Int? { hats.firstIndex(of: pair) }
}

extension SDLMappingDatabase {
    /// SDL's automatic mapping for a device whose driver follows the kernel's gamepad
    /// specification (`Documentation/input/gamepad.rst`; SDL 2.26's
    /// `LINUX_JoystickGetGamepadMapping`): a device with `BTN_GAMEPAD` gets `BTN_A`/`BTN_B`
    /// as a and b, `BTN_X`/`BTN_Y` as x and y (`BTN_WEST`/`BTN_NORTH` on Sony's pads),
    /// select, start, mode, the thumb buttons, the shoulders as buttons (else hat 1), the
    /// triggers as `ABS_HAT2Y`/`ABS_HAT2X`, `ABS_Z`/`ABS_RZ` (else hat 2, else `BTN_TL2`/
    /// `BTN_TR2`), the d-pad as `BTN_DPAD_*` (else hat 0, else its axes), the sticks as
    /// `ABS_X`/`ABS_Y` and `ABS_RX`/`ABS_RY`. `nil` without `BTN_GAMEPAD`.
    public static func automaticMapping(for device: HIDDeviceInfo) -> SDLGameControllerMapping? {
        let layout = device.sdlLayout
        let keys = device.codes[Evdev.EV_KEY] ?? []
        guard keys.contains(Evdev.BTN_GAMEPAD) else { return nil }
        var fields: [(String, String)] = []
        func button(_ code: UInt16) -> String? { layout.buttonIndex(of: code).map { "b\($0)" } }
        func axis(_ code: UInt16) -> String? { layout.axisIndex(of: code).map { "a\($0)" } }
        func hat(_ pair: Int, _ mask: Int) -> String? { layout.hatIndex(ofPair: pair).map { "h\($0).\(mask)" } }
        var chosen: [String: String] = [:]
        func set(_ control: String, _ input: String?) { if let input { chosen[control] = input } }
        let sony = device.vendor == 0x054c
        set("a", button(Evdev.BTN_SOUTH))
        set("b", button(Evdev.BTN_EAST))
        set("x", button(sony ? Evdev.BTN_WEST : Evdev.BTN_NORTH))
        set("y", button(sony ? Evdev.BTN_NORTH : Evdev.BTN_WEST))
        set("back", button(Evdev.BTN_SELECT))
        set("start", button(Evdev.BTN_START))
        set("leftstick", button(Evdev.BTN_THUMBL))
        set("rightstick", button(Evdev.BTN_THUMBR))
        set("guide", button(Evdev.BTN_MODE))
        // Shoulders: buttons, else hat 1, else its axes.
        set("leftshoulder", button(Evdev.BTN_TL))
        set("rightshoulder", button(Evdev.BTN_TR))
        if chosen["leftshoulder"] == nil || chosen["rightshoulder"] == nil, hat(1, 4) != nil {
            set("leftshoulder", hat(1, 4))
            set("rightshoulder", hat(1, 2))
        }
        if chosen["leftshoulder"] == nil { set("leftshoulder", axis(Evdev.ABS_HAT1Y)) }
        if chosen["rightshoulder"] == nil { set("rightshoulder", axis(Evdev.ABS_HAT1X)) }
        // Triggers: analog axes, else hat 2, else buttons.
        set("lefttrigger", axis(Evdev.ABS_HAT2Y) ?? axis(Evdev.ABS_Z))
        set("righttrigger", axis(Evdev.ABS_HAT2X) ?? axis(Evdev.ABS_RZ))
        if chosen["lefttrigger"] == nil || chosen["righttrigger"] == nil, hat(2, 4) != nil {
            set("lefttrigger", hat(2, 4))
            set("righttrigger", hat(2, 2))
        }
        if chosen["lefttrigger"] == nil { set("lefttrigger", button(Evdev.BTN_TL2)) }
        if chosen["righttrigger"] == nil { set("righttrigger", button(Evdev.BTN_TR2)) }
        // D-pad: buttons, else hat 0, else its axes.
        set("dpup", button(Evdev.BTN_DPAD_UP))
        set("dpdown", button(Evdev.BTN_DPAD_DOWN))
        set("dpleft", button(Evdev.BTN_DPAD_LEFT))
        set("dpright", button(Evdev.BTN_DPAD_RIGHT))
        if ["dpup", "dpdown", "dpleft", "dpright"].contains(where: { chosen[$0] == nil }) {
            if hat(0, 1) != nil {
                set("dpleft", hat(0, 8))
                set("dpright", hat(0, 2))
                set("dpup", hat(0, 1))
                set("dpdown", hat(0, 4))
            } else if let x = axis(Evdev.ABS_HAT0X), let y = axis(Evdev.ABS_HAT0Y) {
                set("dpleft", x)
                set("dpright", x)
                set("dpup", y)
                set("dpdown", y)
            }
        }
        if let x = axis(Evdev.ABS_X), let y = axis(Evdev.ABS_Y) {
            set("leftx", x)
            set("lefty", y)
        }
        if let x = axis(Evdev.ABS_RX), let y = axis(Evdev.ABS_RY) {
            set("rightx", x)
            set("righty", y)
        }
        // SDL's order of the generated line.
        for control in [
            "a", "b", "x", "y", "back", "guide", "start", "leftstick", "rightstick", "leftshoulder", "rightshoulder",
            "dpup", "dpdown", "dpleft", "dpright", "misc1", "paddle1", "paddle2", "paddle3", "paddle4", "leftx", "lefty",
            "rightx", "righty", "lefttrigger", "righttrigger",
        ] {
            if let input = chosen[control] { fields.append((control, input)) }
        }
        let name = device.sdlName.replacing(",", with: " ")
        let line = device.sdlGUID.withoutCRC.hexString + "," + name + "," + fields.map { "\($0.0):\($0.1)," }.joined()
        return try? SDLGameControllerMapping(parsing: line, source: "SDL's automatic mapping")
    }
}

extension HIDDeviceInfo {
    /// The name SDL gives the device (``SDLJoystickNaming``), from which its GUID's CRC is made.
    public var sdlName: String { SDLJoystickNaming.name(vendor: vendor, product: product, productName: name) }

    /// SDL's GUID of the device as SDL 2's Linux backend makes it (``SDLJoystickGUID``):
    /// bus, vendor, product and version, and the CRC of ``sdlName``. Two of SDL's fix-ups
    /// apply: an Xbox Elite Series 2 (045e:0b05) on firmware 0x0903 that repeats its
    /// inputs at code 0x2c0 gets version 0x0902, and Atari VCS controllers (3250:1001,
    /// 3250:1002) version 0.
    public var sdlGUID: SDLJoystickGUID {
        var version = version
        if vendor == 0x045e && product == 0x0b05 && version == 0x0903 && has(type: Evdev.EV_KEY, code: 0x2c0) {
            version = 0x0902
        }
        if vendor == 0x3250 && (product == 0x1001 || product == 0x1002) { version = 0 }
        return SDLJoystickGUID(bus: busType, vendor: vendor, product: product, version: version, name: sdlName)
    }

    /// How SDL numbers the device's buttons, axes and hats.
    public var sdlLayout: SDLJoystickLayout { SDLJoystickLayout(description: description) }
}
