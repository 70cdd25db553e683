/// The name SDL 2 gives an evdev joystick (`SDL_CreateJoystickName` with the kernel's name
/// as the product name): the name its mapping lines and its GUID's CRC are made from.
///
/// SDL's rules, in order: a controller SDL knows by vendor and product id gets SDL's own
/// name ("Microsoft X-Box 360 pad" is "Xbox 360 Controller"); otherwise the kernel's name
/// without leading and trailing spaces and with runs of spaces made one, a manufacturer's
/// long prefix shortened ("HORI CO.,LTD." → "HORI", "Performance Designed Products" →
/// "PDP"…), and a manufacturer named twice named once ("Razer Razer Raiju" → "Razer
/// Raiju"). Written from SDL 2.26's behaviour; one case differs: a device with no name at
/// all is named `0xVVVV/0xPPPP` here, where SDL names a few known families by type.
public enum SDLJoystickNaming {
    /// SDL's name for a device with these ids whose kernel name is `productName`.
    public static func name(vendor: UInt16, product: UInt16, productName: String) -> String {
        if let known = knownName(vendor: vendor, product: product) { return known }
        var name = Array(productName.utf8.drop { $0 == space })
        if name.isEmpty {
            if vendor != 0 || product != 0 { return "0x" + hex4(vendor) + "/0x" + hex4(product) }
            return "Controller"
        }
        while name.last == space { name.removeLast() }
        var index = 0
        while index + 1 < name.count {
            if name[index] == space && name[index + 1] == space { name.remove(at: index) } else { index += 1 }
        }
        for (prefix, replacement) in replacements where hasPrefixIgnoringCase(name, Array(prefix.utf8)) {
            name.replaceSubrange(0..<prefix.utf8.count, with: Array(replacement.utf8))
            break
        }
        removeRepeatedManufacturer(&name)
        return String(decoding: name, as: UTF8.self)
    }

    /// SDL's own name for a controller it knows by vendor and product id, if any.
    public static func knownName(vendor: UInt16, product: UInt16) -> String? {
        knownNames[UInt32(vendor) << 16 | UInt32(product)]
    }

    private static let space = UInt8(ascii: " ")

    /// Prefixes SDL shortens (the first that matches, ignoring case).
    private static let replacements: [(String, String)] = [
        ("ASTRO Gaming", "ASTRO"), ("Bensussen Deutsch & Associates,Inc.(BDA)", "BDA"), ("NVIDIA Corporation ", ""),
        ("Performance Designed Products", "PDP"), ("HORI CO.,LTD.", "HORI"), ("HORI CO.,LTD", "HORI"),
        ("Mad Catz Inc.", "Mad Catz"), ("QANBA USA, LLC", "Qanba"), ("QANBA USA,LLC", "Qanba"), ("Unknown ", ""),
    ]

    private static let knownNames: [UInt32: String] = {
        var names: [UInt32: String] = [:]
        for entry in controllerNames where names[UInt32(entry.vendor) << 16 | UInt32(entry.product)] == nil {
            names[UInt32(entry.vendor) << 16 | UInt32(entry.product)] = entry.name
        }
        return names
    }()

    /// Drops a leading word (or words) that the name repeats later, as SDL does: at the
    /// first position where the name's start recurs up to a space, everything up to that
    /// space goes.
    private static func removeRepeatedManufacturer(_ name: inout [UInt8]) {
        var position = 1
        while position + 1 < name.count {
            var matched = 0
            while matched < name.count - position && lower(name[matched]) == lower(name[position + matched]) { matched += 1 }
            while matched > 0 {
                if name[matched] == space {
                    name.removeSubrange(0...matched)
                    return
                }
                matched -= 1
            }
            position += 1
        }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    private static func hasPrefixIgnoringCase(_ name: [UInt8], _ prefix: [UInt8]) -> Bool {
        name.count >= prefix.count && zip(name, prefix).allSatisfy { lower($0) == lower($1) }
    }

    private static func hex4(_ value: UInt16) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
