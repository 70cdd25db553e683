import CLibEvdev
import SystemPackage

extension InputDeviceDescription {
    /// Reads what an open evdev node says about itself, through libevdev (the same
    /// queries `evemu-record` and libinput make): real devices, uinput devices and FUSE
    /// nodes alike. Throws the errno libevdev reported (`ENOTTY` for a file that is not an
    /// evdev node) with the request ``EvdevError/Request/describe``.
    public init(fileDescriptor fd: Int32) throws(EvdevError) {
        self = try Self.readWithSlots(fileDescriptor: fd).description
    }

    /// The description and libevdev's slot count (-1 for a device with `ABS_RESERVED`,
    /// "fake MT"), which the input chain keeps as libevdev gives it.
    package static func readWithSlots(
        fileDescriptor fd: Int32
    ) throws(EvdevError) -> (description: InputDeviceDescription, slots: Int32) {
        let read = LibevdevDescription.read(fileDescriptor: fd) { description, device in
            (InputDeviceDescription(description, device), libevdev_get_num_slots(device))
        }
        switch read {
        case .success(let result): return result
        case .failure(let error): throw EvdevError(request: .describe, errno: Errno(rawValue: error.errno))
        }
    }

    /// Adds what a recording keeps beyond capabilities: the LEDs lit, the switches' and
    /// keys' states, and key repeat.
    private init(_ description: LibevdevDescription, _ device: OpaquePointer) {
        let codes = description.codes
        var leds: [UInt16: Int32] = [:]
        for code in codes[Evdev.EV_LED] ?? [] {
            let value = libevdev_get_event_value(device, UInt32(Evdev.EV_LED), UInt32(code))
            if value != 0 { leds[code] = value }
        }
        var switches: [UInt16: Int32] = [:]
        for code in codes[Evdev.EV_SW] ?? [] { switches[code] = libevdev_get_event_value(device, UInt32(Evdev.EV_SW), UInt32(code)) }
        var keysDown = Set<UInt16>()
        for code in codes[Evdev.EV_KEY] ?? [] where libevdev_get_event_value(device, UInt32(Evdev.EV_KEY), UInt32(code)) != 0 {
            keysDown.insert(code)
        }
        var delay: Int32 = 0
        var period: Int32 = 0
        let hasRepeat = libevdev_get_repeat(device, &delay, &period) == 0
        self.init(
            name: description.name, busType: description.busType, vendor: description.vendor, product: description.product,
            version: description.version, physicalLocation: description.physicalLocation,
            uniqueIdentifier: description.uniqueIdentifier, properties: description.properties, codes: codes,
            absoluteAxes: description.absoluteAxes, ledStates: leds, switchStates: switches, keysDown: keysDown,
            keyRepeat: hasRepeat ? (delay, period) : nil)
    }
}
