/// Reads flow collections and quoted scalars, byte by byte.
struct FlowScanner {
    let text: [UInt8]
    var position = 0
    var line: Int
    private var depth = 0

    init(text: [UInt8], line: Int) {
        self.text = text
        self.line = line
    }

    /// How many brackets are open at the end of `source` (quotes skipped).
    static func depth(of source: String) -> Int {
        var depth = 0
        var quote: UInt8?
        var escaped = false
        for byte in source.utf8 {
            if let open = quote {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\"), open == UInt8(ascii: "\"") {
                    escaped = true
                } else if byte == open {
                    quote = nil
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return depth
    }

    private var peek: UInt8? { position < text.count ? text[position] : nil }

    private func fail(_ problem: String) -> YAMLError { YAMLError(line: line, problem: problem) }

    private mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x09 {
            if byte == 0x0A { line += 1 }
            position += 1
        }
    }

    /// Nothing but spaces may follow.
    mutating func end() throws(YAMLError) {
        skipSpace()
        if position < text.count { throw fail("unexpected '\(Character(UnicodeScalar(text[position])))' after a value") }
    }

    mutating func value() throws(YAMLError) -> YAMLNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= YAMLReader.maximumDepth else { throw fail("nested deeper than \(YAMLReader.maximumDepth) levels") }
        skipSpace()
        guard let byte = peek else { throw fail("a value was expected before the end") }
        switch byte {
        case UInt8(ascii: "["): return try sequence()
        case UInt8(ascii: "{"): return try mapping()
        case UInt8(ascii: "\""), UInt8(ascii: "'"): return try quoted()
        case UInt8(ascii: "&"), UInt8(ascii: "*"), UInt8(ascii: "!"):
            throw fail("anchors, aliases and tags are not read here")
        default: return plain()
        }
    }

    private mutating func sequence() throws(YAMLError) -> YAMLNode {
        let start = line
        position += 1
        var items: [YAMLNode] = []
        while true {
            skipSpace()
            guard let byte = peek else { throw fail("an unclosed '[' (from line \(start))") }
            if byte == UInt8(ascii: "]") {
                position += 1
                return YAMLNode(value: .sequence(items), line: start)
            }
            items.append(try value())
            skipSpace()
            guard let next = peek else { throw fail("an unclosed '[' (from line \(start))") }
            if next == UInt8(ascii: ",") {
                position += 1
            } else if next != UInt8(ascii: "]") {
                throw fail("',' or ']' was expected in a flow sequence")
            }
        }
    }

    private mutating func mapping() throws(YAMLError) -> YAMLNode {
        let start = line
        position += 1
        var pairs: [(key: YAMLNode, value: YAMLNode)] = []
        while true {
            skipSpace()
            guard let byte = peek else { throw fail("an unclosed '{' (from line \(start))") }
            if byte == UInt8(ascii: "}") {
                position += 1
                return YAMLNode(value: .mapping(pairs), line: start)
            }
            let key = try value()
            skipSpace()
            let value: YAMLNode
            if peek == UInt8(ascii: ":") {
                position += 1
                value = try self.value()
            } else {
                value = YAMLNode(value: .scalar("", plain: true), line: line)
            }
            pairs.append((key, value))
            skipSpace()
            guard let next = peek else { throw fail("an unclosed '{' (from line \(start))") }
            if next == UInt8(ascii: ",") {
                position += 1
            } else if next != UInt8(ascii: "}") {
                throw fail("',' or '}' was expected in a flow mapping")
            }
        }
    }

    /// A plain scalar in flow context: up to `,`, `]`, `}` or `: `, spaces trimmed.
    private mutating func plain() -> YAMLNode {
        let start = position
        while let byte = peek {
            if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}") || byte == 0x0A { break }
            if byte == UInt8(ascii: ":"), position + 1 == text.count || [0x20, 0x0A].contains(text[position + 1]) { break }
            position += 1
        }
        var end = position
        while end > start, text[end - 1] == 0x20 { end -= 1 }
        return YAMLNode(value: .scalar(String(decoding: text[start..<end], as: UTF8.self), plain: true), line: line)
    }

    /// A single-quoted (`''` is a quote) or double-quoted (backslash escapes) scalar.
    private mutating func quoted() throws(YAMLError) -> YAMLNode {
        let start = line
        let quote = text[position]
        position += 1
        var bytes: [UInt8] = []
        while true {
            guard let byte = peek else { throw fail("an unclosed quoted string (from line \(start))") }
            position += 1
            if byte == 0x0A { line += 1 }
            if byte == quote {
                if quote == UInt8(ascii: "'"), peek == quote {
                    position += 1
                    bytes.append(quote)
                    continue
                }
                return YAMLNode(value: .scalar(String(decoding: bytes, as: UTF8.self), plain: false), line: start)
            }
            if byte == UInt8(ascii: "\\"), quote == UInt8(ascii: "\"") {
                try escape(into: &bytes)
            } else {
                bytes.append(byte)
            }
        }
    }

    private mutating func escape(into bytes: inout [UInt8]) throws(YAMLError) {
        guard let code = peek else { throw fail("an escape at the end of the text") }
        position += 1
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "n"): 0x0A, UInt8(ascii: "t"): 0x09, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "0"): 0,
            UInt8(ascii: "\\"): UInt8(ascii: "\\"), UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "/"): UInt8(ascii: "/"),
            UInt8(ascii: " "): 0x20, UInt8(ascii: "e"): 0x1B, UInt8(ascii: "a"): 0x07, UInt8(ascii: "b"): 0x08,
        ]
        if let byte = simple[code] { return bytes.append(byte) }
        let digits =
            switch code {
            case UInt8(ascii: "x"): 2
            case UInt8(ascii: "u"): 4
            case UInt8(ascii: "U"): 8
            default: 0
            }
        guard digits > 0, position + digits <= text.count,
            let value = UInt32(String(decoding: text[position..<position + digits], as: UTF8.self), radix: 16),
            let scalar = Unicode.Scalar(value)
        else { throw fail("an unknown escape '\\\(Character(UnicodeScalar(code)))'") }
        position += digits
        bytes += Array(String(Character(scalar)).utf8)
    }
}
