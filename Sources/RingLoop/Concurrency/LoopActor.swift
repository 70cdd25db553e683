/// A global actor whose executor is the loop of a thread of its own (a ``LoopThread``
/// named `loop-actor`): code marked `@LoopActor` runs there, serialised with that loop's
/// timers, sources and ports, and can own them without locks.
///
/// ```swift
/// @LoopActor final class Panel {
///     var presses = 0
///     func pressed() { presses += 1 }
/// }
/// ```
///
/// Add items to ``LoopActor/loop`` from `@LoopActor` code; their callbacks run on the same
/// thread, so they can call `LoopActor.assumeIsolated { … }` to reach isolated state.
@globalActor public actor LoopActor {
    /// The actor.
    public static let shared = LoopActor()
    /// The thread whose loop runs the actor's jobs; it lives as long as the process.
    public static let thread = LoopThread(name: "loop-actor")
    /// The loop that runs the actor's jobs.
    public static var loop: RingRunLoop { thread.loop }

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.thread.loop.asUnownedSerialExecutor()
    }

    /// Runs `operation` as `@LoopActor` code synchronously, from a callback of
    /// ``loop`` (which runs on the actor's thread), as `MainActor.assumeIsolated` does for
    /// the main thread. Traps when called on any other thread.
    public static func assumeIsolated<T: Sendable>(
        _ operation: @LoopActor () throws -> T, file: StaticString = #fileID, line: UInt = #line
    ) rethrows -> T {
        loop.preconditionOnLoopThread(file: file, line: line)
        // On the loop's thread the actor's jobs cannot run concurrently: the isolation
        // holds, so the closure may run as nonisolated code (the standard library's
        // MainActor.assumeIsolated drops the isolation the same way).
        return try withoutActuallyEscaping(operation) { operation in
            try unsafeBitCast(operation, to: (() throws -> T).self)()
        }
    }
}
