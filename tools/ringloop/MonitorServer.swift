import ArgumentParser
import Foundation
import RingLoop
import RingLoopHID

extension Monitor {
    /// `--server` takes no devices of its own.
    func validateServer() throws {
        guard let server else {
            if requestFocus { throw ValidationError("--request-focus asks an event server: give --server NAME") }
            return
        }
        guard !server.isEmpty, server.utf8.count <= LocalMessagePort.maximumNameLength else {
            throw ValidationError("--server: the name must be 1 to \(LocalMessagePort.maximumNameLength) bytes")
        }
        if !inputs.isEmpty { throw ValidationError("--server NAME reads the server's devices; give no devices or recordings") }
        if raw { throw ValidationError("--raw reads a device's evdev events; a server's client gets HID events") }
        if grab { throw ValidationError("--grab: the server owns the devices (grab them with the server)") }
    }

    /// A client of the event server `name` on the main loop, until a signal or `duration`.
    func monitorServer(_ name: String, signals: SignalWatcher) throws {
        let loop = RingRunLoop.main
        let system = HIDEventSystem(
            configuration: .init(server: name, clientName: "ringloop monitor", requestsFocus: requestFocus), loop: loop)
        let view = LiveView(json: json, quiet: false, filter: try eventFilter())
        view.attach(to: system)
        if gestures { view.attachGestures(to: system) }
        let watchdog = LoopStallWatchdog(loop: loop, threshold: watchSettings.stallThreshold) { report in
            printError("ringloop monitor: \(report)")
        }
        do { try system.start() } catch {
            printError("ringloop monitor: \(error)")
            throw ExitCode(1)
        }
        signals.watch(on: loop) { _ in loop.stop() }
        if let duration {
            loop.add(LoopTimer(after: .milliseconds(Int(duration * 1000))) { _ in loop.stop() }, to: .common)
        }
        loop.add(LoopSource {}, to: .default)
        loop.run(mode: .default, until: .distantFuture)
        system.stop()
        watchdog.stop()
        let summary = view.summary(
            systemDropped: system.statistics.dropped, stalls: (watchdog.stallCount, watchSettings.stallThreshold))
        if json { printError(summary) } else { writeLine(summary) }
        for problem in system.problems { printError("ringloop: \(problem)") }
    }
}
