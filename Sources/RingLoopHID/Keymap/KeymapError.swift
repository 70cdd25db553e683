/// Why a keymap, a Compose table or a keyboard configuration could not be had.
public enum KeymapError: Error, Equatable, CustomStringConvertible {
    /// A layout that no rules know; `listedIn` is where the valid names are.
    case unknownLayout(String, listedIn: String)
    /// A variant that the layout beside it does not have.
    case unknownVariant(String, layout: String, listedIn: String)
    /// An option that the rules do not know (libxkbcommon would ignore it).
    case unknownOption(String, listedIn: String)
    /// A keyboard model that the rules do not list (libxkbcommon would ignore it).
    case unknownModel(String, listedIn: String)
    /// libxkbcommon could not compile the configuration; its messages.
    case compilationFailed(KeyboardConfiguration, messages: String)
    /// A line of the console's keyboard configuration that is not an assignment.
    case consoleConfiguration(path: String, line: Int, message: String)
    /// A file that exists but could not be read.
    case unreadableFile(path: String, reason: String)
    /// No Compose table for the locale; libxkbcommon's messages.
    case noComposeTable(locale: String, messages: String)
    /// libxkbcommon could not make a context (its include paths); its messages.
    case noContext(messages: String)

    public var description: String {
        switch self {
        case .unknownLayout(let layout, let list):
            "unknown keyboard layout \"\(layout)\": the valid layouts are listed in \(list) (or run `xkbcli list`)"
        case .unknownVariant(let variant, let layout, let list):
            "layout \"\(layout)\" has no variant \"\(variant)\": its variants are listed in \(list) (lines \"\(variant.isEmpty ? "NAME" : variant) \(layout): …\" of the variant section, or run `xkbcli list`)"
        case .unknownOption(let option, let list):
            "unknown keyboard option \"\(option)\": the valid options are listed in \(list) (or run `xkbcli list`)"
        case .unknownModel(let model, let list):
            "unknown keyboard model \"\(model)\": the valid models are listed in \(list) (or run `xkbcli list`)"
        case .compilationFailed(let configuration, let messages):
            "libxkbcommon could not compile the keymap \(configuration): \(messages.isEmpty ? "no message" : messages)"
        case .consoleConfiguration(let path, let line, let message):
            "\(path):\(line): \(message)"
        case .unreadableFile(let path, let reason):
            "cannot read \(path): \(reason)"
        case .noComposeTable(let locale, let messages):
            "no Compose table for the locale \"\(locale)\" (libX11's tables are in /usr/share/X11/locale, package libx11-data)\(messages.isEmpty ? "" : ": " + messages)"
        case .noContext(let messages):
            "libxkbcommon could not start (no keymap data in its include paths; package xkb-data)\(messages.isEmpty ? "" : ": " + messages)"
        }
    }
}
