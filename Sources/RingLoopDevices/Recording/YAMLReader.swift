/// A YAML node as the ``YAMLReader`` reads it: a scalar, a sequence or a mapping, with the
/// line it starts on.
struct YAMLNode {
    enum Value {
        /// A scalar's text; `plain` when it was not quoted (only plain scalars are
        /// numbers or null).
        case scalar(String, plain: Bool)
        case sequence([YAMLNode])
        /// Pairs in file order.
        case mapping([(key: YAMLNode, value: YAMLNode)])
    }

    var value: Value
    /// The line it starts on, counting from 1.
    var line: Int

    /// A mapping's pairs, looked up by key text.
    struct Mapping: Sequence {
        let pairs: [(key: YAMLNode, value: YAMLNode)]

        subscript(key: String) -> YAMLNode? { pairs.first { $0.key.string == key }?.value }

        func makeIterator() -> IndexingIterator<[(YAMLNode, YAMLNode)]> { pairs.map { ($0.key, $0.value) }.makeIterator() }
    }

    var mapping: Mapping? {
        if case .mapping(let pairs) = value { return Mapping(pairs: pairs) }
        return nil
    }

    var sequence: [YAMLNode]? {
        if case .sequence(let items) = value { return items }
        return nil
    }

    /// A scalar's text.
    var string: String? {
        if case .scalar(let text, _) = value { return text }
        return nil
    }

    /// A plain scalar that is an integer: decimal with an optional sign, or `0x`, `0o`,
    /// `0b` (as YAML's core schema and Yams read them).
    var int: Int? {
        guard case .scalar(let text, true) = value else { return nil }
        var digits = Substring(text.filter { $0 != "_" })
        var negative = false
        if let sign = digits.first, sign == "-" || sign == "+" {
            negative = sign == "-"
            digits = digits.dropFirst()
        }
        var radix = 10
        for (prefix, base) in [("0x", 16), ("0o", 8), ("0b", 2)] where digits.hasPrefix(prefix) {
            radix = base
            digits = digits.dropFirst(2)
        }
        guard !digits.isEmpty, let magnitude = Int(digits, radix: radix) else { return nil }
        return negative ? -magnitude : magnitude
    }

    /// Whether it is a null: an empty plain scalar, `~` or `null`.
    var null: Void? {
        guard case .scalar(let text, true) = value, ["", "~", "null", "Null", "NULL"].contains(text) else { return nil }
        return ()
    }
}

/// Why YAML could not be read: the problem and its line.
struct YAMLError: Error {
    var line: Int
    var problem: String
}

/// Reads the YAML that `libinput record` writes and people paste: block mappings and
/// sequences by indentation (a sequence may sit at its key's indentation), flow
/// sequences and mappings (`[1, 2]`, `{type: X}`, over several lines too), plain,
/// single- and double-quoted scalars, comments and document markers. Anchors, aliases,
/// tags and block scalars (`|`, `>`) are refused with their line: libinput writes none.
/// No Foundation (Yams brought all of it, with ICU's 34 MB of tables, to every program
/// that read a recording).
struct YAMLReader {
    private struct Line {
        var number: Int
        var indent: Int
        var text: Substring
    }

    private var lines: [Line] = []
    private var index = 0
    private var depth = 0
    /// The deepest nesting read (bounded stack on hostile input; libinput writes 5 levels).
    static let maximumDepth = 64

    /// The document's root node (`nil` when it holds nothing).
    static func parse(_ text: String) throws(YAMLError) -> YAMLNode? {
        var reader = YAMLReader()
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            let indent = line.prefix { $0 == " " }.count
            let body = line.dropFirst(indent)
            if body.hasPrefix("\t") { throw YAMLError(line: number, problem: "a tab in indentation") }
            let content = try stripComment(body, line: number)
            if content.isEmpty || content == "---" || content == "..." { continue }
            if content.hasPrefix("%") { continue }  // a directive
            reader.lines.append(Line(number: number, indent: indent, text: content))
        }
        reader.lines.append(Line(number: number + 1, indent: -1, text: ""))  // the end
        guard reader.lines.count > 1 else { return nil }
        let root = try reader.node(indent: reader.lines[0].indent)
        guard reader.current.indent < 0 else {
            throw YAMLError(line: reader.current.number, problem: "unexpected content at this indentation")
        }
        return root
    }

    private var current: Line { lines[index] }

    /// The node whose first line is the current one, at `indent`.
    private mutating func node(indent: Int) throws(YAMLError) -> YAMLNode {
        let line = current
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw YAMLError(line: line.number, problem: "nested deeper than \(Self.maximumDepth) levels")
        }
        if line.text == "-" || line.text.hasPrefix("- ") { return try sequence(indent: line.indent) }
        if Self.keySplit(line.text) != nil { return try mapping(indent: line.indent) }
        index += 1
        return try inlineValue(line.text, line: line.number, parentIndent: indent - 1)
    }

    private mutating func sequence(indent: Int) throws(YAMLError) -> YAMLNode {
        let start = current.number
        var items: [YAMLNode] = []
        while current.indent == indent, current.text == "-" || current.text.hasPrefix("- ") {
            let line = current
            let rest = line.text.dropFirst().drop { $0 == " " }
            if rest.isEmpty {
                index += 1
                items.append(try nested(parentIndent: indent, line: line.number, allowSequenceAtSameIndent: false))
            } else {
                // The item starts on this line, at the column after "- ": read it as if
                // it were a line of its own there.
                lines[index] = Line(number: line.number, indent: line.indent + (line.text.count - rest.count), text: rest)
                items.append(try node(indent: lines[index].indent))
            }
        }
        if current.indent > indent { throw YAMLError(line: current.number, problem: "unexpected indentation in a sequence") }
        return YAMLNode(value: .sequence(items), line: start)
    }

    private mutating func mapping(indent: Int) throws(YAMLError) -> YAMLNode {
        let start = current.number
        var pairs: [(key: YAMLNode, value: YAMLNode)] = []
        while current.indent == indent, let (keyText, rest) = Self.keySplit(current.text) {
            let line = current
            let key = try Self.scalar(keyText, line: line.number)
            index += 1
            let value: YAMLNode
            if rest.isEmpty {
                value = try nested(parentIndent: indent, line: line.number, allowSequenceAtSameIndent: true)
            } else {
                value = try inlineValue(rest, line: line.number, parentIndent: indent)
            }
            pairs.append((key, value))
        }
        if current.indent > indent { throw YAMLError(line: current.number, problem: "unexpected indentation in a mapping") }
        if current.indent == indent, current.text == "-" || current.text.hasPrefix("- ") {
            throw YAMLError(line: current.number, problem: "a sequence item where a mapping key was expected")
        }
        return YAMLNode(value: .mapping(pairs), line: start)
    }

    /// The value below a key or `-` with nothing after it: a more indented block, a
    /// sequence at the key's own indentation, or null.
    private mutating func nested(parentIndent: Int, line: Int, allowSequenceAtSameIndent: Bool) throws(YAMLError) -> YAMLNode {
        if current.indent > parentIndent { return try node(indent: current.indent) }
        if allowSequenceAtSameIndent, current.indent == parentIndent, current.text == "-" || current.text.hasPrefix("- ") {
            return try sequence(indent: parentIndent)
        }
        return YAMLNode(value: .scalar("", plain: true), line: line)
    }

    /// A value on the rest of a line: a flow collection (read on to its closing bracket),
    /// or a scalar (a plain one continued on more indented lines).
    private mutating func inlineValue(_ text: Substring, line: Int, parentIndent: Int) throws(YAMLError) -> YAMLNode {
        if let first = text.first, first == "[" || first == "{" {
            var source = String(text)
            var depth = FlowScanner.depth(of: source)
            while depth > 0, current.indent >= 0 {
                source += "\n" + String(repeating: " ", count: current.indent) + current.text
                index += 1
                depth = FlowScanner.depth(of: source)
            }
            var scanner = FlowScanner(text: Array(source.utf8), line: line)
            let node = try scanner.value()
            try scanner.end()
            return node
        }
        if let first = text.first, "&*!|>".contains(first) {
            throw YAMLError(line: line, problem: "anchors, aliases, tags and block scalars are not read here")
        }
        var plain = String(text)
        if first(of: text) != "\"" && first(of: text) != "'" {
            while current.indent > parentIndent, Self.keySplit(current.text) == nil, !current.text.hasPrefix("- ") {
                plain += " " + current.text
                index += 1
            }
        }
        return try Self.scalar(Substring(plain), line: line)
    }

    private func first(of text: Substring) -> Character? { text.first }

    /// A scalar: quoted (with its escapes) or plain.
    static func scalar(_ text: Substring, line: Int) throws(YAMLError) -> YAMLNode {
        guard let first = text.first, first == "\"" || first == "'" else {
            return YAMLNode(value: .scalar(String(text), plain: true), line: line)
        }
        var scanner = FlowScanner(text: Array(text.utf8), line: line)
        let node = try scanner.value()
        try scanner.end()
        return node
    }

    /// A line `key: rest` split at its mapping indicator (outside quotes and brackets),
    /// or `nil` when it is not a key line.
    static func keySplit(_ text: Substring) -> (Substring, Substring)? {
        var quote: Character?
        var depth = 0
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                let next = text.index(after: index)
                if next < text.endIndex, (open == "\"" && character == "\\") || (open == "'" && character == "'" && text[next] == "'") {
                    index = text.index(after: next)
                    continue
                }
                if character == open { quote = nil }
            } else {
                switch character {
                case "\"" where index == text.startIndex, "'" where index == text.startIndex: quote = character
                case "[", "{": depth += 1
                case "]", "}": depth -= 1
                case ":" where depth == 0:
                    let next = text.index(after: index)
                    if next == text.endIndex || text[next] == " " {
                        let key = text[..<index].reversed().drop { $0 == " " }.reversed()
                        return (Substring(String(key)), text[next...].drop { $0 == " " })
                    }
                default: break
                }
                if depth < 0 { return nil }
            }
            index = text.index(after: index)
        }
        return nil
    }

    /// `text` without a comment: `#` at its start or after a space, outside quotes.
    static func stripComment(_ text: Substring, line: Int) throws(YAMLError) -> Substring {
        var quote: Character?
        var previous: Character = " "
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if let open = quote {
                let next = text.index(after: index)
                if next < text.endIndex, (open == "\"" && character == "\\") || (open == "'" && character == "'" && text[next] == "'") {
                    index = text.index(after: next)
                    continue
                }
                if character == open { quote = nil }
            } else if character == "\"" || character == "'", previous == " " || "[{,:-".contains(previous) {
                quote = character
            } else if character == "#", previous == " " {
                return Substring(String(text[..<index].reversed().drop { $0 == " " }.reversed()))
            }
            previous = character
            index = text.index(after: index)
        }
        return Substring(String(text.reversed().drop { $0 == " " }.reversed()))
    }
}
