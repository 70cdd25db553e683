import RingLoopEvdev

/// What rules match a device by: its name, ids, bus, class and `phys` (from the kernel),
/// and the udev properties the caller read for it (`ID_PATH`, `WL_OUTPUT`,
/// `LIBINPUT_CALIBRATION_MATRIX`…; empty where udev does not know the device, as in
/// containers and on the booted-kernel stage).
public struct DeviceIdentity: Sendable, Hashable {
    /// The device's name (`EVIOCGNAME`).
    public var name: String
    /// The bus (`BUS_USB`…).
    public var bus: UInt16
    /// The vendor id.
    public var vendor: UInt16
    /// The product id.
    public var product: UInt16
    /// The device's class and every role it has (a rule's class matches any role).
    public var roles: Set<HIDDeviceClass>
    /// The device's `phys` (`EVIOCGPHYS`, "usb-0000:00:14.0-1/input0").
    public var physicalLocation: String
    /// udev properties of the device, when udev knows it.
    public var properties: [String: String]

    /// An identity from its parts.
    public init(
        name: String, bus: UInt16 = 0, vendor: UInt16 = 0, product: UInt16 = 0, roles: Set<HIDDeviceClass> = [],
        physicalLocation: String = "", properties: [String: String] = [:]
    ) {
        self.name = name
        self.bus = bus
        self.vendor = vendor
        self.product = product
        self.roles = roles
        self.physicalLocation = physicalLocation
        self.properties = properties
    }

    /// The identity of an attached device, with the udev `properties` read for it.
    public init(_ info: HIDDeviceInfo, properties: [String: String] = [:]) {
        self.init(
            name: info.name, bus: info.busType, vendor: info.vendor, product: info.product, roles: info.roles,
            physicalLocation: info.physicalLocation, properties: properties)
    }

    /// The udev property that names the path of the device on its bus (`pci-0000:00:14.0-usb-0:1:1.0`).
    public static let pathProperty = "ID_PATH"
    /// The udev property that names the output (screen) a device maps to, as Weston and
    /// other libinput integrations read it.
    public static let outputProperty = "WL_OUTPUT"
    /// The udev property holding libinput's calibration matrix for the device.
    public static let calibrationProperty = "LIBINPUT_CALIBRATION_MATRIX"
    /// The udev property that makes libinput ignore the device.
    public static let ignoreProperty = "LIBINPUT_IGNORE_DEVICE"
    /// The udev property holding how a device's accelerometer sits in it (systemd's
    /// `60-sensor.hwdb`).
    public static let mountMatrixProperty = "ACCEL_MOUNT_MATRIX"
}

/// The buses a rule may name, by the word the settings file uses.
enum BusName {
    static let names: [(String, UInt16)] = [
        ("usb", Evdev.BUS_USB), ("bluetooth", Evdev.BUS_BLUETOOTH), ("i2c", Evdev.BUS_I2C), ("spi", Evdev.BUS_SPI),
        ("i8042", Evdev.BUS_I8042), ("serial", Evdev.BUS_RS232), ("virtual", Evdev.BUS_VIRTUAL), ("host", Evdev.BUS_HOST),
        ("pci", Evdev.BUS_PCI),
    ]

    static func bus(named name: some StringProtocol) -> UInt16? {
        let lowered = name.lowercased()
        if let found = names.first(where: { $0.0 == lowered }) { return found.1 }
        return parseIdentifier(name)
    }

    static func name(of bus: UInt16) -> String { names.first { $0.1 == bus }?.0 ?? hex(bus) }
}

/// A 16-bit id written in hexadecimal, with or without `0x` (`0eef`, `0x0eef`), as
/// `lsusb` and udev's hwdb print them.
func parseIdentifier(_ text: some StringProtocol) -> UInt16? {
    var digits = text.trimmingWhitespace
    if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
    guard !digits.isEmpty, digits.count <= 4 else { return nil }
    return UInt16(digits, radix: 16)
}

/// A 16-bit id as four hexadecimal digits, `0x0eef`.
func hex(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
}
