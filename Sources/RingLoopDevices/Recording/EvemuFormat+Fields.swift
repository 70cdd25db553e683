import RingLoopEvdev

// The evemu reader's fields: events, masks, axis lines and numbers, each refused with its line
// and what was expected.
extension EvemuFormat.Parser {
    /// `E: sec.usec type code value`, with an optional trailing `# comment`.
    func event(_ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) -> InputEvent {
        let fields = tokens(stripComment(body))
        let what = "E: seconds.microseconds type code value (type and code hexadecimal, value decimal)"
        guard fields.count == 4 else { throw fail(line, "expected \(what)") }
        let time = fields[0]
        guard let dot = time.firstIndex(of: UInt8(ascii: ".")),
            let seconds = parseInteger(time[time.startIndex..<dot], radix: 10, signed: false),
            seconds <= Int64(Int32.max) * 4,
            case let fraction = time[(dot + 1)...], !fraction.isEmpty,
            let microseconds = parseInteger(fraction, radix: 10, signed: false)
        else { throw fail(line, "expected a time like 12.345678 in \(what), found '\(preview(time))'") }
        guard fraction.count == 6 else {
            throw fail(
                line,
                "expected six digits of microseconds in '\(preview(time))' (evemu reads the digits as a count of"
                    + " microseconds, so '1.5' is 1.000005 s; ringloop is stricter)")
        }
        guard fields[1].count <= 4, let type = parseInteger(fields[1], radix: 16, signed: false),
            fields[2].count <= 4, let code = parseInteger(fields[2], radix: 16, signed: false)
        else { throw fail(line, "expected hexadecimal type and code of at most ffff in \(what)") }
        guard let value = parseInteger(fields[3], radix: 10, signed: true), value >= Int64(Int32.min),
            value <= Int64(Int32.max)
        else { throw fail(line, "expected a decimal 32-bit value in \(what), found '\(preview(fields[3]))'") }
        return InputEvent(
            seconds: seconds, microseconds: Int32(microseconds), type: UInt16(type), code: UInt16(code),
            value: Int32(value))
    }

    /// Hexadecimal bytes of one or two digits each (evemu reads `%02hhx`); with
    /// `leading`, the first field is the event type (also at most two digits).
    func maskBytes(
        _ body: ArraySlice<UInt8>, _ line: Int, what: String, leading: Bool = false
    )
        throws(RecordingError) -> [UInt8]
    {
        let fields = tokens(stripComment(body))
        guard !fields.isEmpty else { throw fail(line, "expected \(what)") }
        var result: [UInt8] = []
        result.reserveCapacity(fields.count)
        for field in fields {
            guard field.count <= 2, let number = parseInteger(field, radix: 16, signed: false) else {
                throw fail(line, "expected \(what) (at most ff each), found '\(preview(field))'")
            }
            result.append(UInt8(number))
        }
        _ = leading
        return result
    }

    func axisNumbers(_ body: ArraySlice<UInt8>, _ line: Int) throws(RecordingError) -> [Int64] {
        let fields = tokens(stripComment(body))
        let what = "A: code (hexadecimal) minimum maximum fuzz flat [resolution] (decimal)"
        guard fields.count == 5 || fields.count == 6 else { throw fail(line, "expected \(what)") }
        guard fields[0].count <= 2, let code = parseInteger(fields[0], radix: 16, signed: false) else {
            throw fail(line, "expected \(what), found '\(preview(fields[0]))'")
        }
        var result = [code]
        for field in fields.dropFirst() {
            guard let number = parseInteger(field, radix: 10, signed: true) else {
                throw fail(line, "expected \(what), found '\(preview(field))'")
            }
            result.append(number)
        }
        return result
    }

    /// Parses `hexCount` hexadecimal fields, then `decimalCount` decimal ones.
    func numbers(
        _ body: ArraySlice<UInt8>, _ line: Int, hexCount: Int, decimalCount: Int, what: String
    )
        throws(RecordingError) -> [Int64]
    {
        let fields = tokens(stripComment(body))
        if fields.count != hexCount + decimalCount { throw fail(line, "expected \(what)") }
        var result: [Int64] = []
        for (index, field) in fields.enumerated() {
            let decimal = index >= hexCount
            guard let number = parseInteger(field, radix: decimal ? 10 : 16, signed: decimal) else {
                throw fail(line, "expected \(what), found '\(preview(field))'")
            }
            result.append(number)
        }
        return result
    }
}
