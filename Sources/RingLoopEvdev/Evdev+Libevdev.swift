import CLibEvdev

extension Evdev {
    /// libevdev's own name for a code (`libevdev_event_code_get_name`), exactly as evemu
    /// prints it (`SYN_MAX` for code 15, say); `nil` where it has none. The writers of
    /// evemu's comments use it so their text matches evemu's byte for byte.
    package static func libevdevName(ofCode code: UInt16, type: UInt16) -> String? {
        libevdev_event_code_get_name(UInt32(type), UInt32(code)).map { String(cString: $0) }
    }

    /// libevdev's name for an event type (`libevdev_event_type_get_name`), or `nil`.
    package static func libevdevName(ofType type: UInt16) -> String? {
        libevdev_event_type_get_name(UInt32(type)).map { String(cString: $0) }
    }

    /// libevdev's name for an input property (`libevdev_property_get_name`), or `nil`.
    package static func libevdevName(ofProperty property: UInt16) -> String? {
        libevdev_property_get_name(UInt32(property)).map { String(cString: $0) }
    }
}
