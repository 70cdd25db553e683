import ArgumentParser
import RingLoopHID

/// `--screen`, `--calibration` and `--device-config`: the options that put absolute
/// devices' positions on a screen (for `monitor`; `calibrate` takes `--screen`). Checked
/// in `validate()`, so a bad value is refused before anything starts, with what would be
/// valid.
struct ScreenOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The screen as the app sees it, WIDTHxHEIGHT[@ROTATION]: pixels after the rotation, rotation clockwise (0, 90, 180, 270).",
            valueName: "WxH[@rot]"))
    var screen: String?

    @Option(
        help: ArgumentHelp(
            "A calibration matrix for every absolute device: libinput's six numbers, applied before the rotation.",
            valueName: "a b c d e f"))
    var calibration: String?

    @Option(
        name: .customLong("device-config"),
        help: ArgumentHelp("A per-device settings file (screens, match sections; see 'Screens and calibration').", valueName: "file"),
        completion: .file())
    var deviceConfig: String?

    func validate() throws {
        do {
            if let screen { _ = try ScreenDescription(parsing: screen) }
            if let calibration { _ = try CalibrationMatrix(parsing: calibration) }
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// Whether any of the options was given.
    var isGiven: Bool { screen != nil || calibration != nil || deviceConfig != nil }

    /// The resolver the options describe, or `nil` when none was given. The settings
    /// file's problems are printed on standard error, naming `command`; a file that cannot
    /// be read at all is a failure.
    func resolver(command: String) throws(Failure) -> DeviceSettingsResolver? { try settings(command: command)?.resolver }

    /// The resolver and the settings file's store (to read it again on `SIGHUP`), or `nil`
    /// when no option was given.
    func settings(command: String) throws(Failure) -> ScreenSettings? {
        guard isGiven else { return nil }
        var resolver = DeviceSettingsResolver()
        do {
            if let screen { resolver.screens = [try ScreenDescription(parsing: screen)] }
            if let calibration {
                resolver.overrides.set(
                    .calibration, to: .calibration(try CalibrationMatrix(parsing: calibration)), from: .option("--calibration"))
            }
        } catch {
            throw .usage("\(error)")
        }
        var settings = ScreenSettings(resolver: resolver, command: command)
        if let deviceConfig {
            let (store, file) = try DeviceSettingsStore.loading(deviceConfig, command: command)
            settings.resolver.files = [file]
            settings.store = store
        }
        return settings
    }
}

extension DeviceSettingsStore {
    /// Reads a command's `--device-config` file: the store (to read it again on `SIGHUP`)
    /// and its settings. A key the file gets wrong is printed on standard error, naming
    /// `command`, and left out; a file that is missing, not a file, or unreadable as a
    /// whole is a failure.
    static func loading(_ path: String, command: String) throws(Failure) -> (DeviceSettingsStore, DeviceSettingsFile) {
        _ = try InputPath.require(path, [.recording], expected: "a settings file")
        var store = DeviceSettingsStore(path: path)
        let problems = store.reload()
        guard let file = store.current else { throw .malformed(problems.map(\.description).joined(separator: "; ")) }
        for problem in problems { printError("ringloop \(command): \(problem)") }
        return (store, file)
    }
}

/// What the screen options give a command: the resolver, and the settings file to read
/// again on `SIGHUP`.
struct ScreenSettings {
    var resolver: DeviceSettingsResolver
    var store: DeviceSettingsStore?
    let command: String

    init(resolver: DeviceSettingsResolver, command: String) {
        self.resolver = resolver
        self.command = command
    }

    /// Reads the settings file again, printing what could not be used (a refused key keeps
    /// its previous value; an unreadable file keeps the previous reading), and returns the
    /// resolver to use from now on.
    mutating func reload() -> DeviceSettingsResolver {
        guard var store else { return resolver }
        let problems = store.reload()
        for problem in problems { printError("ringloop \(command): \(problem)") }
        self.store = store
        if let file = store.current { resolver.files = [file] }
        printError("ringloop \(command): read \(store.path) again (\(problems.count) problem\(problems.count == 1 ? "" : "s"))")
        return resolver
    }
}
