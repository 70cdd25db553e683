import CXKBCommon
import Synchronization

/// A compiled XKB keymap (libxkbcommon's `xkb_keymap`): what each key of a keyboard types in
/// a layout, with its levels, groups and modifiers.
///
/// Made from a ``KeyboardConfiguration``; an unknown layout, variant, model or option is a
/// ``KeymapError`` naming the list of valid names, never a silent fallback. A keymap is
/// immutable and may be shared by threads; each seat keeps its own ``KeyboardState``.
public final class Keymap: @unchecked Sendable {
    // @unchecked: libxkbcommon's keymap never changes after compilation, and the one thing
    // that writes to it, its reference count (which xkbcommon keeps without atomics), is
    // changed only under `references` (states and reverse lookups take references).

    /// What the keymap was compiled from.
    public let configuration: KeyboardConfiguration
    /// The layouts' names, one per group, as the keymap names them (`English (US)`).
    public let layoutNames: [String]

    let keymap: OpaquePointer
    let references = Mutex<Void>(())
    let keycodes: ClosedRange<UInt32>

    /// Compiles the keymap of `configuration`.
    ///
    /// - Parameter configuration: The rules, model, layouts, variants and options.
    /// - Throws: ``KeymapError/unknownLayout(_:listedIn:)``,
    ///   ``KeymapError/unknownVariant(_:layout:listedIn:)``,
    ///   ``KeymapError/unknownModel(_:listedIn:)`` or ``KeymapError/unknownOption(_:listedIn:)``
    ///   for a name the rules do not know; ``KeymapError/compilationFailed(_:messages:)`` with
    ///   libxkbcommon's messages for anything else.
    public init(configuration: KeyboardConfiguration) throws(KeymapError) {
        self.configuration = configuration
        let context = try XKBContext()
        guard !context.includePaths.isEmpty else { throw .noContext(messages: context.takeMessages()) }
        let compiled = configuration.rules.withCString { rules in
            configuration.model.withCString { model in
                configuration.layout.withCString { layout in
                    configuration.variant.withCString { variant in
                        configuration.options.withCString { options in
                            var names = xkb_rule_names(rules: rules, model: model, layout: layout, variant: variant, options: options)
                            return xkb_keymap_new_from_names(context.context, &names, XKB_KEYMAP_COMPILE_NO_FLAGS)
                        }
                    }
                }
            }
        }
        let messages = context.takeMessages()
        let list = try XKBRulesList.find(rules: configuration.rules, includePaths: context.includePaths)
        let listName = list?.path ?? "the rules' list (\(configuration.rules).lst under \(context.includePaths.joined(separator: ", ")))"
        guard let compiled else {
            if let list {
                for (layout, variant) in zip(configuration.layouts, configuration.variants) {
                    guard list.layouts.contains(layout) else { throw .unknownLayout(layout, listedIn: list.path) }
                    guard variant.isEmpty || list.variants[layout]?.contains(variant) == true else {
                        throw .unknownVariant(variant, layout: layout, listedIn: list.path)
                    }
                }
            }
            throw .compilationFailed(configuration, messages: messages)
        }
        // libxkbcommon ignores an unknown model or option (with a message): refuse them.
        if let list {
            if !list.models.contains(configuration.model) {
                xkb_keymap_unref(compiled)
                throw .unknownModel(configuration.model, listedIn: list.path)
            }
            if let option = configuration.optionList.first(where: { !list.options.contains($0) }) {
                xkb_keymap_unref(compiled)
                throw .unknownOption(option, listedIn: list.path)
            }
        } else if let option = configuration.optionList.first(where: { messages.contains("\"\($0)\"") }) {
            xkb_keymap_unref(compiled)
            throw .unknownOption(option, listedIn: listName)
        }
        keymap = compiled
        layoutNames = (0..<xkb_keymap_num_layouts(compiled)).map { index in
            xkb_keymap_layout_get_name(compiled, index).map { String(cString: $0) } ?? ""
        }
        keycodes = xkb_keymap_min_keycode(compiled)...xkb_keymap_max_keycode(compiled)
    }

    /// Compiles the keymap that `request` resolves to
    /// (``KeyboardConfiguration/resolve(_:consoleConfiguration:environment:)``).
    ///
    /// - Parameter request: The explicit values; the rest come from the system.
    /// - Throws: What ``init(configuration:)`` and the resolution throw.
    public convenience init(_ request: KeyboardConfiguration.Request) throws(KeymapError) {
        try self.init(configuration: KeyboardConfiguration.resolve(request))
    }

    deinit {
        xkb_keymap_unref(keymap)
    }

    /// Whether the key with the Linux code `code` repeats when held (the keymap says;
    /// modifiers and locks do not).
    ///
    /// - Parameter code: The Linux key code (`KEY_A` is 30).
    public func repeats(code: UInt16) -> Bool {
        xkb_keymap_key_repeats(keymap, UInt32(code) + 8) != 0
    }

    /// The xkbcommon name of a keysym (`eacute`, `dead_acute`, `Return`), or its number in
    /// hexadecimal (`0x1234abcd`) when it has none.
    ///
    /// - Parameter keysym: The keysym.
    public static func keysymName(_ keysym: UInt32) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let count = xkb_keysym_get_name(keysym, buffer.baseAddress, 64)
            guard count > 0 else { return "0x" + String(keysym, radix: 16) }
            return String(cString: buffer.baseAddress!)
        }
    }

    /// The keysym named `name` (exactly as xkbcommon spells it), or `nil`.
    ///
    /// - Parameter name: A keysym name such as `dead_acute`.
    public static func keysym(named name: String) -> UInt32? {
        let keysym = xkb_keysym_from_name(name, XKB_KEYSYM_NO_FLAGS)
        return keysym == 0 ? nil : keysym
    }

    /// A new libxkbcommon state of this keymap (under the reference lock).
    func makeState() -> OpaquePointer {
        references.withLock { _ in xkb_state_new(keymap)! }
    }

    /// Frees a state of this keymap (under the reference lock).
    func freeState(_ state: OpaquePointer) {
        references.withLock { _ in xkb_state_unref(state) }
    }
}
