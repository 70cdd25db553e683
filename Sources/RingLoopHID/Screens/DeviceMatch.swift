import Glibc

/// Which devices a rule (a settings-file section, a screen assignment) applies to: every
/// criterion given must hold; a rule with none matches every device.
///
/// Names, `phys` and `ID_PATH` are shell globs (`fnmatch(3)`: `*`, `?`, `[…]`), as in
/// udev rules and libinput's quirks; ids and the bus are exact; a class matches any role
/// the device has (a keyboard with a touchpad on one node matches `pointer`).
public struct DeviceMatch: Sendable, Hashable, CustomStringConvertible {
    /// A glob on the device's name.
    public var name: String?
    /// The vendor id.
    public var vendor: UInt16?
    /// The product id.
    public var product: UInt16?
    /// The bus (`BUS_USB`…).
    public var bus: UInt16?
    /// A class the device has among its roles.
    public var deviceClass: HIDDeviceClass?
    /// A glob on the device's `phys`.
    public var physicalLocation: String?
    /// A glob on udev's `ID_PATH` (never matches a device udev does not know).
    public var path: String?

    /// A rule from its criteria (none: every device).
    public init(
        name: String? = nil, vendor: UInt16? = nil, product: UInt16? = nil, bus: UInt16? = nil,
        deviceClass: HIDDeviceClass? = nil, physicalLocation: String? = nil, path: String? = nil
    ) {
        self.name = name
        self.vendor = vendor
        self.product = product
        self.bus = bus
        self.deviceClass = deviceClass
        self.physicalLocation = physicalLocation
        self.path = path
    }

    /// Whether `device` meets every criterion.
    public func matches(_ device: DeviceIdentity) -> Bool {
        if let name, !globMatches(name, device.name) { return false }
        if let vendor, vendor != device.vendor { return false }
        if let product, product != device.product { return false }
        if let bus, bus != device.bus { return false }
        if let deviceClass, !device.roles.contains(deviceClass) { return false }
        if let physicalLocation, !globMatches(physicalLocation, device.physicalLocation) { return false }
        if let path {
            guard let devicePath = device.properties[DeviceIdentity.pathProperty], globMatches(path, devicePath) else {
                return false
            }
        }
        return true
    }

    /// The criteria as a section header writes them (`name="eGalax*" vendor=0x0eef`).
    public var description: String {
        var words: [String] = []
        if let name { words.append("name=\"\(name)\"") }
        if let vendor { words.append("vendor=\(hex(vendor))") }
        if let product { words.append("product=\(hex(product))") }
        if let bus { words.append("bus=\(BusName.name(of: bus))") }
        if let deviceClass { words.append("class=\(deviceClass.rawValue)") }
        if let physicalLocation { words.append("phys=\"\(physicalLocation)\"") }
        if let path { words.append("id-path=\"\(path)\"") }
        return words.isEmpty ? "every device" : words.joined(separator: " ")
    }
}

/// Whether `text` matches the shell glob `pattern` (`fnmatch(3)` without flags).
func globMatches(_ pattern: String, _ text: String) -> Bool { fnmatch(pattern, text, 0) == 0 }
