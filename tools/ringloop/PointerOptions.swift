import ArgumentParser
import RingLoopHID

/// `--accel-profile`, `--accel-speed`, `--accel-points`, `--natural-scroll`,
/// `--scroll-factor`, `--middle-emulation`, `--no-debounce`: the pointer stage's settings
/// for every relative device (for `monitor` and `serve`; a device's own lines in
/// `--device-config` win over them). Checked in `validate()`, so a bad value is refused
/// before anything starts, with what would be valid.
struct PointerOptions: ParsableArguments {
    @Option(
        name: .customLong("accel-profile"),
        help: ArgumentHelp("Pointer acceleration, libinput's profiles: flat, adaptive (the default) or custom.", valueName: "profile"))
    var accelerationProfile: String?

    @Option(
        name: .customLong("accel-speed"),
        help: ArgumentHelp("The acceleration's speed setting, -1 to 1 (flat: deltas times 1 + speed).", valueName: "speed"))
    var accelerationSpeed: Double?

    @Option(
        name: .customLong("accel-points"),
        help: ArgumentHelp(
            "The custom profile's curve: the step, then at least two output speeds (units/ms), e.g. \"1 0 1 2.5\".",
            valueName: "step points"))
    var accelerationPoints: String?

    @Flag(name: .customLong("natural-scroll"), help: "Scroll the content with the fingers (wheels turned the other way).")
    var naturalScroll = false

    @Option(name: .customLong("scroll-factor"), help: ArgumentHelp("Scroll amounts times this (above 0).", valueName: "factor"))
    var scrollFactor: Double?

    @Flag(name: .customLong("middle-emulation"), help: "Left and right pressed together give the middle button.")
    var middleEmulation = false

    @Flag(name: .customLong("no-debounce"), help: "Pass buttons on as the device sends them (no bounce or spurious debouncing).")
    var noDebounce = false

    func validate() throws {
        do { _ = try pointerSettings() } catch { throw ValidationError("\(error)") }
    }

    /// Whether any of the options was given.
    var isGiven: Bool {
        accelerationProfile != nil || accelerationSpeed != nil || accelerationPoints != nil || naturalScroll || scrollFactor != nil
            || middleEmulation || noDebounce
    }

    /// The settings the options give (libinput's defaults for what is not given).
    /// - Throws: ``PointerSettingError``, or a ``ValidationError`` for an unknown profile.
    func pointerSettings() throws -> PointerSettings {
        var profile = AccelerationProfile.adaptive
        if let accelerationProfile {
            guard let named = AccelerationProfile(rawValue: accelerationProfile) else {
                throw ValidationError(
                    "'\(accelerationProfile)' is not a profile; valid: "
                        + AccelerationProfile.allCases.map(\.rawValue).joined(separator: ", "))
            }
            profile = named
        }
        let curve = try accelerationPoints.map { text throws(PointerSettingError) in try CustomAccelerationCurve(parsing: text) }
        if curve != nil, accelerationProfile == nil { profile = .custom }
        if profile != .custom, curve != nil { throw ValidationError("--accel-points is for --accel-profile custom") }
        return try PointerSettings(
            acceleration: PointerAcceleration(profile: profile, speed: accelerationSpeed ?? 0, curve: curve),
            naturalScroll: naturalScroll, scrollFactor: scrollFactor ?? 1, debounce: !noDebounce, middleButtonEmulation: middleEmulation)
    }

    /// The pointer stage's settings for a command: given options, or libinput's defaults
    /// where screens are set (the cursor needs the stage) or touchpads are pointers (libinput
    /// accelerates them by default); `nil` otherwise (raw motion).
    func settings(withScreens: Bool, withTouchpads: Bool = false) throws(Failure) -> PointerSettings? {
        guard isGiven || withScreens || withTouchpads else { return nil }
        do { return try pointerSettings() } catch { throw .usage("\(error)") }
    }
}
