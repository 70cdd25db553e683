import CLibEvdev

/// What libevdev says about an open evdev node: its identity and capabilities, read with
/// the queries `evemu-record` and libinput make. The libevdev handle lives only inside
/// ``read(fileDescriptor:_:)``; what callers keep is values.
///
/// What ``InputDeviceDescription/init(fileDescriptor:)`` is built from; the handle never
/// leaves this module.
struct LibevdevDescription {
    var name: String
    var physicalLocation: String
    var uniqueIdentifier: String
    var busType: UInt16
    var vendor: UInt16
    var product: UInt16
    var version: UInt16
    /// Codes per event type, for every type but `EV_SYN` that the device has.
    var codes: [UInt16: Set<UInt16>]
    /// Every absolute axis with its range, by code.
    var absoluteAxes: [UInt16: AbsoluteAxis]
    /// `INPUT_PROP_*` bits.
    var properties: Set<UInt16>

    /// Opens `fd` with libevdev and hands `body` the description and the handle (for the
    /// queries only some callers make: slot count, current values, key repeat). Fails
    /// with the errno libevdev reported when it cannot read the node.
    static func read<Result>(
        fileDescriptor fd: Int32, _ body: (LibevdevDescription, OpaquePointer) -> Result
    ) -> Swift.Result<Result, LibevdevError> {
        var handle: OpaquePointer?
        let status = libevdev_new_from_fd(fd, &handle)
        guard status == 0, let device = handle else { return .failure(LibevdevError(errno: -status)) }
        defer { libevdev_free(device) }
        return .success(body(LibevdevDescription(device), device))
    }

    private init(_ device: OpaquePointer) {
        var codes: [UInt16: Set<UInt16>] = [:]
        var axes: [UInt16: AbsoluteAxis] = [:]
        for type in Evdev.maskTypes where type != Evdev.EV_SYN && libevdev_has_event_type(device, UInt32(type)) == 1 {
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
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        self.name = text(libevdev_get_name(device))
        self.physicalLocation = text(libevdev_get_phys(device))
        self.uniqueIdentifier = text(libevdev_get_uniq(device))
        self.busType = UInt16(truncatingIfNeeded: libevdev_get_id_bustype(device))
        self.vendor = UInt16(truncatingIfNeeded: libevdev_get_id_vendor(device))
        self.product = UInt16(truncatingIfNeeded: libevdev_get_id_product(device))
        self.version = UInt16(truncatingIfNeeded: libevdev_get_id_version(device))
        self.codes = codes
        self.absoluteAxes = axes
        self.properties = properties
    }
}

/// libevdev could not read a node (`libevdev_new_from_fd` failed).
struct LibevdevError: Error {
    /// The errno it reported (`ENOTTY` for a file that is not an evdev node).
    var errno: Int32
}
