import Logging
import Synchronization

/// The library's log lines in the command's own form: `ringloop COMMAND: MESSAGE` on
/// standard error, as every other message of the command (swift-log's default handler
/// would print a time stamp, a level and a label in another format). Installed first
/// thing in `main`; ``Failure/reporting(_:_:)`` names the subcommand.
enum CommandLog {
    private static let command = Mutex<String>("")

    /// Names the running subcommand for the lines that follow.
    static func setCommand(_ name: String) { command.withLock { $0 = name } }

    static func bootstrap() {
        LoggingSystem.bootstrap { _ in Handler() }
    }

    /// Prints notices and above (what the library says a user should hear: a server not
    /// there yet, a device that could not be opened), one line each.
    struct Handler: LogHandler {
        var logLevel: Logger.Level = .notice
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let name = CommandLog.command.withLock { $0 }
            printError("ringloop\(name.isEmpty ? "" : " " + name): \(event.message)")
        }
    }
}
