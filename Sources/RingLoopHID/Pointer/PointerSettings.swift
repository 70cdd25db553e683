/// What the pointer stage does with one relative device's motion, wheels and buttons:
/// its acceleration, resolution, scrolling and button handling. The system's
/// ``HIDEventSystem/Configuration/pointer`` gives every device these; a device's own
/// settings (the per-device settings file's `accel-profile`, `accel-speed`,
/// `accel-points`, `dpi`, `natural-scroll`, `scroll-factor`, `debounce`,
/// `middle-emulation`; udev's `MOUSE_DPI`) win over them (``applying(_:udevProperties:)``).
public struct PointerSettings: Sendable, Hashable {
    /// libinput's default resolution of a mouse that does not say (`MOUSE_DPI` unset).
    public static let defaultDotsPerInch = 1000

    /// The acceleration profile and speed.
    public var acceleration: PointerAcceleration
    /// The device's resolution in dots per inch: the adaptive profile normalizes its
    /// deltas to 1000 dpi.
    public private(set) var dotsPerInch: Int
    /// Whether scrolling moves the content with the fingers (wheels and scrolling turned
    /// the other way).
    public var naturalScroll: Bool
    /// Scroll amounts are multiplied by this (above 0; 1 leaves them).
    public private(set) var scrollFactor: Double
    /// Button debouncing, libinput's "bounce" and "spurious" methods (on by default, as
    /// in libinput; the article <doc:PointersAndTheCursor> says how they work).
    public var debounce: Bool
    /// Left and right pressed together give the middle button (libinput's middle-button
    /// emulation; off by default).
    public var middleButtonEmulation: Bool

    /// libinput's defaults: adaptive at speed 0, 1000 dpi, traditional scrolling at factor 1,
    /// debouncing on, no middle-button emulation.
    public init() {
        acceleration = .libinputDefault
        dotsPerInch = Self.defaultDotsPerInch
        naturalScroll = false
        scrollFactor = 1
        debounce = true
        middleButtonEmulation = false
    }

    /// Settings with these values.
    /// - Parameters:
    ///   - acceleration: The acceleration profile and speed.
    ///   - dotsPerInch: The device's resolution, 1…100000.
    ///   - naturalScroll: Whether scrolling is turned the other way.
    ///   - scrollFactor: The factor of scroll amounts, above 0.
    ///   - debounce: Whether buttons are debounced.
    ///   - middleButtonEmulation: Whether left and right together give the middle button.
    /// - Throws: ``PointerSettingError`` naming what would be valid.
    public init(
        acceleration: PointerAcceleration = .libinputDefault, dotsPerInch: Int = defaultDotsPerInch, naturalScroll: Bool = false,
        scrollFactor: Double = 1, debounce: Bool = true, middleButtonEmulation: Bool = false
    ) throws(PointerSettingError) {
        self.init()
        self.acceleration = acceleration
        try setDotsPerInch(dotsPerInch)
        self.naturalScroll = naturalScroll
        try setScrollFactor(scrollFactor)
        self.debounce = debounce
        self.middleButtonEmulation = middleButtonEmulation
    }

    /// Sets the resolution.
    /// - Throws: ``PointerSettingError/dotsPerInch(_:)`` outside 1…100000.
    public mutating func setDotsPerInch(_ value: Int) throws(PointerSettingError) {
        guard (1...100_000).contains(value) else { throw .dotsPerInch(value) }
        dotsPerInch = value
    }

    /// Sets the scroll factor.
    /// - Throws: ``PointerSettingError/scrollFactor(_:)`` for 0 or less, or not finite.
    public mutating func setScrollFactor(_ value: Double) throws(PointerSettingError) {
        guard value.isFinite, value > 0 else { throw .scrollFactor(value) }
        scrollFactor = value
    }

    /// These settings with a device's own on top: its settings (files, the app's
    /// overrides) and udev's `MOUSE_DPI`.
    /// - Parameters:
    ///   - device: The device's settings, as ``DeviceSettingsResolver/settings(for:)`` gives them.
    ///   - udevProperties: The device's udev properties (`MOUSE_DPI`).
    /// - Returns: The settings, and why any of the device's values was not taken (a custom
    ///   profile without points).
    public func applying(
        _ device: DeviceSettings, udevProperties: [String: String] = [:]
    ) -> (
        settings: PointerSettings, problems: [String]
    ) {
        var settings = self
        var problems: [String] = []
        if let text = udevProperties[Self.mouseDPIProperty] {
            if let dpi = Self.dotsPerInch(fromMouseDPI: text) {
                try? settings.setDotsPerInch(dpi)
            } else {
                problems.append("udev's \(Self.mouseDPIProperty)=\"\(text)\" is not used: not a resolution such as 800@125")
            }
        }
        if let dpi = device.dotsPerInch { try? settings.setDotsPerInch(dpi) }
        if device.accelerationProfile != nil || device.accelerationSpeed != nil || device.accelerationPoints != nil {
            let profile = device.accelerationProfile ?? settings.acceleration.profile
            let speed = device.accelerationSpeed ?? settings.acceleration.speed
            var curve = settings.acceleration.curve
            if let points = device.accelerationPoints, let step = points.first {
                curve = try? CustomAccelerationCurve(step: step, points: Array(points.dropFirst()))
            }
            do {
                settings.acceleration = try PointerAcceleration(profile: profile, speed: speed, curve: curve)
            } catch {
                problems.append("accel-profile \(profile.rawValue) (from \(device.source(of: .accelerationProfile))) is not used: \(error)")
            }
        }
        if let natural = device.naturalScroll { settings.naturalScroll = natural }
        if let factor = device.scrollFactor { try? settings.setScrollFactor(factor) }
        if let debounce = device.debounce { settings.debounce = debounce }
        if let middle = device.middleButtonEmulation { settings.middleButtonEmulation = middle }
        return (settings, problems)
    }

    /// udev's property for a mouse's resolution (systemd's hwdb `MOUSE_DPI`).
    public static let mouseDPIProperty = "MOUSE_DPI"

    /// The resolution a `MOUSE_DPI` value gives: the default one (marked `*`) of a list
    /// such as `400@125 *800@125 1600@125`, or the only one (`800@125`, `800`).
    public static func dotsPerInch(fromMouseDPI text: String) -> Int? {
        let entries = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let chosen = entries.first(where: { $0.hasPrefix("*") }) ?? (entries.count == 1 ? entries.first : nil) else {
            return nil
        }
        let number = chosen.drop { $0 == "*" }.prefix { $0 != "@" }
        guard let dpi = Int(number), (1...100_000).contains(dpi) else { return nil }
        return dpi
    }
}
