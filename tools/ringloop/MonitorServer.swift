import ArgumentParser
import RingLoop
import RingLoopHID
import Synchronization

extension Monitor {
    /// `--server` takes no devices of its own.
    func validateServer() throws {
        guard let server else {
            if requestFocus { throw ValidationError("--request-focus asks an event server: give --server NAME") }
            if socketDir != nil { throw ValidationError("--socket-dir finds an event server: give --server NAME") }
            if observe != nil { throw ValidationError("--observe asks an event server: give --server NAME") }
            return
        }
        guard !server.isEmpty, server.utf8.count <= LocalMessagePort.maximumNameLength else {
            throw ValidationError("--server: the name must be 1 to \(LocalMessagePort.maximumNameLength) bytes")
        }
        if !inputs.isEmpty { throw ValidationError("--server NAME reads the server's devices; give no devices or recordings") }
        if raw { throw ValidationError("--raw reads a device's evdev events; a server's client gets HID events") }
        if grab { throw ValidationError("--grab: the server owns the devices (grab them with the server)") }
        // Pointer options are taken: this client's pointer stage accelerates and scales
        // what the server sends from its unaccelerated motion and unscaled scrolling, once.
        // A touchpad stage here would make the server's touchpads pointers a second time.
        if touchpadOptions.isGiven {
            throw ValidationError(
                "--touchpad, --tap and the touchpad switches: the server makes its touchpads pointers (give them to ringloop serve)")
        }
        try Serve.validateSocketFolder(socketDir)
        _ = try observedClasses()
    }

    /// The parsed --observe.
    func observedClasses() throws -> Set<HIDDeviceClass> {
        try observe.map { try LiveView.Filter.parse($0, "--observe", as: HIDDeviceClass.self) } ?? []
    }

    /// A client of the event server `name` on the main loop, until a signal, `duration` or
    /// a closed standard output; prints the summary.
    func monitorServer(_ name: String, _ settings: Settings) throws(Failure) {
        let loop = RingRunLoop.main
        let ended = LoopEnding(loop: loop)
        let end: @Sendable () -> Void = { ended.end() }
        let signals = try LoopSignalSource.ending(on: loop) { _ in end() }
        defer { signals.invalidate() }
        StandardOutput.whenClosed(end)
        let outputWatch = StandardOutput.watchForClose(on: loop)
        defer { outputWatch?.invalidate() }
        // The client's own port is made in the folder too; its policy admits only the
        // server's user, whoever that is (mode 0666: a server of another user can reach it).
        let namespace = socketDir.map { MessagePortNamespace.directory($0, permissions: 0o666) } ?? .abstract
        let system = HIDEventSystem(
            configuration: .init(
                server: name, namespace: namespace, clientName: "ringloop monitor",
                subscribedDeviceClasses: (try? observedClasses()) ?? [], requestsFocus: requestFocus),
            loop: loop)
        let view = settings.configure(system)
        view.attach(to: system)
        if settings.gestures { view.attachGestures(to: system) }
        let watchdog = LoopStallWatchdog(loop: loop, threshold: settings.stallThreshold) { report in
            printError("ringloop monitor: \(report)")
        }
        do { try system.start() } catch {
            watchdog.stop()
            throw .unavailable("\(error)")
        }
        if let duration = settings.duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in end() }, to: .common)
        }
        while !ended.hasEnded {
            if loop.run(mode: .default, until: .distantFuture) == .finished { break }
        }
        system.stop()
        watchdog.stop()
        if StandardOutput.isOpen {
            let summary = view.summary(
                systemDropped: system.statistics.dropped, stalls: (watchdog.stallCount, settings.stallThreshold))
            if settings.json { printError(summary) } else { writeLine(summary) }
        }
        for problem in system.problems { printError("ringloop monitor: \(problem)") }
    }
}
