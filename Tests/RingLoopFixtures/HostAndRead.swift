import ArgumentParser
import Foundation
import RingLoop
import RingLoopDevices

/// Hosts a recording's device on a FUSE folder and reads it, blocking, on another thread,
/// with every signal left at its default action: the worst case for a process killed
/// while it serves and reads its own virtual device (the read waits in the server). The
/// tests kill it in every way and check that it ends and leaves nothing behind. SIGUSR1
/// makes it crash for real (`raise(SIGSEGV)` on the main thread, through the Swift
/// backtracer's handler).
struct HostAndRead: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "host-and-read",
        abstract: "Host a recording on a FUSE folder and read it on another thread, with default signal actions (for tests).",
        shouldDisplay: false)

    @Argument(help: "The recording whose device to host.")
    var recording: String

    @Option(help: "The FUSE folder to mount.")
    var mount: String

    func run() throws {
        // SIGUSR1 → a crash of the main thread, which waits for it (blocked in every thread).
        var usr1 = sigset_t()
        sigemptyset(&usr1)
        sigaddset(&usr1, SIGUSR1)
        pthread_sigmask(SIG_BLOCK, &usr1, nil)
        let folder: FUSEDeviceFolder
        let node: FUSEEvdevNode
        do {
            let loaded = try Recording.load(contentsOf: recording)
            folder = try FUSEDeviceFolder(path: mount)
            node = try folder.addDevice(loaded.description!)
        } catch {
            FileHandle.standardError.write(Data("ringloop-fixtures host-and-read: \(error)\n".utf8))
            throw ExitCode(1)
        }
        let path = node.path
        let reader = Thread {
            let fd = open(path, O_RDONLY)
            var buffer = [UInt8](repeating: 0, count: 4096)
            FileHandle.standardOutput.write(Data("ready \(path)\n".utf8))
            // A blocking read with nothing to read: it waits in this process's own server.
            while fd >= 0, read(fd, &buffer, buffer.count) > 0 {}
        }
        reader.start()
        withExtendedLifetime(folder) {
            var signal: Int32 = 0
            while sigwait(&usr1, &signal) != 0 || signal != SIGUSR1 {}
            // A real fault (a write through a null page), as a bug would make one.
            let address = UnsafeMutablePointer<Int>(bitPattern: 8)!
            address.pointee = 1
            while true { pause() }
        }
    }
}
