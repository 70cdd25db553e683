/// The names a rules file knows, from its list (`/usr/share/X11/xkb/rules/evdev.lst`, what
/// `xkbcli list` shows): models, layouts, each layout's variants, options.
///
/// libxkbcommon fails to compile an unknown layout or variant, but ignores an unknown model
/// or option with a logged message; the keymap checks those against this list.
struct XKBRulesList {
    /// The list file read.
    var path: String
    var models: Set<String> = []
    var layouts: Set<String> = []
    /// Layout name → its variants.
    var variants: [String: Set<String>] = [:]
    var options: Set<String> = []

    /// The list of `rules` in the first of `includePaths` that has one, or `nil`.
    static func find(rules: String, includePaths: [String]) throws(KeymapError) -> XKBRulesList? {
        for root in includePaths {
            let path = root + "/rules/" + rules + ".lst"
            if let bytes = try KeymapFiles.contents(of: path) {
                return XKBRulesList(path: path, text: String(decoding: bytes, as: UTF8.self))
            }
        }
        return nil
    }

    /// Parses a list: `! section` lines, then one entry a line, its name first; a variant's
    /// description starts with its layout (`  nodeadkeys  de: German (no dead keys)`).
    init(path: String, text: String) {
        self.path = path
        var section = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("!") {
                section = String(line.dropFirst().drop { $0 == " " })
                continue
            }
            let fields = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard let name = fields.first.map(String.init) else { continue }
            switch section {
            case "model": models.insert(name)
            case "layout": layouts.insert(name)
            case "variant":
                if fields.count > 1, fields[1].hasSuffix(":") {
                    variants[String(fields[1].dropLast()), default: []].insert(name)
                }
            case "option": options.insert(name)
            default: break
            }
        }
    }
}
