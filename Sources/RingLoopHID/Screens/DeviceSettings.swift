/// The settings one device gets, each with where it came from.
///
/// ``ignore`` and ``deviceClass`` decide whether and as what a device is attached
/// (``HIDEventSystem/setScreens(_:)``); the screen mapping reads ``screen``,
/// ``calibration`` and ``rotation``, and turns a motion sensor's acceleration by its
/// ``mountMatrix``; the others are read and checked now and kept for the pointer stage
/// (acceleration, scrolling, tapping, disable-while-typing) and the gamepad stage (dead
/// zone), which apply them.
public struct DeviceSettings: Sendable, Hashable {
    /// Leave the device alone (libinput's `LIBINPUT_IGNORE_DEVICE`).
    public var ignore = false
    /// The class the device is treated as, instead of the one its capabilities give.
    public var deviceClass: HIDDeviceClass?
    /// The name of the screen the device maps to.
    public var screen: String?
    /// The device's calibration matrix (applied before the screen's rotation).
    public var calibration: CalibrationMatrix?
    /// A rotation for this device instead of its screen's (a panel mounted turned from its
    /// display).
    public var rotation: ScreenRotation?
    /// The pointer's acceleration profile.
    public var accelerationProfile: AccelerationProfile?
    /// The pointer's speed, −1…1 (libinput's `accel-speed`).
    public var accelerationSpeed: Double?
    /// A custom profile's points: the step, then the speeds (libinput's custom profile).
    public var accelerationPoints: [Double]?
    /// Content follows the fingers when scrolling.
    public var naturalScroll: Bool?
    /// Scroll distances are multiplied by this (above 0).
    public var scrollFactor: Double?
    /// The device's resolution in dots per inch (as udev's `MOUSE_DPI`).
    public var dotsPerInch: Int?
    /// Button debouncing (libinput's bounce and spurious methods).
    public var debounce: Bool?
    /// Left and right pressed together give the middle button.
    public var middleButtonEmulation: Bool?
    /// Tap to click on a touchpad.
    public var tap: Bool?
    /// Disable the touchpad while typing.
    public var disableWhileTyping: Bool?
    /// A gamepad axis's dead zone, 0…1 of its half range.
    public var deadZone: Double?
    /// How the device's accelerometer sits in it (udev's `ACCEL_MOUNT_MATRIX`).
    public var mountMatrix: MountMatrix?
    /// Where each value set came from.
    public var sources: [DeviceSettingKey: SettingSource] = [:]

    /// No setting: what a device without any gets.
    public init() {}

    /// Where `key`'s value came from (``SettingSource/defaultValue`` when nothing set it).
    public func source(of key: DeviceSettingKey) -> SettingSource { sources[key] ?? .defaultValue }

    /// Sets `key` to `value`, remembering `source`.
    public mutating func set(_ key: DeviceSettingKey, to value: DeviceSettingValue, from source: SettingSource) {
        switch value {
        case .flag(let flag):
            switch key {
            case .ignore: ignore = flag
            case .naturalScroll: naturalScroll = flag
            case .debounce: debounce = flag
            case .middleButtonEmulation: middleButtonEmulation = flag
            case .tap: tap = flag
            case .disableWhileTyping: disableWhileTyping = flag
            default: return
            }
        case .deviceClass(let value): deviceClass = value
        case .screen(let name): screen = name
        case .calibration(let matrix): calibration = matrix
        case .rotation(let value): rotation = value
        case .accelerationProfile(let profile): accelerationProfile = profile
        case .number(let number):
            switch key {
            case .accelerationSpeed: accelerationSpeed = number
            case .scrollFactor: scrollFactor = number
            case .deadZone: deadZone = number
            case .dotsPerInch: dotsPerInch = Int(number)
            default: return
            }
        case .numbers(let numbers): accelerationPoints = numbers
        case .mountMatrix(let matrix): mountMatrix = matrix
        }
        sources[key] = source
    }

    /// The settings as lines `key = value (source)`, in key order, for `describe` and `doctor`.
    public var shown: [String] {
        DeviceSettingKey.allCases.compactMap { key in
            guard let source = sources[key], let value = value(of: key) else { return nil }
            return "\(key.rawValue) = \(value) (from \(source))"
        }
    }

    /// `key`'s value as the settings file writes it, or `nil` when not set.
    public func value(of key: DeviceSettingKey) -> String? {
        func flag(_ value: Bool?) -> String? { value.map { $0 ? "yes" : "no" } }
        func number(_ value: Double?) -> String? { value.map(CalibrationMatrix.shortest) }
        switch key {
        case .ignore: return sources[.ignore] == nil ? nil : flag(ignore)
        case .deviceClass: return deviceClass?.rawValue
        case .screen: return screen
        case .calibration: return calibration?.text
        case .rotation: return rotation.map { String($0.degrees) }
        case .accelerationProfile: return accelerationProfile?.rawValue
        case .accelerationSpeed: return number(accelerationSpeed)
        case .accelerationPoints: return accelerationPoints.map { $0.map(CalibrationMatrix.shortest).joined(separator: " ") }
        case .naturalScroll: return flag(naturalScroll)
        case .scrollFactor: return number(scrollFactor)
        case .dotsPerInch: return dotsPerInch.map(String.init)
        case .debounce: return flag(debounce)
        case .middleButtonEmulation: return flag(middleButtonEmulation)
        case .tap: return flag(tap)
        case .disableWhileTyping: return flag(disableWhileTyping)
        case .deadZone: return number(deadZone)
        case .mountMatrix: return mountMatrix?.description
        }
    }
}

/// libinput's pointer acceleration profiles.
public enum AccelerationProfile: String, Sendable, Hashable, CaseIterable {
    /// A constant factor.
    case flat
    /// Faster movements go further (libinput's default).
    case adaptive
    /// A curve given by points (``DeviceSettings/accelerationPoints``).
    case custom
}

/// Where a setting's value came from, shown beside it ("calibration from /etc/…:12").
public enum SettingSource: Sendable, Hashable, CustomStringConvertible {
    /// Nothing set it.
    case defaultValue
    /// A line of a settings file.
    case file(path: String, line: Int)
    /// A udev property of the device.
    case udev(property: String)
    /// A command-line option or the app's own configuration.
    case option(String)

    public var description: String {
        switch self {
        case .defaultValue: "the default"
        case .file(let path, let line): "\(path):\(line)"
        case .udev(let property): "udev's \(property)"
        case .option(let name): name
        }
    }
}

/// The keys of a `[match …]` section of the settings file.
public enum DeviceSettingKey: String, Sendable, Hashable, CaseIterable, Comparable {
    case ignore
    case deviceClass = "class"
    case screen, calibration, rotation
    case accelerationProfile = "accel-profile"
    case accelerationSpeed = "accel-speed"
    case accelerationPoints = "accel-points"
    case naturalScroll = "natural-scroll"
    case scrollFactor = "scroll-factor"
    case dotsPerInch = "dpi"
    case debounce
    case middleButtonEmulation = "middle-emulation"
    case tap
    case disableWhileTyping = "dwt"
    case deadZone = "deadzone"
    case mountMatrix = "mount-matrix"

    public static func < (lhs: DeviceSettingKey, rhs: DeviceSettingKey) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Reads a value for this key, or says what would be valid.
    public func parse(_ text: Substring) throws(DeviceSettingValueError) -> DeviceSettingValue {
        let text = text.trimmingWhitespace
        switch self {
        case .ignore, .naturalScroll, .tap, .disableWhileTyping, .debounce, .middleButtonEmulation:
            switch text.lowercased() {
            case "yes", "true", "on", "1": return .flag(true)
            case "no", "false", "off", "0": return .flag(false)
            default: throw DeviceSettingValueError("'\(text)' is not yes or no (also true/false, on/off, 1/0)")
            }
        case .deviceClass:
            guard let value = HIDDeviceClass(rawValue: String(text)) else {
                throw DeviceSettingValueError(
                    "'\(text)' is not a class; valid: " + HIDDeviceClass.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return .deviceClass(value)
        case .screen:
            guard !text.isEmpty else { throw DeviceSettingValueError("a screen's name is needed (a [screen NAME] section's NAME)") }
            return .screen(String(text))
        case .calibration:
            do { return .calibration(try CalibrationMatrix(parsing: text)) } catch { throw DeviceSettingValueError(error.description) }
        case .rotation:
            do { return .rotation(try ScreenRotation(parsing: text)) } catch { throw DeviceSettingValueError(error.description) }
        case .accelerationProfile:
            guard let profile = AccelerationProfile(rawValue: String(text)) else {
                throw DeviceSettingValueError(
                    "'\(text)' is not a profile; valid: " + AccelerationProfile.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return .accelerationProfile(profile)
        case .accelerationSpeed:
            guard let value = Double(text), value.isFinite, value >= -1, value <= 1 else {
                throw DeviceSettingValueError("'\(text)' is not a speed; valid speeds are −1…1 (0 is the default)")
            }
            return .number(value)
        case .scrollFactor:
            guard let value = Double(text), value.isFinite, value > 0 else {
                throw DeviceSettingValueError("'\(text)' is not a scroll factor; valid factors are numbers above 0 (1 is the default)")
            }
            return .number(value)
        case .dotsPerInch:
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw DeviceSettingValueError(
                    "'\(text)' is not a resolution; valid resolutions are whole dots per inch, 1…100000 (1000 is the default)")
            }
            return .number(Double(value))
        case .deadZone:
            guard let value = Double(text), value >= 0, value < 1 else {
                throw DeviceSettingValueError("'\(text)' is not a dead zone; valid dead zones are 0…1 (below 1) of the half range")
            }
            return .number(value)
        case .accelerationPoints:
            let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
            let numbers = words.compactMap { Double($0) }.filter(\.isFinite)
            guard numbers.count == words.count, numbers.count >= 3, numbers.count <= CustomAccelerationCurve.maximumPointCount + 1,
                numbers[0] > 0, numbers.dropFirst().allSatisfy({ $0 >= 0 })
            else {
                throw DeviceSettingValueError(
                    "'\(text)' are not acceleration points; write the step (above 0) then 2…\(CustomAccelerationCurve.maximumPointCount) speeds (0 or more): 1.0 0 1.2 2.5"
                )
            }
            return .numbers(numbers)
        case .mountMatrix:
            return .mountMatrix(try MountMatrix(parsing: text))
        }
    }
}

/// A value read for a ``DeviceSettingKey``.
public enum DeviceSettingValue: Sendable, Hashable {
    case flag(Bool)
    case deviceClass(HIDDeviceClass)
    case screen(String)
    case calibration(CalibrationMatrix)
    case rotation(ScreenRotation)
    case accelerationProfile(AccelerationProfile)
    case number(Double)
    case numbers([Double])
    case mountMatrix(MountMatrix)
}

/// Why a setting's value was refused, and what would be valid.
public struct DeviceSettingValueError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The refusal, naming what would be valid.
    public var description: String

    init(_ description: String) { self.description = description }
}
