import Testing

@testable import RingLoopDevices

/// The YAML subset `libinput record` writes and people paste, read without Yams (and so
/// without Foundation and ICU).
@Suite("YAML reader")
struct YAMLReaderTests {
    static func read(_ text: String) throws -> YAMLNode {
        try #require(try YAMLReader.parse(text))
    }

    @Test("Block mappings and sequences, a sequence at its key's indentation, nested items")
    func blocks() throws {
        let root = try Self.read(
            """
            # libinput record
            ---
            version: 1
            devices:
            - node: /dev/input/event4
              evdev:
                name: "Logitech MX Master 3"   # a comment
                id: [3, 1133, 16514, 273]
              events:
              - evdev:
                - [0, 0, 2, 0, -3]
              -
                - nested
            empty:
            """)
        let top = try #require(root.mapping)
        #expect(top["version"]?.int == 1)
        let devices = try #require(top["devices"]?.sequence)
        #expect(devices.count == 1)
        let device = try #require(devices[0].mapping)
        #expect(device["node"]?.string == "/dev/input/event4")
        #expect(device["evdev"]?.mapping?["name"]?.string == "Logitech MX Master 3")
        #expect(device["evdev"]?.mapping?["id"]?.sequence?.compactMap(\.int) == [3, 1133, 16514, 273])
        let events = try #require(device["events"]?.sequence)
        #expect(events.count == 2)
        #expect(events[0].mapping?["evdev"]?.sequence?[0].sequence?.compactMap(\.int) == [0, 0, 2, 0, -3])
        #expect(events[1].sequence?[0].string == "nested")
        #expect(top["empty"]?.null != nil)
        #expect(device["evdev"]?.mapping?["id"]?.line == 8)
    }

    @Test("Scalars: quotes and their escapes, # inside quotes, numbers in several bases, nulls, plain text")
    func scalars() throws {
        let root = try Self.read(
            #"""
            a: "quote \" backslash \\ tab \t e-acute \u00e9 # not a comment"
            b: 'it''s # not a comment either'
            c: 0x1f
            d: -0o17
            e: 1_000
            f: ~
            g: plain text with: colons inside
            h: "123"
            i: {type: POINTER_MOTION, time: 1.5, nested: [1, {x: 2}]}
            j: [1,
                2, 3]
            """#)
        let top = try #require(root.mapping)
        #expect(top["a"]?.string == "quote \" backslash \\ tab \t e-acute \u{e9} # not a comment")
        #expect(top["b"]?.string == "it's # not a comment either")
        #expect(top["c"]?.int == 31 && top["d"]?.int == -15 && top["e"]?.int == 1000)
        #expect(top["f"]?.null != nil)
        #expect(top["g"]?.string == "plain text with: colons inside")
        #expect(top["h"]?.int == nil, "a quoted number is a string")
        let flow = try #require(top["i"]?.mapping)
        #expect(flow["type"]?.string == "POINTER_MOTION" && flow["time"]?.string == "1.5")
        #expect(flow["nested"]?.sequence?[1].mapping?["x"]?.int == 2)
        #expect(top["j"]?.sequence?.compactMap(\.int) == [1, 2, 3])
    }

    @Test(
        "What is not read is refused with its line",
        arguments: [
            ("a: [1, 2\n", 1), ("a: {x: 1\n", 1), ("a: \"open\n", 1), ("a: 1\n  b: 2\n", 2), ("a: *alias\n", 1),
            ("a: |\n  text\n", 1), ("- a\nb: 1\n", 2), ("a: [1] x\n", 1), ("a: \"\\q\"\n", 1),
        ])
    func refused(_ text: String, _ line: Int) {
        #expect {
            _ = try YAMLReader.parse(text)
        } throws: { error in
            (error as? YAMLError)?.line == line
        }
    }

    @Test("Nothing but comments and markers is no document")
    func empty() throws {
        #expect(try YAMLReader.parse("# only a comment\n---\n\n") == nil)
    }
}

extension YAMLReaderTests {
    @Test("Nesting deeper than 64 levels is refused, in flow and in blocks (a bounded stack on hostile input)")
    func deepNesting() {
        #expect(throws: YAMLError.self) { try YAMLReader.parse("a: " + String(repeating: "[", count: 100_000)) }
        #expect(throws: YAMLError.self) { try YAMLReader.parse(String(repeating: "- ", count: 10_000) + "x") }
        #expect(throws: Never.self) { try YAMLReader.parse(String(repeating: "- ", count: 50) + "x") }
    }
}
