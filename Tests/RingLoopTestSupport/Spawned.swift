import Glibc
import RingLoop
import Synchronization

/// A child process for tests, started with `posix_spawn`: every signal at its default
/// action and none blocked (whatever this process inherited — a shell may start tests
/// with SIGINT ignored), standard output and error read as they come, nothing leaked
/// (Foundation's `Process` leaks inside itself, which AddressSanitizer reports).
public final class Spawned: @unchecked Sendable {
    // @unchecked: what the reading threads touch is in `pipes` (locked or atomic); the
    // rest is set once, or only by the thread that owns this object.
    public let pid: pid_t
    /// What the reading threads share with this object. They hold it, not this object: a
    /// test that stops early (a failed requirement) drops its `Spawned`, whose `deinit`
    /// ends the child, even while the child still holds its pipes.
    private let pipes = PipeState()
    private var readers: [pthread_t] = []

    /// The child's output as the reading threads gather it.
    private final class PipeState: Sendable {
        // A pthread mutex (ThreadLock), not Synchronization's Mutex: ThreadSanitizer
        // cannot see Mutex's contended path and reported a race between a reader and
        // the output.
        let lock = ThreadLock<(output: [UInt8], error: [UInt8], status: Int32?)>(([], [], nil))
        /// Set when the child has ended and its pipes stayed open for a while after: some
        /// process it started (a backtracer, say) holds them; what came so far is kept.
        let abandonPipes = Atomic<Bool>(false)
        /// Reading threads that reached their pipe's end (or gave up).
        let readersDone = Atomic<Int>(0)
    }
    private static let spawnLock = SpawnLock()

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Swift's Glibc
    /// module does not import: found at run time.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static func closeFrom(_ lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            preconditionFailure("glibc 2.34 or later is needed: posix_spawn_file_actions_addclosefrom_np")
        }
        let addCloseFrom = unsafeBitCast(symbol, to: AddCloseFrom.self)
        precondition(addCloseFrom(&actions, lowest) == 0, "posix_spawn_file_actions_addclosefrom_np: \(errno)")
    }

    final class SpawnLock: @unchecked Sendable {
        // @unchecked: a pthread mutex, allocated once and never freed or moved.
        private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            return mutex
        }()
        func lock() { pthread_mutex_lock(mutex) }
        func unlock() { pthread_mutex_unlock(mutex) }
    }

    /// Starts `path` with `arguments` (not including the program name) in `directory`,
    /// with `environment` added to this process's.
    public init(_ path: String, _ arguments: [String], directory: String? = nil, environment: [String: String] = [:]) throws {
        // Pipes are made close-on-exec under a lock every spawn here takes, so no other
        // child (tests start many at once) inherits their write ends and keeps them open.
        Self.spawnLock.lock()
        defer { Self.spawnLock.unlock() }
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw SpawnError(errno: errno) }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        // Nothing else of this process's: descriptors a test harness or another test left
        // without close-on-exec would count against the child's limits (`ulimit -n`) and
        // keep this process's sockets open in it.
        Self.closeFrom(3, in: &actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var env: [String: String] = [:]
        var current = environ
        while let entry = current.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") { env[String(text[..<equals])] = String(text[text.index(after: equals)...]) }
            current += 1
        }
        env.merge(environment) { _, new in new }
        // A working directory through env(1), which changes to it and runs the program.
        let command = directory.map { ["/usr/bin/env", "--chdir=\($0)", path] } ?? [path]
        let argv = (command + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let result = posix_spawn(&child, command[0], &actions, &attributes, argv, envp)
        close(outPipe[1])
        close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw SpawnError(errno: result)
        }
        pid = child
        readers = [startReader(outPipe[0], error: false), startReader(errPipe[0], error: true)]
    }

    private func startReader(_ fd: Int32, error: Bool) -> pthread_t {
        final class Context {
            let pipes: PipeState
            let fd: Int32
            let error: Bool
            init(_ pipes: PipeState, _ fd: Int32, _ error: Bool) {
                self.pipes = pipes
                self.fd = fd
                self.error = error
            }
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Context(pipes, fd, error)).toOpaque()
        pthread_create(
            &thread, nil,
            { raw in
                let context = Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue() as! Context
                let pipes = context.pipes
                var buffer = [UInt8](repeating: 0, count: 4096)
                // Polled, so a reader can give up on a pipe that a descendant of the child
                // still holds open (and may still write to) after the child itself has ended.
                while !pipes.abandonPipes.load(ordering: .acquiring) {
                    var entry = pollfd(fd: context.fd, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&entry, 1, 100)
                    if ready == 0 { continue }
                    if ready < 0 && errno == EINTR { continue }
                    let count = read(context.fd, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    pipes.lock.withLock { state in
                        if context.error { state.error += buffer[0..<count] } else { state.output += buffer[0..<count] }
                    }
                }
                close(context.fd)
                pipes.readersDone.add(1, ordering: .releasing)
                return nil
            }, context)
        return thread
    }

    /// Standard output so far.
    public var output: String { pipes.lock.withLock { String(decoding: $0.output, as: UTF8.self) } }
    /// Standard error so far.
    public var error: String { pipes.lock.withLock { String(decoding: $0.error, as: UTF8.self) } }

    /// The exit status (`WEXITSTATUS`, or 128 + the signal that killed it) once it ended,
    /// without waiting; `nil` while it runs.
    public var status: Int32? {
        if let status = pipes.lock.withLock({ $0.status }) { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        pipes.lock.withLock { $0.status = status }
        return status
    }

    /// Whether it ended (and was reaped).
    public var exited: Bool { status != nil }

    /// The signal that killed it, if a signal did.
    public func killedBy(_ signal: Int32) -> Bool { status == 128 + signal }

    /// Waits up to `timeout` for it to end; its status, or `nil` if it still runs.
    @discardableResult
    public func wait(timeout: Duration) -> Int32? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if let status { return status }
            usleep(5_000)
        }
        return status
    }

    /// Waits for it to end and for its output to be read (SIGKILL after `timeout`). From
    /// the thread that owns this object (as `deinit`, it joins the reading threads).
    ///
    /// A child that SIGKILL does not end within 10 s (one in uninterruptible sleep, say on
    /// a FUSE folder whose server is gone) stops the test process with a message rather
    /// than hang it.
    @discardableResult
    public func finish(timeout: Duration = .seconds(60)) -> Int32 {
        if wait(timeout: timeout) == nil { killAndReap() }
        joinReaders()
        return status!
    }

    /// Sends SIGKILL and waits for the child to end (at most 10 s).
    private func killAndReap() {
        kill(pid, SIGKILL)
        guard wait(timeout: .seconds(10)) != nil else {
            fatalError("Spawned: child \(pid) did not end 10 s after SIGKILL (uninterruptible sleep?)")
        }
    }

    /// Joins the reading threads once the child has ended: at the pipes' end, or after 5 s
    /// if a process the child started still holds them open.
    private func joinReaders() {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(5)
        while pipes.readersDone.load(ordering: .acquiring) < readers.count && clock.now < deadline { usleep(5_000) }
        pipes.abandonPipes.store(true, ordering: .releasing)
        for reader in readers { pthread_join(reader, nil) }
        readers = []
    }

    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// Waits until standard output (or error) holds `text`; whether it came.
    public func waitFor(_ text: String, inError: Bool = false, timeout: Duration = .seconds(20)) -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if (inError ? error : output).contains(text) { return true }
            usleep(5_000)
        }
        return false
    }

    deinit {
        if status == nil { killAndReap() }
        joinReaders()
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var errno: Int32
    public var description: String { "spawn failed: \(String(cString: strerror(errno)))" }
}
