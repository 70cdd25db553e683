import CXKBCommon
import Glibc
import Synchronization

/// A Compose table (libxkbcommon's `xkb_compose_table`): the dead-key and compose
/// sequences of a locale (`dead_acute e` → `é`), from libX11's tables or the user's
/// `~/.XCompose` as libxkbcommon finds them.
///
/// Immutable once loaded and shareable by threads; a ``KeyboardState`` keeps the progress
/// of a sequence.
public final class ComposeTable: @unchecked Sendable {
    // @unchecked: as Keymap's: the table never changes once loaded, and its reference count
    // (kept without atomics) changes only under `references`.

    /// The locale the table was loaded for.
    public let locale: String
    /// How the locale was chosen (`LC_CTYPE`, or the fallback for the C locale).
    public let localeOrigin: String

    let table: OpaquePointer
    let references = Mutex<Void>(())

    /// The table of `locale`.
    ///
    /// - Parameters:
    ///   - locale: A locale name (`de_DE.UTF-8`). `C`, `POSIX` and the empty name load
    ///     `en_US.UTF-8`'s table, as libxkbcommon's own tools do: the C locale has no table.
    ///   - origin: What chose the locale, for ``localeOrigin``.
    /// - Throws: ``KeymapError/noComposeTable(locale:messages:)`` when there is none.
    public init(locale: String, origin: String = "given explicitly") throws(KeymapError) {
        var chosen = locale
        var chosenOrigin = origin
        if locale.isEmpty || locale == "C" || locale == "POSIX" {
            chosen = "en_US.UTF-8"
            chosenOrigin =
                "\(origin): the \(locale.isEmpty ? "unset" : locale) locale has no Compose table, en_US.UTF-8's is used as libxkbcommon's tools do"
        }
        self.locale = chosen
        localeOrigin = chosenOrigin
        let context = try XKBContext()
        guard let table = xkb_compose_table_new_from_locale(context.context, chosen, XKB_COMPOSE_COMPILE_NO_FLAGS) else {
            throw .noComposeTable(locale: chosen, messages: context.takeMessages())
        }
        self.table = table
    }

    /// The table of the process's locale as libxkbcommon's users resolve it: the first
    /// non-empty of `LC_ALL`, `LC_CTYPE` and `LANG`, else the C locale (which loads
    /// `en_US.UTF-8`'s table).
    ///
    /// - Parameter environment: The variables to read; `nil` reads the process's own.
    /// - Throws: ``KeymapError/noComposeTable(locale:messages:)`` when there is none.
    public static func forLocale(environment: [String: String]? = nil) throws(KeymapError) -> ComposeTable {
        for name in ["LC_ALL", "LC_CTYPE", "LANG"] {
            let value = environment.map { $0[name] } ?? getenv(name).map { String(cString: $0) }
            if let value, !value.isEmpty { return try ComposeTable(locale: value, origin: "the environment's \(name)") }
        }
        return try ComposeTable(locale: "C", origin: "no LC_ALL, LC_CTYPE or LANG")
    }

    deinit {
        xkb_compose_table_unref(table)
    }

    /// A new compose state of this table (under the reference lock).
    func makeState() -> OpaquePointer {
        references.withLock { _ in xkb_compose_state_new(table, XKB_COMPOSE_STATE_NO_FLAGS)! }
    }

    /// Frees a compose state of this table (under the reference lock).
    func freeState(_ state: OpaquePointer) {
        references.withLock { _ in xkb_compose_state_unref(state) }
    }
}
