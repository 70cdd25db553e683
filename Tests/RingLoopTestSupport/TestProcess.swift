import Glibc

/// At exit, checks that no FUSE folder this test process mounted is left mounted: its
/// folders are named `/tmp/ringloop-…-PID-…`. A leftover fails the run (exit status 1),
/// naming it, and is detached. Touch ``armed`` before mounting.
public enum MountLeakCheck {
    public static let armed: Bool = {
        atexit {
            let pid = "-\(getpid())-"
            var leftovers: [String] = []
            for line in mountTable().split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 4, fields[4].hasPrefix("/tmp/ringloop-"), fields[4].contains(pid) {
                    leftovers.append(String(fields[4]))
                }
            }
            guard !leftovers.isEmpty else { return }
            let message = Array("test run left FUSE mounts behind: \(leftovers.joined(separator: ", "))\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            for path in leftovers { umount2(path, Int32(MNT_DETACH)) }
            _exit(1)
        }
        return true
    }()
}

/// Whether this test process runs under ThreadSanitizer or AddressSanitizer (and so the
/// programs built with it): several times slower, with malloc owned by the sanitizer.
public let runningUnderSanitizer: Bool = dlsym(nil, "__tsan_init") != nil || dlsym(nil, "__asan_init") != nil

/// Whether this process runs under AddressSanitizer, whose quarantine keeps freed memory
/// (up to 256 MiB) and whose LeakSanitizer sets the exit status of a process that ends
/// holding memory: resident-memory bounds and exit tests of processes mean nothing there.
public let runningUnderAddressSanitizer: Bool = dlsym(nil, "__asan_init") != nil

/// A child process's standard output and error kept in a file, shown when its exit test
/// fails: an exit test's child writes where nobody reads, so a sanitizer's report, a
/// precondition's message or the child's own account of what went wrong was lost with
/// the failure.
public struct ChildOutput: Sendable {
    /// The file, in /tmp, named after `label` and this (parent) process.
    public let path: String

    public init(label: String) {
        path = "/tmp/ringloop-child-output-\(getpid())-\(label)"
    }

    /// In the child: sends its standard output and error to the file at `path` (an exit
    /// test's closure captures the path, a `String`).
    public static func redirect(to path: String) {
        let file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard file >= 0 else { return }
        fflush(nil)
        dup2(file, 1)
        dup2(file, 2)
        close(file)
    }

    /// In the parent, after the exit test: prints what the child wrote when the test
    /// failed (`result` is `nil`), and removes the file.
    public func report(ifFailed failed: Bool) {
        defer { unlink(path) }
        guard failed, let text = textOfFile(path, limit: 1 << 20) else { return }
        print("what the child wrote (\(path)):\n\(text)")
    }
}
