import RingLoopHID

/// A JSON value and its text, without Foundation: keys sorted, slashes and non-ASCII
/// characters left as they are (JSON needs neither escaped) but for those that control
/// layout (escaped: `\u202e`), non-finite numbers as `null`.
enum JSON: Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case array([JSON])
    case object([String: JSON])
    case null

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .int(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: JSON...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSON)...) { self = .object(Dictionary(uniqueKeysWithValues: elements)) }

    /// An optional value, `null` when absent.
    static func optional<T>(_ value: T?, _ wrap: (T) -> JSON) -> JSON { value.map(wrap) ?? .null }

    /// The value's text on one line; `pretty`: indented by two spaces, one member a line.
    func text(pretty: Bool = false) -> String {
        var out = ""
        write(into: &out, pretty: pretty, depth: 0)
        return out
    }

    private func write(into out: inout String, pretty: Bool, depth: Int) {
        switch self {
        case .string(let value): Self.quote(value, into: &out)
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? Self.number(value) : "null"
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        case .array(let values):
            guard !values.isEmpty else { return out += "[]" }
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: depth + 1) }
                value.write(into: &out, pretty: pretty, depth: depth + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: depth) }
            out += "]"
        case .object(let members):
            guard !members.isEmpty else { return out += "{}" }
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: depth + 1) }
                Self.quote(key, into: &out)
                out += pretty ? " : " : ":"
                members[key]!.write(into: &out, pretty: pretty, depth: depth + 1)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: depth) }
            out += "}"
        }
    }

    /// A finite double as JSON: integral values keep a fraction (`1.0`), others their
    /// shortest exact form (`0.1`, `1e-05` becomes `1e-05`, which JSON accepts).
    private static func number(_ value: Double) -> String {
        value.description
    }

    private static func quote(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.isLayoutControl:
                // Every character that controls layout (a control character, a
                // bidirectional override, a line separator) as its escape: valid JSON
                // either way, but a line read on a terminal cannot be reordered or forged.
                for unit in String(scalar).utf16 { out += "\\u" + Format.hex(UInt32(unit), digits: 4) }
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// Number formats without Foundation's `String(format:)`.
enum Format {
    /// `text` (a name another program chose: a device's, a client's) as a terminal may
    /// show it: each character that controls layout (line break, escape, NUL,
    /// bidirectional override…: `isLayoutControl`) written `\u{1B}`, and a backslash
    /// `\\` (so a name cannot spell an escape it does not hold): no name can move the
    /// cursor, colour the screen or forge a line.
    static func shown(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.isLayoutControl || $0 == "\\" }) else { return text }
        var shown = ""
        for scalar in text.unicodeScalars {
            if scalar.isLayoutControl {
                shown += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else if scalar == "\\" {
                shown += "\\\\"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    /// `value` in lowercase hexadecimal, zero-padded to `digits`.
    static func hex(_ value: some BinaryInteger, digits: Int) -> String { TextFormat.hex(value, digits: digits) }

    /// `value` with `decimals` digits after the point, rounded half away from zero.
    static func fixed(_ value: Double, _ decimals: Int) -> String { TextFormat.fixed(value, decimals) }

    /// `text` padded on the left with `fill` to `width` characters.
    static func pad(_ text: String, _ width: Int, _ fill: Character = " ") -> String { TextFormat.pad(text, width, fill) }

    /// `text` padded on the right with spaces to `width` characters.
    static func padRight(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

extension JSON {
    /// A value built as `[String: Any]` (strings, integers, floating-point numbers,
    /// booleans, arrays and dictionaries of them, `JSON` values); anything else is `null`.
    init(any value: Any) {
        switch value {
        case let json as JSON: self = json
        case let text as String: self = .string(text)
        case let flag as Bool: self = .bool(flag)
        case let number as Int: self = .int(number)
        case let number as Int32: self = .int(Int(number))
        case let number as Int64: self = .int(Int(number))
        case let number as UInt16: self = .int(Int(number))
        case let number as UInt32: self = .int(Int(number))
        case let number as Double: self = .double(number)
        case let number as Float: self = .double(Double(number.description) ?? Double(number))
        case let array as [Any]: self = .array(array.map(JSON.init(any:)))
        case let object as [String: Any]: self = .object(object.mapValues(JSON.init(any:)))
        default: self = .null
        }
    }
}
