import ArgumentParser
@_spi(Benchmarks) import RingLoop

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show input flowing through the whole chain (bundled recordings when no device is present).",
        discussion: """
            The input chain and the virtual devices are not built yet. Until they are, this
            command says so, then shows what does exist: it sets up this thread's wait core
            (an io_uring) and reports the kernel features it uses.

            Example:
              ringloop demo
            """
    )

    func run() throws {
        print("""
            ringloop demo — what it will do:
              host the bundled recordings in devices/ as virtual evdev devices (uinput, or FUSE
              where there is no /dev/uinput), read them through the whole chain (event-system
              thread → client loop → handlers), show the HID events live, and end with a summary
              of events per kind and device, device→handler latency and drops.
            That chain is not built yet (see the project's open issues). What exists now:
            """)
        let report = try WaitCoreReport.probe()
        print("  wait core: \(report)")
    }
}
