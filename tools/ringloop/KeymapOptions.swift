import ArgumentParser
import RingLoopHID

/// `--layout`, `--variant`, `--options` and `--model`: the keymap a command interprets or
/// types keys with. What is not given comes from the system (/etc/default/keyboard, then
/// XKB_DEFAULT_*, then us), as `ringloop keymap` shows.
struct KeymapOptions: ParsableArguments {
    @Option(help: "XKB layouts, comma-separated (de; us,de with --options grp:alt_shift_toggle).")
    var layout: String?

    @Option(help: "XKB variants of the layouts, comma-separated (nodeadkeys).")
    var variant: String?

    @Option(help: "XKB options, comma-separated (grp:alt_shift_toggle,compose:ralt).")
    var options: String?

    @Option(help: "XKB keyboard model (pc105).")
    var model: String?

    /// Whether any of the options was given.
    var isGiven: Bool { layout != nil || variant != nil || options != nil || model != nil }

    func validate() throws {
        if variant != nil && layout == nil {
            throw ValidationError("--variant is a variant of a layout: give --layout with it")
        }
    }

    /// The configuration these options and the system resolve to.
    func configuration() throws(Failure) -> KeyboardConfiguration {
        do {
            return try KeyboardConfiguration.resolve(.init(model: model, layout: layout, variant: variant, options: options))
        } catch {
            throw Failure(error)
        }
    }

    /// The compiled keymap.
    func keymap() throws(Failure) -> Keymap {
        do { return try Keymap(configuration: try configuration()) } catch { throw Failure(error) }
    }

    /// The locale's Compose table (dead keys).
    static func composeTable() throws(Failure) -> ComposeTable {
        do { return try ComposeTable.forLocale() } catch { throw Failure(error) }
    }

    /// The keymap a command that reads keys gives them their text with: the one asked for
    /// (an error when it cannot be had), else the system's; a system without one (no
    /// xkb-data, as in the booted-kernel stage's initramfs, or a console configuration that
    /// does not compile) leaves the keys without keysym and text, said on standard error.
    func keymapForReading(command: String) throws(Failure) -> (Keymap?, ComposeTable?) {
        let keymap: Keymap?
        if isGiven {
            keymap = try self.keymap()
        } else {
            do {
                keymap = try Keymap(configuration: try KeyboardConfiguration.resolve())
            } catch {
                printError("ringloop \(command): keys without keysym and text: \(error)")
                return (nil, nil)
            }
        }
        do {
            return (keymap, try ComposeTable.forLocale())
        } catch {
            printError("ringloop \(command): no dead keys or compose: \(error)")
            return (keymap, nil)
        }
    }
}

struct KeymapCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keymap",
        abstract: "Show the keymap key events are read with: its layouts, variants, options and model, and where each came from.",
        discussion: """
            Each value comes from the first place that gives it: the option, then the
            console's keyboard configuration (/etc/default/keyboard: XKBMODEL, XKBLAYOUT,
            XKBVARIANT, XKBOPTIONS), then libxkbcommon's environment (XKB_DEFAULT_MODEL,
            XKB_DEFAULT_LAYOUT, XKB_DEFAULT_VARIANT, XKB_DEFAULT_OPTIONS), then us. The keymap
            is compiled: an unknown layout, variant, option or model is an error naming the
            list of valid ones (/usr/share/X11/xkb/rules/evdev.lst; `xkbcli list`).

            Examples:
              ringloop keymap
              ringloop keymap --layout us,de --options grp:alt_shift_toggle
            """
    )

    @OptionGroup var keymapOptions: KeymapOptions

    func run() throws {
        try Failure.reporting("keymap") {
            let keymap = try keymapOptions.keymap()
            let configuration = keymap.configuration
            let origins = configuration.origins
            writeLine("rules    \(configuration.rules)  (\(origins.rules))")
            writeLine("model    \(configuration.model)  (\(origins.model))")
            writeLine("layout   \(configuration.layout)  (\(origins.layout))")
            writeLine("variant  \(configuration.variant.isEmpty ? "(none)" : configuration.variant)  (with the layout)")
            writeLine("options  \(configuration.options.isEmpty ? "(none)" : configuration.options)  (\(origins.options))")
            for (index, name) in keymap.layoutNames.enumerated() { writeLine("group \(index + 1)  \(name)") }
            let compose = try KeymapOptions.composeTable()
            writeLine("compose  \(compose.locale)  (\(compose.localeOrigin))")
        }
    }
}
