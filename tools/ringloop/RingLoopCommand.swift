import ArgumentParser
import RingLoopToolSupport

@main
struct RingLoopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ringloop",
        abstract: "A CFRunLoop-faithful run loop on io_uring, and evdev input as HID events.",
        discussion: """
            Examples:
              ringloop demo                 show the input chain on the bundled recordings
              ringloop doctor               what works on this machine
              ringloop-bench --only wakecore   (measure; a separate command)

            \(Failure.table)
            """,
        version: PackageVersion.current,
        subcommands: [
            Demo.self, Devices.self, Monitor.self, Describe.self, Record.self, ReplayCommand.self, Serve.self, Doctor.self,
            KernelCheck.self,
        ]
    )

    static func main() {
        // Before anything writes: a closed standard output is a failed write (EPIPE), which
        // ends the command through its own clean path (StandardOutput).
        StandardOutput.ignoreBrokenPipes()
        main(nil)
    }
}
