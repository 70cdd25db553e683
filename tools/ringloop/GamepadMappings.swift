import RingLoopHID

/// The SDL game controller mappings the command uses: the bundled SDL_GameControllerDB
/// lines, then what SDL's environment variables name (`SDL_GAMECONTROLLERCONFIG_FILE`,
/// `SDL_GAMECONTROLLERCONFIG`), then the user's `--gamepad-mappings` file.
enum GamepadMappings {
    /// The bundled lines and the environment's (problems go to standard error).
    static let database: SDLMappingDatabase = {
        var database = SDLMappingDatabase.bundled()
        for problem in database.addEnvironment() { printError("ringloop: skipped: \(problem)") }
        return database
    }()

    /// ``database`` with the lines of `file` on top; each malformed line is reported on
    /// standard error (file and line) and skipped; an unreadable file is a failure.
    static func database(adding file: String?) throws(Failure) -> SDLMappingDatabase {
        var database = Self.database
        guard let file else { return database }
        do {
            for problem in try database.addMappings(contentsOfFile: file) { printError("ringloop: skipped: \(problem)") }
        } catch {
            throw .failed("--gamepad-mappings: \(error)")
        }
        return database
    }
}
