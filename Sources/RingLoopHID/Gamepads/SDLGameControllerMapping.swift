/// One SDL game controller mapping line (`GUID,name,a:b0,b:b1,…,platform:Linux,`), as
/// SDL_GameControllerDB and `SDL_GAMECONTROLLERCONFIG` write them.
///
/// After the GUID (32 hex digits, or `default`/`xinput` for SDL's fallbacks) and the name,
/// each field binds a control to an input of the joystick as SDL numbers it
/// (``SDLJoystickLayout``): `bN` a button, `aN` an axis (`+aN`/`-aN` its half, `aN~` it
/// inverted), `hN.M` a hat's direction (1 up, 2 right, 4 down, 8 left). A control with
/// `+`/`-` (`+leftx:b3`) is driven over half its range. `platform:`, `crc:` (the name CRC
/// the line is for) and `hint:` (a condition on an SDL hint, `!` negating, `:=` giving its
/// default) are kept; fields SDL 2 does not know (`sdk>=`, `face:`…) and controls bound
/// to nothing (`guide:,`, in SDL's own lines) are ignored as SDL ignores them. An input that
/// is not one of the forms above makes the line malformed (SDL would drop that field and
/// keep the line; a line a person wrote wrong is better reported).
public struct SDLGameControllerMapping: Sendable, Hashable {
    /// What a binding drives.
    public enum Output: Sendable, Hashable {
        /// A button control.
        case button(GamepadControl)
        /// An axis control over `minimum…maximum` in SDL's units (−32768…32767; a trigger
        /// or a `+` half 0…32767, a `-` half 0…−32768).
        case axis(GamepadControl, minimum: Int32, maximum: Int32)
    }

    /// The joystick input a binding reads, as SDL numbers the device's inputs.
    public enum Input: Sendable, Hashable {
        /// Button `index`.
        case button(index: Int)
        /// Axis `index` over `minimum…maximum` in SDL's units (reversed when inverted).
        case axis(index: Int, minimum: Int32, maximum: Int32)
        /// Hat `index`, the directions in `mask` (1 up, 2 right, 4 down, 8 left).
        case hat(index: Int, mask: UInt8)
    }

    /// One `control:input` field.
    public struct Binding: Sendable, Hashable {
        public var output: Output
        public var input: Input

        /// A binding of `output` to `input`.
        public init(output: Output, input: Input) {
            self.output = output
            self.input = input
        }
    }

    /// A `hint:` condition: the line counts only if the hint's value (or its default) is
    /// true, or false when negated.
    public struct HintCondition: Sendable, Hashable {
        /// The hint's name (`SDL_GAMECONTROLLER_USE_BUTTON_LABELS`).
        public var name: String
        /// `hint:!NAME`: the line counts when the hint is false.
        public var isNegated: Bool
        /// `:=1` after the name: the value when the hint is not set.
        public var defaultValue: Bool

        /// A condition on the hint `name`.
        public init(name: String, isNegated: Bool, defaultValue: Bool) {
            self.name = name
            self.isNegated = isNegated
            self.defaultValue = defaultValue
        }
    }

    /// The GUID the line is for, with the CRC field 0; `nil` for SDL's fallback lines
    /// (`default`, `xinput`).
    public var guid: SDLJoystickGUID?
    /// The first field as written (`default`, `xinput`, or the GUID's hex digits).
    public var guidField: String
    /// The controller's name as the line gives it.
    public var name: String
    /// The bindings in the line's order (SDL applies the first that matches).
    public var bindings: [Binding]
    /// `platform:` (`Linux`, `Windows`…), if given.
    public var platform: String?
    /// The name CRC the line is for (`crc:`, or a non-zero CRC field in the GUID); 0 when
    /// the line is for every name.
    public var crc: UInt16
    /// `hint:`, if given.
    public var hint: HintCondition?
    /// The line as given (without surrounding spaces).
    public var line: String

    /// Parses a mapping line; throws what is wrong with it (``SDLMappingError``, with
    /// `source` and `lineNumber` as given).
    public init(parsing line: some StringProtocol, source: String = "(string)", lineNumber: Int = 1) throws(SDLMappingError) {
        let text = String(line).trimmingSpaces
        func fail(_ problem: String) -> SDLMappingError {
            SDLMappingError(source: source, line: lineNumber, problem: problem)
        }
        let fields = text.split(separator: ",", omittingEmptySubsequences: false)
        guard fields.count >= 3 else {
            throw fail("expected GUID,name,bindings… (a mapping line has at least two commas), found '\(text.prefix(80))'")
        }
        let guidField = String(fields[0]).trimmingSpaces
        self.guidField = guidField
        if guidField.lowercased() == "default" || guidField.lowercased() == "xinput" {
            guid = nil
        } else if let parsed = SDLJoystickGUID(hexString: guidField) {
            guid = parsed
        } else {
            throw fail("the GUID must be 32 hex digits (or default, xinput), found '\(guidField.prefix(40))'")
        }
        name = String(fields[1])
        self.line = text
        bindings = []
        platform = nil
        crc = guid?.field(1) ?? 0
        guid = guid?.withoutCRC
        hint = nil
        for field in fields.dropFirst(2) {
            // SDL skips spaces anywhere in the bindings part.
            let compact = field.filter { $0 != " " }
            if compact.isEmpty { continue }
            guard let colon = compact.firstIndex(of: ":") else {
                throw fail("expected control:input, found '\(compact.prefix(40))'")
            }
            let key = compact[..<colon]
            let value = compact[compact.index(after: colon)...]
            switch key {
            case "platform":
                platform = String(field.trimmingSpaces.dropFirst("platform:".count))
            case "crc":
                guard value.count <= 4, let parsed = UInt16(value, radix: 16) else {
                    throw fail("crc: takes 4 hex digits, found '\(value.prefix(20))'")
                }
                crc = parsed
            case "hint":
                hint = try Self.parseHint(value, fail)
            default:
                var controlName = Substring(key)
                var half: Character?
                if let first = controlName.first, first == "+" || first == "-" {
                    half = first
                    controlName = controlName.dropFirst()
                }
                // Keys SDL 2 does not know (sdk>=, face…) are ignored, as SDL ignores them.
                guard let control = GamepadControl(name: controlName) else { continue }
                // `guide:` with nothing bound (SDL's own lines have some): no binding.
                if value.isEmpty { continue }
                let output: Output
                if control.isAxis {
                    if control.isTrigger {
                        output = .axis(control, minimum: 0, maximum: 32767)
                    } else if half == "+" {
                        output = .axis(control, minimum: 0, maximum: 32767)
                    } else if half == "-" {
                        output = .axis(control, minimum: 0, maximum: -32768)
                    } else {
                        output = .axis(control, minimum: -32768, maximum: 32767)
                    }
                } else {
                    output = .button(control)
                }
                guard let input = Self.parseInput(value) else {
                    throw fail(
                        "'\(control.name)' takes bN (a button), aN, +aN, -aN or aN~ (an axis, its half, inverted) or hN.M (a hat's direction), found '\(value.prefix(20))'"
                    )
                }
                bindings.append(Binding(output: output, input: input))
            }
        }
    }

    /// `bN`, `[+-]aN[~]`, `hN.M`.
    private static func parseInput(_ text: Substring) -> Input? {
        var text = text
        var half: Character?
        if let first = text.first, first == "+" || first == "-" {
            half = first
            text = text.dropFirst()
        }
        var inverted = false
        if text.last == "~" {
            inverted = true
            text = text.dropLast()
        }
        guard let kind = text.first else { return nil }
        let rest = text.dropFirst()
        func number(_ digits: Substring) -> Int? {
            guard !digits.isEmpty, digits.count <= 4, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(digits)
        }
        switch kind {
        case "a":
            guard let index = number(rest) else { return nil }
            var minimum: Int32 = -32768
            var maximum: Int32 = 32767
            if half == "+" {
                minimum = 0
                maximum = 32767
            } else if half == "-" {
                minimum = 0
                maximum = -32768
            }
            if inverted { swap(&minimum, &maximum) }
            return .axis(index: index, minimum: minimum, maximum: maximum)
        case "b":
            guard half == nil, !inverted, let index = number(rest) else { return nil }
            return .button(index: index)
        case "h":
            guard half == nil, !inverted, let dot = rest.firstIndex(of: "."), let index = number(rest[..<dot]),
                let mask = number(rest[rest.index(after: dot)...]), mask <= 15
            else { return nil }
            return .hat(index: index, mask: UInt8(mask))
        default:
            return nil
        }
    }

    private static func parseHint(
        _ text: Substring, _ fail: (String) -> SDLMappingError
    ) throws(SDLMappingError) -> HintCondition {
        var text = text
        var negated = false
        if text.first == "!" {
            negated = true
            text = text.dropFirst()
        }
        var defaultValue = false
        var name = text
        if let colon = text.firstIndex(of: ":") {
            name = text[..<colon]
            let rest = text[text.index(after: colon)...]
            guard rest.hasPrefix("=") else { throw fail("hint: takes NAME, !NAME or NAME:=VALUE, found '\(text.prefix(60))'") }
            defaultValue = (Int(rest.dropFirst()) ?? 0) != 0
        }
        guard !name.isEmpty else { throw fail("hint: needs a hint's name") }
        return HintCondition(name: String(name), isNegated: negated, defaultValue: defaultValue)
    }
}

/// A mapping line or file that could not be used: where (file and line) and why.
public struct SDLMappingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file (or `(string)`, `SDL_GAMECONTROLLERCONFIG`…).
    public var source: String
    /// The line, from 1 (0 for the file as a whole).
    public var line: Int
    /// What is wrong, naming what would be valid.
    public var problem: String

    /// An error at `source`:`line`.
    public init(source: String, line: Int, problem: String) {
        self.source = source
        self.line = line
        self.problem = problem
    }

    public var description: String { line > 0 ? "\(source):\(line): \(problem)" : "\(source): \(problem)" }
}

extension String {
    /// Without leading and trailing spaces, tabs and carriage returns.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) })!
        return String(self[start...end])
    }
}

extension Substring {
    var trimmingSpaces: String { String(self).trimmingSpaces }
}
