import CTestLogging
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The tests' log handler: every line the library logs during `swift test` is kept here
/// (the newest 4,096), not printed, so lines that tests provoke on purpose (an injected
/// ring fault, a hostile peer) stay out of the output; a test asserts on the lines it
/// provoked with ``lines(containing:)``. `RINGLOOP_TEST_LOG=stderr` also prints each line
/// on standard error, as swift-log's default handler would.
///
/// Installed when the test process starts (a constructor in `CTestLogging`), before any
/// logger is made.
package enum TestLog {
    /// One logged line: its level, the logger's label and the message.
    package struct Line: Sendable, CustomStringConvertible {
        package let level: Logger.Level
        package let label: String
        package let message: String

        package var description: String { "\(level) \(label): \(message)" }
    }

    private static let kept = Mutex<[Line]>([])
    private static let limit = 4096
    private static let echoes: Bool = {
        guard let value = getenv("RINGLOOP_TEST_LOG") else { return false }
        return String(cString: value) == "stderr"
    }()

    /// The kept lines whose message contains `text`, oldest first.
    package static func lines(containing text: String) -> [Line] {
        kept.withLock { lines in lines.filter { $0.message.contains(text) } }
    }

    static func keep(_ line: Line) {
        kept.withLock { lines in
            if lines.count >= limit { lines.removeFirst(lines.count - limit + 1) }
            lines.append(line)
        }
        if echoes {
            var text = "\(line)\n"
            text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
        }
    }

    /// Installs the handler; the constructor calls it once, before `main`.
    static func bootstrap() {
        ringloop_test_logging_linked()
        LoggingSystem.bootstrap { label in TestLogHandler(label: label) }
    }
}

/// Bootstraps the tests' logging; called by `CTestLogging`'s constructor.
@_cdecl("ringloop_test_logging_bootstrap")
public func ringloopTestLoggingBootstrap() {
    TestLog.bootstrap()
}

/// A swift-log handler that hands every line to ``TestLog``.
struct TestLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        TestLog.keep(TestLog.Line(level: event.level, label: label, message: "\(event.message)"))
    }
}
