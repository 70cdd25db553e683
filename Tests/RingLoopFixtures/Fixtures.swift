import ArgumentParser

/// Programs the command tests run as child processes: the worst cases a process that
/// serves virtual devices can meet, and a soak. Not installed, not part of `ringloop`.
@main
struct Fixtures: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ringloop-fixtures",
        abstract: "Test fixtures of the ringloop package (run by its tests).",
        subcommands: [HostAndRead.self, Soak.self, LateSignals.self]
    )
}
