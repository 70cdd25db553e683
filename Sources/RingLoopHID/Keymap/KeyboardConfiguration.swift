import Glibc

/// What a keymap is compiled from: XKB's rules, model, layout, variant and options (RMLVO),
/// and where each value came from.
///
/// ``resolve(_:consoleConfiguration:environment:)`` takes each value from the first place
/// that gives it, as a Debian kiosk is set up: an explicit value (a command's `--layout`),
/// then the console's keyboard configuration (`/etc/default/keyboard`: `XKBMODEL`,
/// `XKBLAYOUT`, `XKBVARIANT`, `XKBOPTIONS`), then libxkbcommon's environment defaults
/// (`XKB_DEFAULT_RULES`, `XKB_DEFAULT_MODEL`, `XKB_DEFAULT_LAYOUT`, `XKB_DEFAULT_VARIANT`,
/// `XKB_DEFAULT_OPTIONS`), then libxkbcommon's built-in defaults (`evdev`, `pc105`, `us`).
/// The variant always comes with its layout: a variant is a variant of the layout beside it.
public struct KeyboardConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The rules file (`evdev`).
    public var rules: String
    /// The keyboard model (`pc105`).
    public var model: String
    /// One layout, or several separated by commas (`us,de`), switched between by an option
    /// such as `grp:alt_shift_toggle`.
    public var layout: String
    /// The variants of the layouts, separated by commas in the same order (empty: each
    /// layout's basic variant).
    public var variant: String
    /// Options, separated by commas (`grp:alt_shift_toggle,compose:ralt`).
    public var options: String
    /// Where each value came from.
    public var origins: Origins

    /// Where a value of the configuration came from.
    public enum Origin: Sendable, Hashable, CustomStringConvertible {
        /// Given explicitly (an argument).
        case explicit
        /// The console's keyboard configuration file, and the variable in it.
        case consoleConfiguration(path: String, variable: String)
        /// An environment variable of libxkbcommon's (`XKB_DEFAULT_LAYOUT`…).
        case environment(variable: String)
        /// libxkbcommon's built-in default.
        case builtInDefault

        public var description: String {
            switch self {
            case .explicit: "given explicitly"
            case .consoleConfiguration(let path, let variable): "\(variable) in \(path)"
            case .environment(let variable): "the environment's \(variable)"
            case .builtInDefault: "libxkbcommon's default"
            }
        }
    }

    /// Where each value of a configuration came from (the variant's is the layout's).
    public struct Origins: Sendable, Hashable {
        public var rules: Origin
        public var model: Origin
        public var layout: Origin
        public var options: Origin

        /// Origins of values; all explicit by default.
        public init(rules: Origin = .explicit, model: Origin = .explicit, layout: Origin = .explicit, options: Origin = .explicit) {
            self.rules = rules
            self.model = model
            self.layout = layout
            self.options = options
        }
    }

    /// What an app or command asks for; a `nil` value is resolved from the system.
    public struct Request: Sendable, Hashable {
        public var rules: String?
        public var model: String?
        public var layout: String?
        public var variant: String?
        public var options: String?

        /// A request; what is `nil` comes from the system (`variant` only with its layout).
        public init(rules: String? = nil, model: String? = nil, layout: String? = nil, variant: String? = nil, options: String? = nil) {
            self.rules = rules
            self.model = model
            self.layout = layout
            self.variant = variant
            self.options = options
        }
    }

    /// A configuration given in full (every origin ``Origin/explicit``).
    ///
    /// - Parameters:
    ///   - rules: The rules file.
    ///   - model: The keyboard model.
    ///   - layout: The layouts, separated by commas.
    ///   - variant: Their variants, separated by commas.
    ///   - options: The options, separated by commas.
    public init(rules: String = "evdev", model: String = "pc105", layout: String, variant: String = "", options: String = "") {
        self.rules = rules
        self.model = model
        self.layout = layout
        self.variant = variant
        self.options = options
        origins = Origins()
    }

    /// The console's keyboard configuration file on Debian and its derivatives.
    public static let consoleConfigurationPath = "/etc/default/keyboard"

    /// Resolves a configuration: each value from `request`, else the console configuration
    /// file, else the environment, else libxkbcommon's defaults.
    ///
    /// - Parameters:
    ///   - request: The explicit values.
    ///   - consoleConfiguration: The console's keyboard configuration file (absent: skipped).
    ///   - environment: The environment variables to read; `nil` reads the process's own.
    /// - Returns: The configuration, with the origin of each value.
    /// - Throws: ``KeymapError/consoleConfiguration(path:line:message:)`` for a line of the
    ///   file that is not a shell assignment or a comment.
    public static func resolve(
        _ request: Request = Request(), consoleConfiguration: String = consoleConfigurationPath,
        environment: [String: String]? = nil
    ) throws(KeymapError) -> KeyboardConfiguration {
        let console = try ConsoleKeyboardFile.read(consoleConfiguration)
        func environmentValue(_ name: String) -> String? {
            let value: String?
            if let environment {
                value = environment[name]
            } else {
                value = getenv(name).map { String(cString: $0) }
            }
            guard let value, !value.isEmpty else { return nil }
            return value
        }
        func pick(_ explicit: String?, console variable: String?, environment name: String, default value: String) -> (String, Origin) {
            if let explicit { return (explicit, .explicit) }
            if let variable, let found = console?[variable] {
                return (found, .consoleConfiguration(path: consoleConfiguration, variable: variable))
            }
            if let found = environmentValue(name) { return (found, .environment(variable: name)) }
            return (value, .builtInDefault)
        }
        var configuration = KeyboardConfiguration(layout: "us")
        (configuration.rules, configuration.origins.rules) = pick(
            request.rules, console: nil, environment: "XKB_DEFAULT_RULES", default: "evdev")
        (configuration.model, configuration.origins.model) = pick(
            request.model, console: "XKBMODEL", environment: "XKB_DEFAULT_MODEL", default: "pc105")
        (configuration.options, configuration.origins.options) = pick(
            request.options, console: "XKBOPTIONS", environment: "XKB_DEFAULT_OPTIONS", default: "")
        (configuration.layout, configuration.origins.layout) = pick(
            request.layout, console: "XKBLAYOUT", environment: "XKB_DEFAULT_LAYOUT", default: "us")
        switch configuration.origins.layout {
        case .explicit: configuration.variant = request.variant ?? ""
        case .consoleConfiguration: configuration.variant = request.variant ?? console?["XKBVARIANT"] ?? ""
        case .environment: configuration.variant = request.variant ?? environmentValue("XKB_DEFAULT_VARIANT") ?? ""
        case .builtInDefault: configuration.variant = request.variant ?? ""
        }
        return configuration
    }

    /// The layouts, one per group.
    public var layouts: [String] { layout.split(separator: ",", omittingEmptySubsequences: false).map { $0.withoutSurroundingSpaces } }
    /// The variants, one per layout (empty for a layout's basic variant).
    public var variants: [String] {
        let given = variant.split(separator: ",", omittingEmptySubsequences: false).map { $0.withoutSurroundingSpaces }
        return layouts.indices.map { $0 < given.count ? given[$0] : "" }
    }
    /// The options, one by one.
    public var optionList: [String] { options.split(separator: ",").map { $0.withoutSurroundingSpaces }.filter { !$0.isEmpty } }

    /// `layout(variant)` for each layout, the model, and the options.
    public var description: String {
        let names = zip(layouts, variants).map { $1.isEmpty ? $0 : "\($0)(\($1))" }.joined(separator: ",")
        return "\(names) (model \(model), rules \(rules)\(options.isEmpty ? "" : ", options \(options)"))"
    }
}

extension Substring {
    fileprivate var withoutSurroundingSpaces: String {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}

/// `/etc/default/keyboard`: shell assignments (`XKBLAYOUT="de"`), comments and blank lines.
enum ConsoleKeyboardFile {
    /// The file's variables, or `nil` when there is no file.
    static func read(_ path: String) throws(KeymapError) -> [String: String]? {
        guard let bytes = try KeymapFiles.contents(of: path) else { return nil }
        return try parse(String(decoding: bytes, as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String) throws(KeymapError) -> [String: String] {
        var variables: [String: String] = [:]
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.first == "#" { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).drop { $0 == " " } }
            guard let equals = line.firstIndex(of: "="),
                let first = line.first, first == "_" || first.isASCII && first.isLetter,
                line[..<equals].allSatisfy({ $0 == "_" || $0.isASCII && ($0.isLetter || $0.isNumber) })
            else {
                throw .consoleConfiguration(path: path, line: index + 1, message: "expected NAME=value, a comment (#) or a blank line")
            }
            let name = String(line[..<equals])
            var rest = line[line.index(after: equals)...]
            var value = ""
            if let quote = rest.first, quote == "\"" || quote == "'" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: quote) else {
                    throw .consoleConfiguration(path: path, line: index + 1, message: "the value of \(name) has no closing \(quote)")
                }
                value = String(rest[..<close])
                let after = rest[rest.index(after: close)...].drop { $0 == " " || $0 == "\t" }
                guard after.isEmpty || after.first == "#" else {
                    throw .consoleConfiguration(path: path, line: index + 1, message: "text follows the quoted value of \(name)")
                }
            } else {
                value = String(rest.prefix { $0 != " " && $0 != "\t" && $0 != "#" })
            }
            variables[name] = value
        }
        return variables
    }
}

/// Whole small files, read without Foundation.
enum KeymapFiles {
    /// The file's bytes, or `nil` when it does not exist.
    static func contents(of path: String) throws(KeymapError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let error = errno
            if error == ENOENT || error == ENOTDIR { return nil }
            throw .unreadableFile(path: path, reason: String(cString: strerror(error)))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
            if bytes.count > 16 << 20 { throw .unreadableFile(path: path, reason: "larger than 16 MiB") }
        }
        return bytes
    }
}
