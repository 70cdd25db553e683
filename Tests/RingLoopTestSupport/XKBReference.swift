import Glibc
import RingLoopDevices
import RingLoopHID

/// libxkbcommon read by a program of its own (for the keymap's tests) (Tests/XKBReference/xkb-reference.c), which
/// shares no code with the keymap: compiled once per test run with cc against
/// libxkbcommon, given the same configuration and key sequence.
public enum XKBReference {
    public struct Line: Equatable, CustomStringConvertible {
        public var code: UInt16
        public var value: Int32
        /// The keysym's name, or "ignored" for a repeat of a key that does not repeat.
        public var keysym: String
        /// The text's UTF-8 bytes in hexadecimal, "-" for none.
        public var textHex: String
        /// The lit LEDs (num, caps, scroll), "-" for none.
        public var leds: String
        public var description: String { "\(code) \(value) \(keysym) \(textHex) \(leds)" }
    }

    static let source: String = {
        var path = #filePath
        for _ in 0..<2 { path = String(path[..<path.lastIndex(of: "/")!]) }
        return path + "/XKBReference/xkb-reference.c"
    }()

    /// The compiled program (built on first use).
    public static let program: Result<String, ReferenceError> = {
        let output = "/tmp/ringloop-xkb-reference-\(getpid())"
        return Result { () throws(ReferenceError) -> String in
            let flags = try run("/usr/bin/pkg-config", ["--cflags", "--libs", "xkbcommon"])
            let arguments = ["-O1", "-o", output, source] + flags.split(separator: " ").map(String.init)
            // The system's cc, else the Swift toolchain's clang (a CI machine may have no cc).
            let compiler = try run("/bin/sh", ["-c", "command -v cc || command -v clang"]).split(separator: "\n").first.map(String.init)
            guard let compiler else { throw ReferenceError(description: "no C compiler (cc or clang) on PATH") }
            _ = try run(compiler, arguments)
            atexit { unlink("/tmp/ringloop-xkb-reference-\(getpid())") }
            return output
        }
    }()

    public struct ReferenceError: Error, CustomStringConvertible {
        public var description: String
    }

    static func run(_ path: String, _ arguments: [String]) throws(ReferenceError) -> String {
        do {
            let child = try Spawned(path, arguments)
            let status = child.finish(timeout: .seconds(120))
            guard status == 0 else {
                throw ReferenceError(description: "\(path) \(arguments.joined(separator: " ")) exited \(status): \(child.error)")
            }
            return child.output.trimmingCharacters()
        } catch let error as ReferenceError {
            throw error
        } catch {
            throw ReferenceError(description: "cannot start \(path): \(error)")
        }
    }

    /// What libxkbcommon gives for `events` (code, value) in `configuration`, with the
    /// Compose table of `locale` (`nil`: none).
    public static func interpret(
        _ events: [(code: UInt16, value: Int32)], configuration: KeyboardConfiguration, locale: String?
    ) throws -> [Line] {
        let program = try program.get()
        let eventsPath = "/tmp/ringloop-xkb-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(eventsPath) }
        _ = try Recording.write(events.map { "\($0.code) \($0.value)\n" }.joined(), to: eventsPath)
        let output = try run(
            program,
            [
                configuration.rules, configuration.model, configuration.layout, configuration.variant, configuration.options,
                locale ?? "-", eventsPath,
            ])
        return output.split(separator: "\n").map { line in
            let fields = line.split(separator: " ").map(String.init)
            if fields.count == 3 {
                return Line(code: UInt16(fields[0])!, value: Int32(fields[1])!, keysym: fields[2], textHex: "-", leds: "-")
            }
            return Line(code: UInt16(fields[0])!, value: Int32(fields[1])!, keysym: fields[2], textHex: fields[3], leds: fields[4])
        }
    }

    /// The same lines from the keymap's own ``KeyboardState``.
    public static func interpretWithKeymap(_ events: [(code: UInt16, value: Int32)], state: KeyboardState) -> [Line] {
        events.map { event in
            let keyState: KeyEvent.State = event.value == 0 ? .up : event.value == 1 ? .down : .repeat
            let result = state.process(code: event.code, state: keyState)
            if result.isIgnoredRepeat { return Line(code: event.code, value: event.value, keysym: "ignored", textHex: "-", leds: "-") }
            var leds: [String] = []
            if result.leds.contains(.numLock) { leds.append("num") }
            if result.leds.contains(.capsLock) { leds.append("caps") }
            if result.leds.contains(.scrollLock) { leds.append("scroll") }
            let hex = result.text.withUTF8 { bytes in
                bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            }
            return Line(
                code: event.code, value: event.value, keysym: Keymap.keysymName(result.keysym), textHex: hex.isEmpty ? "-" : hex,
                leds: leds.isEmpty ? "-" : leds.joined(separator: ","))
        }
    }

    /// The text of reference lines, decoded.
    public static func text(of lines: [Line]) -> String {
        var bytes: [UInt8] = []
        for line in lines where line.textHex != "-" {
            var hex = Substring(line.textHex)
            while !hex.isEmpty {
                bytes.append(UInt8(hex.prefix(2), radix: 16)!)
                hex = hex.dropFirst(2)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingCharacters() -> String {
        var slice = self[...]
        while let last = slice.last, last == "\n" || last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}
