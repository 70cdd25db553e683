import Synchronization

/// What a documented example prints, kept for its test's checks instead of written among
/// the test results. A test file that runs an example verbatim declares its own `print`,
/// which shadows the standard library's in that file only:
///
/// ```swift
/// private let printed = PrintedLines()
/// private func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
///     printed.append(items, separator: separator)
/// }
/// ```
package final class PrintedLines: Sendable {
    private let kept = Mutex<[String]>([])

    package init() {}

    /// Keeps one printed line, its items joined as `print` joins them.
    package func append(_ items: [Any], separator: String) {
        let line = items.map { "\($0)" }.joined(separator: separator)
        kept.withLock { $0.append(line) }
    }

    /// Every line kept so far, oldest first.
    package var lines: [String] { kept.withLock { $0 } }
}
