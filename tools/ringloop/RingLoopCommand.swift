import ArgumentParser
import RingLoopToolSupport

@main
struct RingLoopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ringloop",
        abstract: "A CFRunLoop-faithful run loop on io_uring, and evdev input as HID events",
        discussion: """
            Examples:
              ringloop demo                  the input chain on the bundled recordings
              ringloop doctor                what works on this machine
              ringloop-bench --only wake     (measure; a separate command)

            \(Failure.table)
            """,
        version: PackageVersion.current,
        subcommands: [
            Demo.self, Devices.self, Monitor.self, Describe.self, Record.self, ReplayCommand.self, Serve.self, Doctor.self,
            Calibrate.self,
            KernelCheck.self, Rumble.self,
            KeymapCommand.self, TypeCommand.self,
        ]
    )

    static func main() {
        // Before anything writes: a closed standard output is a failed write (EPIPE), which
        // ends the command through its own clean path (StandardOutput).
        StandardOutput.ignoreBrokenPipes()
        // Before the library makes a logger: its lines in the command's form.
        CommandLog.bootstrap()
        main(nil)
    }
}
