// custom-source: the Threading Programming Guide's custom input source, on RingLoop.
//
// A worker thread installs a source with a command buffer in its loop. Scheduling the
// source registers it with the main thread (the guide's RunLoopContext, handed over with a
// perform); the main thread then queues commands in the buffer, signals the source and
// wakes the worker's loop, which performs the source: every command queued so far, in
// order. The last command tells the worker to report back and the main thread to end it.
//
//   swift run custom-source 5        # five commands, then a quit command
import Glibc
import RingLoop
import Synchronization

/// The guide's RunLoopSource: a source with a command buffer that any thread fills.
final class CommandSource: Sendable {
    /// The command buffer, shared by the threads that fill it and the source that drains it.
    final class Buffer: Sendable {
        let queued = Mutex<[(command: Int, data: String)]>([])
    }
    private let commands = Buffer()
    /// The loop source itself, to add to the worker's modes.
    let source: LoopSource

    /// - Parameters:
    ///   - scheduled: Called on the worker's thread when the source joins a mode (the
    ///     guide's RunLoopSourceScheduleRoutine).
    ///   - handle: Called on the worker's thread for each command (RunLoopSourcePerformRoutine).
    init(scheduled: @escaping @Sendable (RingRunLoop) -> Void, handle: @escaping @Sendable (Int, String) -> Void) {
        let commands = self.commands
        source = LoopSource(
            schedule: { loop, _ in scheduled(loop) },
            cancel: { _, mode in say("worker: source removed from \(mode)") },
            perform: {
                // The whole buffer at once, taken under the lock, handled outside it.
                let taken = commands.queued.withLock { queued in
                    defer { queued.removeAll() }
                    return queued
                }
                for (command, data) in taken { handle(command, data) }
            })
    }

    /// addCommand:withData: — any thread.
    func add(command: Int, data: String) { commands.queued.withLock { $0.append((command, data)) } }

    /// fireAllCommandsOnRunLoop: — any thread: signal the source, wake its loop.
    func fireAllCommands(on loop: RingRunLoop) {
        source.signal()
        loop.wakeUp()
    }
}

/// Writes a line at once (a pipe would buffer `print`).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? -1 : 3
guard (1...1000).contains(count) else {
    say("usage: custom-source [COUNT]   (COUNT: 1 to 1000 commands, default 3)")
    exit(64)
}
let quit = 0
let mainLoop = RingRunLoop.current
/// What the main thread learns from the worker: its loop and source once registered (the
/// guide's AppDelegate registerSource:), and that it handled the quit command.
let registration = LoopBound<(loop: RingRunLoop, source: CommandSource)?>(nil, loop: mainLoop)
let workerDone = LoopBound(false, loop: mainLoop)
/// The source, made on the worker and read by its own schedule callback.
let made = Mutex<CommandSource?>(nil)

let worker = LoopThread(name: "worker")
worker.perform {
    let commandSource = CommandSource(
        scheduled: { workerLoop in
            // Hand the context to the main thread, as the guide does with
            // performSelectorOnMainThread:.
            guard let source = made.withLock({ $0 }) else { return }
            mainLoop.perform(inModes: [.default], waitUntilDone: false) {
                registration.value = (workerLoop, source)
                say("main: worker source registered")
            }
            mainLoop.wakeUp()
        },
        handle: { command, data in
            say("worker: command \(command) \(data)")
            guard command == quit else { return }
            mainLoop.perform(inModes: [.default], waitUntilDone: false) { workerDone.value = true }
            mainLoop.wakeUp()
        })
    made.withLock { $0 = commandSource }
    RingRunLoop.current.add(commandSource.source, to: .default)
}

// The main loop runs until the worker has registered, then feeds it, then runs until the
// worker has handled the last command.
while registration.value == nil {
    _ = mainLoop.run(mode: .default, for: .milliseconds(100), returnAfterSourceHandled: true)
}
let commandSource = registration.value!.source
for command in 1...count { commandSource.add(command: command, data: "data-\(command)") }
commandSource.add(command: quit, data: "quit")
commandSource.fireAllCommands(on: registration.value!.loop)
while !workerDone.value {
    _ = mainLoop.run(mode: .default, for: .milliseconds(100), returnAfterSourceHandled: true)
}
commandSource.source.invalidate()
worker.stopAndJoin()
say("main: worker finished")
