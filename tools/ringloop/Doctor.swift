import ArgumentParser
import Dispatch
import RingLoop
import RingLoopEvdev
import RingLoopHID
import RingLoopToolSupport
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What this machine gives RingLoop: io_uring, the main queue, input and virtual devices.
struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what this machine offers RingLoop (io_uring, main queue, input, FUSE, uinput).",
        discussion: """
            Runs each check for real: creates the main thread's loop, runs it until work
            sent with DispatchQueue.main.async and a @MainActor task has run, and probes
            the device nodes. Exits 0 when the loop works, 1 otherwise.

            Examples:
              ringloop doctor
              ringloop doctor --json
            """
    )

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(
        name: .customLong("device-config"),
        help: ArgumentHelp("A per-device settings file whose settings the device list shows beside udev's.", valueName: "file"),
        completion: .file())
    var deviceConfig: String?

    struct Report {
        var kernel: String
        var waitCore: String
        var waitCoreError: String?
        var mainQueueServiced: Bool
        var mainActorServiced: Bool
        /// The order in which one pass of the main loop ran a job, a version-0 source, a
        /// due timer, a main-queue block and a `@MainActor` task.
        var mainLoopOrder: [String]
        var inputDevices: Int
        var inputDirectory: String
        var fuse: String
        var uinput: String
        var cpuIdle: String
        /// How the input chain reads devices here: `ring` (a multishot read in the loop's
        /// ring, no system call per frame) or `poll` (poll, then read), with the reason.
        var deviceReads: String
        /// Each readable node's settings, each with its source (udev's properties, the
        /// settings file), by node path.
        var deviceSettings: [(node: String, name: String, lines: [String])] = []

        /// The report as one JSON object (keys as the properties are named).
        var json: JSON {
            var object: [String: JSON] = [
                "kernel": .string(kernel), "waitCore": .string(waitCore),
                "mainQueueServiced": .bool(mainQueueServiced), "mainActorServiced": .bool(mainActorServiced),
                "mainLoopOrder": .array(mainLoopOrder.map(JSON.string)), "inputDevices": .int(inputDevices),
                "inputDirectory": .string(inputDirectory), "fuse": .string(fuse), "uinput": .string(uinput),
                "cpuIdle": .string(cpuIdle), "deviceReads": .string(deviceReads),
                "deviceSettings": .array(
                    deviceSettings.map {
                        .object(["node": .string($0.node), "name": .string($0.name), "settings": .array($0.lines.map(JSON.string))])
                    }),
            ]
            // Absent when there is none, as before.
            if let waitCoreError { object["waitCoreError"] = .string(waitCoreError) }
            return .object(object)
        }
    }

    func run() throws {
        let kernel = kernelRelease()

        let loop = RingRunLoop.main
        var waitCoreError: String?
        do { try loop.prepare() } catch { waitCoreError = "\(error)" }

        let (dispatchRan, actorRan) = Self.checkMainQueue(loop)
        let deviceReads = Self.probeReadStream(loop)
        let order = Self.mainLoopOrder(loop)

        let inputDirectory = "/dev/input"
        let inputDevices =
            folderEntries(inputDirectory).filter { $0.hasPrefix("event") && access("\(inputDirectory)/\($0)", R_OK) == 0 }.count

        var resolver = DeviceSettingsResolver()
        if let deviceConfig {
            try Failure.reporting("doctor") { resolver.files = [try DeviceSettingsStore.loading(deviceConfig, command: "doctor").1] }
        }
        var report = Report(
            kernel: kernel,
            waitCore: loop.waitCoreDescription,
            waitCoreError: waitCoreError,
            mainQueueServiced: dispatchRan,
            mainActorServiced: actorRan,
            mainLoopOrder: order,
            inputDevices: inputDevices,
            inputDirectory: inputDirectory,
            fuse: Self.nodeStatus("/dev/fuse"),
            uinput: Self.nodeStatus("/dev/uinput"),
            cpuIdle: IdleCPUSetting.current().summary,
            deviceReads: deviceReads
        )
        report.deviceSettings = Self.deviceSettings(in: inputDirectory, resolver: resolver)
        if json {
            writeLine(report.json.text())
        } else {
            writeLine("kernel            \(report.kernel)")
            writeLine("wait core         \(report.waitCore)")
            if let waitCoreError { writeLine("wait core error   \(waitCoreError)") }
            writeLine("main queue        \(dispatchRan ? "serviced by RingRunLoop.main" : "NOT serviced")")
            writeLine("@MainActor        \(actorRan ? "serviced by RingRunLoop.main" : "NOT serviced")")
            writeLine("main loop order   \(order.joined(separator: " → "))")
            writeLine("input devices     \(inputDevices) readable in \(inputDirectory)")
            writeLine("FUSE              \(report.fuse)")
            writeLine("uinput            \(report.uinput)")
            writeLine("CPU idle          \(report.cpuIdle)")
            writeLine("device reads      \(report.deviceReads)")
            writeLine("udev              \(UdevProperties.isAvailable ? "libudev loaded" : "libudev absent: no udev properties")")
            for device in report.deviceSettings {
                writeLine("device settings   \(device.node) (\(Format.shown(device.name))):")
                for line in device.lines { writeLine("                    \(Format.shown(line))") }
            }
        }
        if let failure = StandardOutput.failure {
            if failure != .outputClosed { printError("ringloop doctor: \(failure.message)") }
            throw ExitCode(failure.exitCode)
        }
        if waitCoreError != nil || !dispatchRan || !actorRan { throw ExitCode(1) }
    }

    /// Whether the ring reads a pollable descriptor multishot (IORING_OP_READ_MULTISHOT):
    /// a record written to a pipe, read back through `LoopIOChannel.readStream`.
    static func probeReadStream(_ loop: RingRunLoop) -> String {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return "poll (no pipe to probe with: errno \(errno))" }
        defer { close(ends[1]) }
        let outcome = LoopBound<IOCompletion.Outcome?>(nil, loop: loop)
        let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: ends[0]), loop: loop) { _, completion in
            if outcome.value == nil { outcome.value = completion.outcome }
        }
        loop.add(channel.source, to: .common)
        defer {
            channel.close()
            channel.source.invalidate()
        }
        var record = [UInt8](repeating: 7, count: 24)
        _ = write(ends[1], &record, record.count)
        do { try channel.readStream(bufferCount: 1, bufferSize: 64) } catch { return "poll (\(error))" }
        let limit = MonotonicInstant.now + .seconds(2)
        while outcome.value == nil && MonotonicInstant.now < limit {
            loop.run(mode: .default, for: .milliseconds(20), returnAfterSourceHandled: true)
        }
        switch outcome.value {
        case .bytes(let bytes) where bytes.count == 24:
            return
                "ring for evdev nodes and stream devices (multishot read into provided buffers; no system call per frame), poll then read for virtual (FUSE) nodes"
        case .failed(let failure): return "poll then read (the ring cannot read multishot here: \(failure))"
        case .some(let other): return "poll then read (the probe read \(other))"
        case nil: return "poll then read (the probe's read never completed)"
        }
    }

    /// Runs the main loop until a `DispatchQueue.main.async` block and a `@MainActor`
    /// task have both run (or 5 s pass).
    static func checkMainQueue(_ loop: RingRunLoop) -> (dispatch: Bool, actor: Bool) {
        final class Flags: @unchecked Sendable {
            // @unchecked: set on the main thread by the block and task, read there after.
            var dispatch = false
            var actor = false
        }
        let flags = Flags()
        // Each counts only if it ran on the main thread, inside the loop's run.
        DispatchQueue.main.async {
            flags.dispatch = RingRunLoop.main.isOnLoopThread && RingRunLoop.main.currentMode != nil
            if flags.actor { RingRunLoop.main.stop() }
        }
        Task { @MainActor in
            flags.actor = RingRunLoop.main.isOnLoopThread && RingRunLoop.main.currentMode != nil
            if flags.dispatch { RingRunLoop.main.stop() }
        }
        let deadline = MonotonicInstant.now + .seconds(5)
        while !(flags.dispatch && flags.actor), MonotonicInstant.now < deadline {
            loop.run(mode: .default, until: deadline)
        }
        return (flags.dispatch, flags.actor)
    }

    /// What the main loop runs, in order, when a job, a signalled source, a due timer, a
    /// `DispatchQueue.main` block and a `@MainActor` task all wait: the job in the blocks
    /// phase, the source, the timer, then the main queue (block, then task, as queued)
    /// among the port sources.
    static func mainLoopOrder(_ loop: RingRunLoop) -> [String] {
        let trace = Mutex<[String]>([])
        let record: @Sendable (String) -> Void = { name in trace.withLock { $0.append(name) } }
        let source = LoopSource { record("source") }
        loop.add(source, to: .default)
        loop.add(LoopTimer(fireDate: .now) { _ in record("timer") }, to: .default)
        DispatchQueue.main.async { record("dispatch") }
        Task { @MainActor in record("mainActor") }
        Task(executorPreference: loop) { record("job") }
        source.signal()
        let deadline = MonotonicInstant.now + .seconds(5)
        while trace.withLock({ $0.count }) < 5, MonotonicInstant.now < deadline {
            loop.run(mode: .default, until: deadline, returnAfterSourceHandled: true)
        }
        source.invalidate()
        return trace.withLock { $0 }
    }

    /// Each readable node of `directory` with the settings it would get, each with its
    /// source ("calibration = … (from udev's LIBINPUT_CALIBRATION_MATRIX)").
    static func deviceSettings(in directory: String, resolver: DeviceSettingsResolver) -> [(node: String, name: String, lines: [String])] {
        let nodes = folderEntries(directory).filter { $0.hasPrefix("event") }
            .sorted { (Int($0.dropFirst(5)) ?? 0, $0) < (Int($1.dropFirst(5)) ?? 0, $1) }
        return nodes.compactMap { name in
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            guard let description = try? InputDeviceDescription(fileDescriptor: fd) else { return nil }
            let lines = Describe.settingsLines(
                HIDDeviceInfo(description: description), properties: UdevProperties.of(node: path), resolver: resolver,
                showScreen: false)
            return (path, description.name, lines)
        }
    }

    static func nodeStatus(_ path: String) -> String {
        if access(path, F_OK) != 0 { return "absent (\(path))" }
        if access(path, R_OK | W_OK) != 0 { return "present, not accessible (\(path): needs root or group rights)" }
        return "available (\(path))"
    }
}
