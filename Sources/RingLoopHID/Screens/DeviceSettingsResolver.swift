/// Gives each device its settings and its screen mapping, each value with its source.
///
/// Sources, from the weakest: the defaults; udev's properties of the device where udev
/// knows it (`LIBINPUT_CALIBRATION_MATRIX`, `LIBINPUT_IGNORE_DEVICE`, `ID_INPUT_*`,
/// `ACCEL_MOUNT_MATRIX`); the settings files
/// in the order given, each section that matches the device in file order (a later
/// section's value wins, as in udev's rules and libinput's quirks); then the app's own
/// settings or the command line (`--screen`, `--calibration`), which win over all.
///
/// The screens are the files' `[screen …]` sections plus the app's own (``screens``: an
/// app's screen replaces a file's of the same name).
public struct DeviceSettingsResolver: Sendable {
    /// The settings files, weakest first.
    public var files: [DeviceSettingsFile]
    /// The app's (or the command line's) screens; a file's screen of the same name gives way.
    public var screens: [ScreenDescription]
    /// Settings that win over every file and udev property, applied to every device (the
    /// command line's `--calibration`).
    public var overrides: DeviceSettings

    /// A resolver over `files` with the app's `screens` and `overrides`.
    public init(files: [DeviceSettingsFile] = [], screens: [ScreenDescription] = [], overrides: DeviceSettings = DeviceSettings()) {
        self.files = files
        self.screens = screens
        self.overrides = overrides
    }

    /// Every screen: the app's, then the files' that the app did not name.
    public var allScreens: [ScreenDescription] {
        var all = screens
        for file in files {
            for (screen, _) in file.screens where !all.contains(where: { $0.name == screen.name }) { all.append(screen) }
        }
        return all
    }

    /// The settings of `device`, each value with its source.
    public func settings(for device: DeviceIdentity) -> DeviceSettings {
        var settings = DeviceSettings()
        if let text = device.properties[DeviceIdentity.calibrationProperty],
            let matrix = try? CalibrationMatrix(parsing: text)
        {
            settings.set(.calibration, to: .calibration(matrix), from: .udev(property: DeviceIdentity.calibrationProperty))
        }
        if let text = device.properties[DeviceIdentity.mountMatrixProperty], let matrix = try? MountMatrix(parsing: text) {
            settings.set(.mountMatrix, to: .mountMatrix(matrix), from: .udev(property: DeviceIdentity.mountMatrixProperty))
        }
        if let text = device.properties[DeviceIdentity.ignoreProperty], let value = try? DeviceSettingKey.ignore.parse(Substring(text)) {
            settings.set(.ignore, to: value, from: .udev(property: DeviceIdentity.ignoreProperty))
        }
        // udev's class tags (its input_id builtin, or a rule or hwdb entry that overrides it):
        // the most specific tag set becomes the device's class unless its capabilities
        // already give it that role, as libinput takes udev's word for what a device is.
        // (udev tags every gamepad ID_INPUT_JOYSTICK and a tablet's pad ID_INPUT_TABLET:
        // those agree with the device's own class.)
        if let (property, deviceClass) = Self.udevClasses.first(where: { device.properties[$0.0] == "1" }),
            !device.roles.contains(deviceClass),
            !(deviceClass == .joystick && device.roles.contains(.gamepad)),
            !(deviceClass == .tablet && device.roles.contains(.tabletPad))
        {
            settings.set(.deviceClass, to: .deviceClass(deviceClass), from: .udev(property: property))
        }
        for file in files {
            for section in file.sections where section.match.matches(device) {
                for entry in section.entries {
                    settings.set(entry.key, to: entry.value, from: .file(path: file.path, line: entry.line))
                }
            }
        }
        for key in DeviceSettingKey.allCases {
            guard let source = overrides.sources[key], let text = overrides.value(of: key),
                let value = try? key.parse(Substring(text))
            else { continue }
            settings.set(key, to: value, from: source)
        }
        return settings
    }

    /// udev's `ID_INPUT_*` tags and the classes they name, the most specific first.
    static let udevClasses: [(String, HIDDeviceClass)] = [
        ("ID_INPUT_TOUCHSCREEN", .touchscreen), ("ID_INPUT_TABLET", .tablet), ("ID_INPUT_TOUCHPAD", .touchpad),
        ("ID_INPUT_JOYSTICK", .joystick), ("ID_INPUT_MOUSE", .pointer), ("ID_INPUT_KEYBOARD", .keyboard),
    ]

    /// Problems with udev properties of `device` that were not used (a malformed
    /// `LIBINPUT_CALIBRATION_MATRIX`), for `describe` and the log.
    public func udevProblems(for device: DeviceIdentity) -> [String] {
        var problems: [String] = []
        if let text = device.properties[DeviceIdentity.calibrationProperty] {
            do { _ = try CalibrationMatrix(parsing: text) } catch {
                problems.append("udev's \(DeviceIdentity.calibrationProperty)=\"\(text)\" is not used: \(error)")
            }
        }
        if let text = device.properties[DeviceIdentity.mountMatrixProperty] {
            do { _ = try MountMatrix(parsing: text) } catch {
                problems.append("udev's \(DeviceIdentity.mountMatrixProperty)=\"\(text)\" is not used: \(error)")
            }
        }
        return problems
    }

    /// Where `device` maps to: its screen (by its settings' `screen`, else by
    /// ``ScreenAssignment``'s rules), its calibration and rotation composed; `nil` with the
    /// reason when it maps to none (ignored, not an absolute device, no screen chosen).
    public func mapping(for info: HIDDeviceInfo, identity: DeviceIdentity) -> (mapping: ScreenMapping?, reason: String) {
        mapping(for: info, identity: identity, settings: settings(for: identity))
    }

    /// Where `info` maps to by `settings`, `identity`'s as resolved before.
    func mapping(
        for info: HIDDeviceInfo, identity: DeviceIdentity, settings: DeviceSettings
    ) -> (mapping: ScreenMapping?, reason: String) {
        if settings.ignore { return (nil, "ignored (from \(settings.source(of: .ignore)))") }
        guard ScreenMapper.mapsToScreen(info, as: settings.deviceClass) else {
            return (nil, "a \(settings.deviceClass ?? info.deviceClass) does not map to a screen")
        }
        let screens = allScreens
        var screen: ScreenDescription
        var why: String
        if let name = settings.screen {
            guard let named = screens.first(where: { $0.name == name }) else {
                return (nil, "no screen is named '\(name)' (screen from \(settings.source(of: .screen)))")
            }
            screen = named
            why = "screen from \(settings.source(of: .screen))"
        } else {
            let (found, reason) = ScreenAssignment(screens: screens).screen(for: identity)
            guard let found else { return (nil, reason.description) }
            screen = found
            why = "screen: \(reason)"
        }
        if let rotation = settings.rotation {
            screen.rotation = rotation
            why += ", rotation from \(settings.source(of: .rotation))"
        }
        let calibration = settings.calibration ?? .identity
        if settings.calibration != nil { why += ", calibration from \(settings.source(of: .calibration))" }
        return (ScreenMapping(screen: screen, calibration: calibration), why)
    }
}
