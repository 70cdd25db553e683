import CLibEvdev
import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension InputDeviceDescription {
    /// Reads what an open evdev node says about itself, through libevdev (the same
    /// queries `evemu-record` and libinput make): real devices, uinput devices and FUSE
    /// nodes alike.
    public init(fileDescriptor fd: Int32) throws(RecordingError) {
        var device: OpaquePointer?
        let result = libevdev_new_from_fd(fd, &device)
        guard result == 0, let device else {
            throw .unreadable(file: "fd \(fd)", errno: Errno(rawValue: -result))
        }
        defer { libevdev_free(device) }
        self.init(libevdev: device)
    }

    /// Builds a description from a libevdev handle.
    init(libevdev device: OpaquePointer) {
        var codes: [UInt16: Set<UInt16>] = [:]
        var axes: [UInt16: AbsoluteAxis] = [:]
        for type in Evdev.maskTypes where type != Evdev.EV_SYN {
            guard libevdev_has_event_type(device, UInt32(type)) == 1 else { continue }
            var set = Set<UInt16>()
            for code in 0...Evdev.maximumCode(ofType: type)! where libevdev_has_event_code(device, UInt32(type), UInt32(code)) == 1 {
                set.insert(code)
                if type == Evdev.EV_ABS, let info = libevdev_get_abs_info(device, UInt32(code))?.pointee {
                    axes[code] = AbsoluteAxis(info)
                }
            }
            codes[type] = set
        }
        var properties = Set<UInt16>()
        for property in 0...Evdev.INPUT_PROP_MAX where libevdev_has_property(device, UInt32(property)) == 1 {
            properties.insert(property)
        }
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
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        self.init(
            name: text(libevdev_get_name(device)), busType: UInt16(truncatingIfNeeded: libevdev_get_id_bustype(device)),
            vendor: UInt16(truncatingIfNeeded: libevdev_get_id_vendor(device)),
            product: UInt16(truncatingIfNeeded: libevdev_get_id_product(device)),
            version: UInt16(truncatingIfNeeded: libevdev_get_id_version(device)),
            physicalLocation: text(libevdev_get_phys(device)), uniqueIdentifier: text(libevdev_get_uniq(device)),
            properties: properties, codes: codes, absoluteAxes: axes, ledStates: leds, switchStates: switches,
            keysDown: keysDown, keyRepeat: hasRepeat ? (delay, period) : nil)
    }
}
