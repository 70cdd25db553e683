/// What an evdev device says about itself: name, ids, properties, the codes it can send,
/// absolute axis ranges and its current LED, switch and key state — everything
/// `libevdev_new_from_fd` asks the kernel for.
///
/// Built from a recording, from a live device (``init(fileDescriptor:)``), or in code.
/// The one description of a device in the package: recordings and virtual devices
/// (RingLoopDevices) and the input chain (RingLoopHID, whose `HIDDeviceInfo` adds what
/// it derives from it) all take this type.
public struct InputDeviceDescription: Hashable, Sendable {
    /// The device's name (`EVIOCGNAME`).
    public var name: String
    /// The bus (`BUS_USB`…; `EVIOCGID`).
    public var busType: UInt16
    /// The vendor id.
    public var vendor: UInt16
    /// The product id.
    public var product: UInt16
    /// The product's version.
    public var version: UInt16
    /// Where the device is attached (`phys`, `EVIOCGPHYS`); empty when the kernel says nothing.
    public var physicalLocation: String
    /// The device's own identifier (`uniq`, `EVIOCGUNIQ`); empty when it has none.
    public var uniqueIdentifier: String
    /// `INPUT_PROP_*` bits.
    public var properties: Set<UInt16>
    /// Supported codes per event type (`EV_KEY` → key codes…). `EV_SYN` lists the types.
    public var codes: [UInt16: Set<UInt16>]
    /// Absolute axes by code.
    public var absoluteAxes: [UInt16: AbsoluteAxis]
    /// LEDs that are on, by code (`L:` lines).
    public var ledStates: [UInt16: Int32]
    /// Switches' states by code (`S:` lines).
    public var switchStates: [UInt16: Int32]
    /// Keys held down when the description was taken.
    public var keysDown: Set<UInt16>
    /// Kernel key repeat (delay, period) in milliseconds, when the device has `EV_REP`.
    public var keyRepeat: (delay: Int32, period: Int32)?

    /// A description made in code; `codes[EV_SYN]` is made to list the types that have
    /// codes, and an absolute axis without a range gets libevdev's placeholder (0…1).
    public init(
        name: String, busType: UInt16 = Evdev.BUS_USB, vendor: UInt16 = 0, product: UInt16 = 0, version: UInt16 = 0,
        physicalLocation: String = "", uniqueIdentifier: String = "", properties: Set<UInt16> = [],
        codes: [UInt16: Set<UInt16>] = [:], absoluteAxes: [UInt16: AbsoluteAxis] = [:],
        ledStates: [UInt16: Int32] = [:], switchStates: [UInt16: Int32] = [:], keysDown: Set<UInt16> = [],
        keyRepeat: (delay: Int32, period: Int32)? = nil
    ) {
        self.name = name
        self.busType = busType
        self.vendor = vendor
        self.product = product
        self.version = version
        self.physicalLocation = physicalLocation
        self.uniqueIdentifier = uniqueIdentifier
        self.properties = properties
        self.codes = codes
        self.absoluteAxes = absoluteAxes
        self.ledStates = ledStates
        self.switchStates = switchStates
        self.keysDown = keysDown
        self.keyRepeat = keyRepeat
        normalizeTypes()
    }

    /// Makes `codes[EV_SYN]` list every type that has codes, as the kernel's type mask does.
    package mutating func normalizeTypes() {
        codes = codes.filter { !$0.value.isEmpty }
        var types = codes[Evdev.EV_SYN] ?? []
        types.insert(Evdev.EV_SYN)
        for (type, set) in codes where type != Evdev.EV_SYN && !set.isEmpty { types.insert(type) }
        if keyRepeat != nil { types.insert(Evdev.EV_REP) }
        codes[Evdev.EV_SYN] = types
        if codes[Evdev.EV_ABS]?.isEmpty == false {
            for code in codes[Evdev.EV_ABS]! where absoluteAxes[code] == nil {
                // No range given: libevdev's (and so evemu's) placeholder range.
                absoluteAxes[code] = AbsoluteAxis(minimum: 0, maximum: 1)
            }
        }
    }

    /// The kernel's key repeat for a new device with `EV_REP` (`input_register_device`:
    /// 250 ms delay, 33 ms period). Recordings do not carry repeat settings, so a
    /// recorded device with `EV_REP` gets these, as it did when it was plugged in.
    public static let kernelDefaultKeyRepeat: (delay: Int32, period: Int32) = (250, 33)

    /// Why a kernel would not accept this description, or `nil`: counts that size memory
    /// (slots) are bounded as the kernel bounds them.
    public var problem: String? {
        if isMultitouch, let slot = absoluteAxes[Evdev.ABS_MT_SLOT] {
            if slot.minimum != 0 || slot.maximum < 0 || Int(slot.maximum) >= Evdev.maximumSlotCount {
                return "ABS_MT_SLOT range \(slot.minimum)…\(slot.maximum): slots count from 0 and the kernel allows"
                    + " at most \(Evdev.maximumSlotCount) (maximum 0…\(Evdev.maximumSlotCount - 1))"
            }
        }
        return nil
    }

    /// Whether the device reports multitouch slots: it has `ABS_MT_SLOT` and not the axis
    /// below it (`ABS_RESERVED`, 0x2e). Devices whose HID descriptor has more axes than
    /// the kernel has names fill codes up to and past 0x2e ("fake MT", as udev and
    /// libevdev call it); their 0x2f is an ordinary axis.
    public var isMultitouch: Bool {
        has(type: Evdev.EV_ABS, code: Evdev.ABS_MT_SLOT) && !has(type: Evdev.EV_ABS, code: Evdev.ABS_RESERVED)
    }

    /// Whether the device can send `code` of `type`.
    public func has(type: UInt16, code: UInt16) -> Bool { codes[type]?.contains(code) ?? false }

    /// The number of multitouch slots (`ABS_MT_SLOT` maximum + 1), or 0.
    public var slotCount: Int {
        guard isMultitouch, let slot = absoluteAxes[Evdev.ABS_MT_SLOT], problem == nil else { return 0 }
        return Int(slot.maximum) + 1
    }

    /// Every field compared, key repeat included.
    public static func == (lhs: InputDeviceDescription, rhs: InputDeviceDescription) -> Bool {
        lhs.name == rhs.name && lhs.busType == rhs.busType && lhs.vendor == rhs.vendor && lhs.product == rhs.product
            && lhs.version == rhs.version && lhs.physicalLocation == rhs.physicalLocation
            && lhs.uniqueIdentifier == rhs.uniqueIdentifier && lhs.properties == rhs.properties
            && lhs.codes == rhs.codes && lhs.absoluteAxes == rhs.absoluteAxes && lhs.ledStates == rhs.ledStates
            && lhs.switchStates == rhs.switchStates && lhs.keysDown == rhs.keysDown
            && lhs.keyRepeat?.delay == rhs.keyRepeat?.delay && lhs.keyRepeat?.period == rhs.keyRepeat?.period
    }

    /// Hashes the name, ids and codes (descriptions that differ only in state collide).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(vendor)
        hasher.combine(product)
        hasher.combine(codes)
    }
}
