import ArgumentParser
import RingLoopDevices
import RingLoopHID
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// One wording and one exit status per kind of mistake, for every subcommand (the codes
/// of sysexits.h; docs/COMMANDS.md's "Errors and exit statuses" table lists them). Each is printed as one line,
/// `ringloop COMMAND: MESSAGE`, on standard error.
enum Failure: Error, Equatable {
    /// A bad option or argument value (64, EX_USAGE; argument-parser's own errors too).
    case usage(String)
    /// An input path that does not exist (66, EX_NOINPUT).
    case missing(path: String)
    /// An input path that exists but cannot be read (66, EX_NOINPUT).
    case unreadable(path: String, errno: Errno)
    /// An input of the wrong kind: a folder where a file is wanted, a character device that
    /// is not an evdev device (65, EX_DATAERR).
    case wrongKind(path: String, found: String, expected: String)
    /// An input whose content is wrong: a malformed recording, with its line (65, EX_DATAERR).
    case malformed(String)
    /// Something the machine lacks: no uinput or FUSE, a mount refused, an event server
    /// that refuses (69, EX_UNAVAILABLE).
    case unavailable(String)
    /// An output (a file, the folder to mount) that cannot be made (73, EX_CANTCREAT).
    case cannotCreate(String)
    /// A write that failed: a full disk, a device gone (74, EX_IOERR).
    case ioError(String)
    /// The readers a replay waited for did not come in time (75, EX_TEMPFAIL).
    case timedOut(String)
    /// Standard output was closed by its reader (141, as a shell reports a program ended
    /// by SIGPIPE; nothing is printed, as `cat` prints nothing there).
    case outputClosed
    /// Ended by a signal before its work was done: 128 + the signal (130 after Ctrl-C),
    /// as a shell reports a program the signal ended; nothing more is printed.
    case interrupted(signal: Int32)
    /// Anything else that went wrong (1).
    case failed(String)

    var exitCode: Int32 {
        switch self {
        case .usage: 64
        case .missing, .unreadable: 66
        case .wrongKind, .malformed: 65
        case .unavailable: 69
        case .cannotCreate: 73
        case .ioError: 74
        case .timedOut: 75
        case .outputClosed: 141
        case .interrupted(let signal): 128 + signal
        case .failed: 1
        }
    }

    var message: String {
        switch self {
        case .usage(let text), .malformed(let text), .unavailable(let text), .cannotCreate(let text), .ioError(let text),
            .timedOut(let text), .failed(let text):
            text
        case .missing(let path): "\(path): No such file or directory"  // strerror(ENOENT), as cat and every other message
        case .unreadable(let path, let errno):
            "\(path): cannot read: \(String(cString: strerror(errno.rawValue)))"
                + (errno == .permissionDenied || errno == .notPermitted ? " (add the user to group 'input', or run as root)" : "")
        case .wrongKind(let path, let found, let expected): "\(path): \(found); expected \(expected)"
        case .outputClosed, .interrupted: ""
        }
    }

    /// The failure of opening or reading `path`.
    static func input(_ path: String, errno: Errno) -> Failure {
        errno == .noSuchFileOrDirectory ? .missing(path: path) : .unreadable(path: path, errno: errno)
    }

    /// The library's errors in this vocabulary.
    init(_ error: any Error) {
        switch error {
        case let failure as Failure: self = failure
        case let error as RecordingError:
            switch error {
            case .unreadable(let file, let errno): self = .input(file, errno: errno)
            case .malformed, .tooLarge, .unexpectedContent: self = .malformed("\(error)")
            }
        case let error as OutputFileError:
            switch error {
            case .write: self = .ioError("\(error)")
            case .isFolder, .danglingLink, .unsupported, .cannotOpen, .cannotReplace: self = .cannotCreate("\(error)")
            }
        case let error as VirtualDeviceError:
            switch error {
            case .folder, .mountPoint: self = .cannotCreate("\(error)")
            case .mount, .noBackend, .uinput, .placement: self = .unavailable("\(error)")
            case .removed: self = .ioError("\(error)")
            }
        case let error as ReplaySessionError:
            switch error {
            case .noDescription, .tooManyDevices: self = .malformed("\(error)")
            case .host(let cause): self = Failure(cause)
            case .send: self = .ioError("\(error)")
            case .readersTimedOut: self = .timedOut("\(error)")
            case .readersUnknown: self = .unavailable("\(error)")
            }
        case let error as RecorderError:
            switch error {
            case .open(let path, let errno): self = .input(path, errno: errno)
            case .notEvdev(let path, let reason):
                self = .wrongKind(path: path, found: "is not an evdev device (\(reason))", expected: "an evdev device node")
            }
        case let error as KeymapError:
            switch error {
            case .unknownLayout, .unknownVariant, .unknownOption, .unknownModel, .compilationFailed: self = .usage("\(error)")
            case .consoleConfiguration: self = .malformed("\(error)")
            case .unreadableFile, .noComposeTable, .noContext: self = .unavailable("\(error)")
            }
        case let error as UntypableCharacter: self = .malformed("\(error)")
        case let error as ValidationError: self = .usage(error.message)
        default: self = .failed("\(error)")
        }
    }

    /// Runs a subcommand's body: a failure (or a library error) is printed as one line and
    /// becomes the process's exit status; so does a failed write to standard output.
    static func reporting(_ command: String, _ body: () throws -> Void) throws {
        CommandLog.setCommand(command)
        var failure: Failure?
        do {
            try body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            failure = Failure(error)
        }
        // A closed or failed standard output outranks what it caused.
        if let output = StandardOutput.failure { failure = output }
        guard let failure else { return }
        if !failure.message.isEmpty { printError("ringloop \(command): \(failure.message)") }
        throw ExitCode(failure.exitCode)
    }

    /// The table of exit statuses (docs/COMMANDS.md), as `ringloop --help` prints it.
    static let table = """
        Exit status: 0 done; 1 another failure; 64 a bad option or value; 65 an input
        of the wrong kind or malformed; 66 an input missing or unreadable; 69 no
        uinput or FUSE, a mount refused, or an event server that refuses; 73 an
        output that cannot be made; 74 a write that failed; 75 readers that did not
        come; 130 replay interrupted by Ctrl-C before its end (128 + the signal);
        141 standard output closed by its reader (the command stops at the first
        failed write, as cat does).
        """
}

/// What an input path is, or which ``Failure`` says why it cannot be used.
enum InputPath: Equatable {
    /// An evdev device node: a character device, or a virtual (FUSE) node that answers
    /// evdev's requests.
    case node
    /// A folder.
    case folder
    /// A recording: a regular file that is not a node, or a FIFO (read to its end).
    case recording

    /// Classifies `path` without blocking (a FIFO is not opened here).
    static func classify(_ path: String) throws(Failure) -> InputPath {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .input(path, errno: Errno(rawValue: errno)) }
        switch info.st_mode & S_IFMT {
        case S_IFDIR: return .folder
        case S_IFIFO: return .recording
        case S_IFREG:
            // A virtual device's node (a FUSE file) is a regular file that answers evdev's
            // requests; read as a recording, it would wait for its events for ever.
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw .input(path, errno: Errno(rawValue: errno)) }
            defer { close(fd) }
            return (try? InputDeviceDescription(fileDescriptor: fd)) == nil ? .recording : .node
        case S_IFCHR:
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { throw .input(path, errno: Errno(rawValue: errno)) }
            defer { close(fd) }
            guard (try? InputDeviceDescription(fileDescriptor: fd)) != nil else {
                throw .wrongKind(
                    path: path, found: "is a character device, not an evdev device", expected: "an evdev device node or a recording")
            }
            return .node
        case S_IFSOCK:
            throw .wrongKind(path: path, found: "is a socket", expected: "an evdev device node or a recording")
        default:
            throw .wrongKind(path: path, found: "is a block device", expected: "an evdev device node or a recording")
        }
    }

    /// Checks, without opening it, that `path` may be an evdev node (a character device,
    /// or a regular file: a FUSE node); whether it is a character device. A reader that
    /// is about to open the node once must not open it twice: a replay waiting for
    /// readers (`--wait-for-readers`) could start once the first open reads or polls and
    /// send its first frames before the second.
    static func requireNodeWithoutOpening(_ path: String, expected: String) throws(Failure) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .input(path, errno: Errno(rawValue: errno)) }
        switch info.st_mode & S_IFMT {
        case S_IFCHR: return true
        case S_IFREG: return false
        case S_IFDIR: throw .wrongKind(path: path, found: "is a folder", expected: expected)
        case S_IFIFO: throw .wrongKind(path: path, found: "is a FIFO", expected: expected)
        case S_IFSOCK: throw .wrongKind(path: path, found: "is a socket", expected: expected)
        default: throw .wrongKind(path: path, found: "is a block device", expected: expected)
        }
    }

    /// `path`, which must be one of `allowed` (`expected` names them for the message).
    static func require(_ path: String, _ allowed: Set<InputPath>, expected: String) throws(Failure) -> InputPath {
        let kind: InputPath
        do { kind = try classify(path) } catch {
            if case .wrongKind(let path, let found, _) = error { throw .wrongKind(path: path, found: found, expected: expected) }
            throw error
        }
        guard allowed.contains(kind) else {
            let found =
                switch kind {
                case .folder: "is a folder"
                case .node: "is an evdev device node"
                case .recording: "is not an evdev device node"
                }
            throw .wrongKind(path: path, found: found, expected: expected)
        }
        return kind
    }
}
