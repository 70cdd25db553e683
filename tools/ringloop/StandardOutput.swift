import RingLoop
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Standard output as coreutils treat it: every write is checked, and the first that fails
/// ends the command — at once, through the command's own clean path (a registered stop,
/// then its cleanup: virtual devices removed, folders unmounted), not through SIGPIPE
/// killing it with files open on its own FUSE folder. A reader that went away
/// (`monitor --json | head -1`) ends it with status 141 and no message, as a program
/// ended by SIGPIPE; any other error (`> /dev/full`) with 74 and the reason.
///
/// SIGPIPE is ignored for the whole process (``ignoreBrokenPipes()``, first thing in
/// `main`), so a write to a closed pipe returns `EPIPE` here.
enum StandardOutput {
    /// The first write error (an errno), 0 while writes succeed.
    private static let error = Atomic<Int32>(0)
    /// Called once, on the thread whose write failed: the command stops there.
    private static let onFailure = ThreadLock<(@Sendable () -> Void)?>(nil)

    static func ignoreBrokenPipes() { signal(SIGPIPE, SIG_IGN) }

    /// What ended standard output, if a write failed.
    static var failure: Failure? {
        switch error.load(ordering: .acquiring) {
        case 0: nil
        case EPIPE: .outputClosed
        case let code: .ioError("standard output: cannot write: \(String(cString: strerror(code)))")
        }
    }

    /// Whether writes still succeed.
    static var isOpen: Bool { error.load(ordering: .acquiring) == 0 }

    /// Sets what stops the command when a write fails (a loop's stop, say); called at
    /// once if one already failed.
    static func whenClosed(_ stop: @escaping @Sendable () -> Void) {
        onFailure.withLock { $0 = stop }
        if !isOpen { stop() }
    }

    /// When standard output is a pipe, watches it on `loop` for its reader going away
    /// (the write end then polls `POLLERR`), so a command with nothing to write for a
    /// while — a replay's long gap — still ends at once, as if a write had failed.
    /// - Returns: The source to invalidate before the loop ends, or `nil` (not a pipe).
    static func watchForClose(on loop: RingRunLoop) -> LoopPortSource? {
        var info = stat()
        guard fstat(1, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return nil }
        let source = LoopPortSource(fileDescriptor: .standardOutput, events: []) { events in
            guard events.contains(.error) else { return }
            closedByReader()
        }
        loop.add(source, to: .common)
        return source
    }

    /// Records a closed standard output and stops the command.
    private static func closedByReader() {
        if error.compareExchange(expected: 0, desired: EPIPE, ordering: .acquiringAndReleasing).exchanged {
            onFailure.withLock { $0 }?()
        }
    }

    /// Writes `text` unbuffered (a pipe's reader sees each line as it happens). After a
    /// failed write, writes nothing more.
    @discardableResult
    static func write(_ text: String) -> Bool {
        guard isOpen else { return false }
        var failed: Int32 = 0
        Array(text.utf8).withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(1, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failed = errno
                    return
                }
                offset += written
            }
        }
        guard failed != 0 else { return true }
        if error.compareExchange(expected: 0, desired: failed, ordering: .acquiringAndReleasing).exchanged {
            onFailure.withLock { $0 }?()
        }
        return false
    }
}

/// Writes a line to standard output at once (see ``StandardOutput``).
func writeLine(_ line: String) {
    StandardOutput.write(line + "\n")
}

/// Writes a line to standard error (its failure cannot be reported anywhere).
func printError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    bytes.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
            let written = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}
