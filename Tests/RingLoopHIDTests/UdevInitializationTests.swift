import Glibc
import RingLoop
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// A folder standing for udev's database (`/run/udev/data`), in udevd's own format: one
/// file per device named `c13:N`, lines `I:` (when it was initialized) and `E:KEY=value`,
/// written to a temporary name and renamed into place, as udevd writes it. libudev reads
/// `/run/udev/data` only, so the tests' reader parses this folder's entries for the
/// properties (the attach policy's injectable reader), and the folder itself is what the
/// monitor watches for the wake-up.
final class UdevDatabaseFolder: Sendable {
    let path = "/tmp/ringloop-udev-data-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    /// udev reads per node path.
    let reads = Mutex<[String: Int]>([:])
    /// The name of a node's entry (``entryName(node:)`` unless a test numbers its nodes as
    /// a kernel reusing a number would).
    let entryNameOf: @Sendable (String) -> String?

    init(entryName: @escaping @Sendable (String) -> String? = { UdevDatabaseFolder.entryName(node: $0) }) throws {
        entryNameOf = entryName
        guard mkdir(path, 0o755) == 0 else { throw UdevFolderError(path: path, errno: errno) }
    }

    deinit {
        for entry in (try? Self.names(in: path)) ?? [] { unlink(path + "/" + entry) }
        rmdir(path)
    }

    /// The character device a FUSE node stands for: `eventN` is 13:(64 + N), as the kernel
    /// numbers evdev nodes.
    static func entryName(node path: String) -> String? {
        guard let name = path.split(separator: "/").last, name.hasPrefix("event"), let number = Int(name.dropFirst(5)) else {
            return nil
        }
        return "c13:\(64 + number)"
    }

    /// What libudev would say of the node at `path`: the entry's `E:` properties, and
    /// initialized once the entry is there, at its `I:` time (`CLOCK_MONOTONIC`
    /// microseconds, as udevd writes it and `udev_device_get_usec_since_initialized`
    /// counts from).
    func reading(node path: String) -> UdevReading {
        reads.withLock { $0[path, default: 0] += 1 }
        guard let entry = entryNameOf(path), let text = textOfFile(self.path + "/" + entry) else {
            return ([:], false, nil)
        }
        var properties: [String: String] = [:]
        var initializedAt: MonotonicInstant?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("E:") {
                let pair = line.dropFirst(2).split(separator: "=", maxSplits: 1)
                if pair.count == 2 { properties[String(pair[0])] = String(pair[1]) }
            } else if line.hasPrefix("I:"), let microseconds = UInt64(line.dropFirst(2)) {
                initializedAt = MonotonicInstant(nanoseconds: microseconds * 1000)
            }
        }
        return (properties, true, initializedAt)
    }

    /// The `I:` line udevd writes: when it initialized the device, now.
    static var initializedNow: String { "I:\(MonotonicInstant.now.nanoseconds / 1000)\n" }

    /// Writes the entry of the node at `node` as udevd does: a temporary file, renamed;
    /// initialized now.
    func writeEntry(node: String, properties: [String: String]) throws {
        let entry = try #require(entryNameOf(node))
        let text = Self.initializedNow + properties.sorted { $0.key < $1.key }.map { "E:\($0.key)=\($0.value)\n" }.joined() + "G:seat\n"
        let temporary = path + "/.#" + entry + "XXXXXX"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UdevFolderError(path: temporary, errno: errno) }
        let written = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
        close(fd)
        #expect(written == text.utf8.count)
        guard rename(temporary, path + "/" + entry) == 0 else { throw UdevFolderError(path: temporary, errno: errno) }
    }

    /// A policy reading this folder, udevd running or not.
    func policy(daemonRunning: Bool) -> DeviceAttachPolicy {
        DeviceAttachPolicy(
            reading: { [self] in reading(node: $0) },
            daemon: UdevDaemon(isRunning: { daemonRunning }, databaseDirectory: path, entryName: entryNameOf))
    }

    /// The folder's entries (`directoryEntries` reads each name only to its end: a
    /// `dirent` is allocated as long as its name, not as its 256-byte array).
    private static func names(in folder: String) throws -> [String] {
        (directoryEntries(folder) ?? []).map(\.name).filter { $0 != "." && $0 != ".." }
    }
}

struct UdevFolderError: Error {
    var path: String
    var errno: Int32
}

/// While udevd runs, a new node that udev has not initialized yet is not attached until
/// udev's database has its entry (or the wait times out), as libinput adds a device only on
/// udev's `add` event; without udevd nothing waits.
@Suite("Waiting for udev to initialize a new node", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct UdevInitializationTests {
    /// A system over an empty FUSE folder, reading udev through `policy`; `body` drives it
    /// with the events the handlers saw.
    func withSystem(
        shape: HIDEventSystem.Shape = .clientLoop, policy: DeviceAttachPolicy, timeout: Duration,
        _ body: @escaping (FUSEDeviceFolder, HIDEventSystem, RingRunLoop, @escaping () -> [HIDEvent]) throws -> Void
    ) throws {
        try onFreshThreadWithDeviceFolder { path, folder, loop in
            let input = HIDEventSystem.DeviceFolder(path: path, shape: shape, udevInitializationTimeout: timeout)
            let system = HIDEventSystem(configuration: .init(input: .devices(input)), loop: loop, attachPolicy: policy)
            system.setScreens(DeviceSettingsResolver(screens: [try ScreenDescription(parsing: "1920x1080")]))
            var events: [HIDEvent] = []
            system.addHandler { event in
                events.append(event)
                return .pass
            }
            try system.start()
            defer { system.stop() }
            try body(folder, system, loop, { events })
        }
    }

    @Test(
        "udevd running: a touchscreen is attached only once udev's entry is renamed into place, and maps by that entry's calibration",
        arguments: HIDEventSystem.Shape.allCases)
    func waitsForTheEntry(shape: HIDEventSystem.Shape) throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let calibration = "0 -1 1 1 0 0"
        try withSystem(shape: shape, policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            let added = { events().contains { $0.kind == .deviceAdded } }
            // Until the monitor has seen the node: it waits, or (before the fix) attached.
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || added() })
            #expect(!added() && system.devices.isEmpty, "attached before udev initialized it")
            #expect(policy.nodesWaitingForUdev == [node.path])
            try database.writeEntry(
                node: node.path,
                properties: ["ID_INPUT": "1", "ID_INPUT_TOUCHSCREEN": "1", DeviceIdentity.calibrationProperty: calibration])
            #expect(runUntil(loop) { added() })
            let id = try #require(system.devices.first?.id)
            #expect(runUntil(loop) { system.screenMapping(for: id) != nil })
            #expect(system.screenMapping(for: id)?.calibration == (try CalibrationMatrix(parsing: calibration)))
            #expect(policy.nodesWaitingForUdev.isEmpty)
            // The read that found it not initialized, and the attach's one read, kept by the stages.
            #expect(database.reads.withLock { $0[node.path] } == 2, "\(database.reads.withLock { $0 })")
        }
    }

    /// A writer that writes the entry in place (the booted-kernel checks' own, where no
    /// udevd runs) creates it empty first; libudev would count the empty entry as
    /// initialized, so only its close counts.
    @Test("udevd running: an entry written in place counts once it is closed, not when it is created empty")
    func entryWrittenInPlace() throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let calibration = "0 -1 1 1 0 0"
        try withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            let added = { events().contains { $0.kind == .deviceAdded } }
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || added() })
            let entry = try #require(UdevDatabaseFolder.entryName(node: node.path))
            let fd = open(database.path + "/" + entry, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            // The creation reaches the monitor before the text does. A second node, made
            // after it, comes through the same inotify queue: once that one waits, the
            // monitor has had the creation.
            var text = UdevDatabaseFolder.initializedNow + "E:ID_INPUT=1\nE:ID_INPUT_TOUCHSCREEN=1\n"
            let readsBefore = database.reads.withLock { $0[node.path] ?? 0 }
            let marker = try folder.addDevice(try loadRecording("keyboard").description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(marker.path) || events().count > 1 })
            #expect(!added(), "attached on the empty entry's creation")
            #expect(database.reads.withLock { $0[node.path] ?? 0 } == readsBefore, "the creation woke the wait")
            text += "E:\(DeviceIdentity.calibrationProperty)=\(calibration)\n"
            let written = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
            #expect(written == text.utf8.count)
            close(fd)
            #expect(runUntil(loop) { added() })
            let id = try #require(system.devices.first?.id)
            #expect(runUntil(loop) { system.screenMapping(for: id) != nil })
            #expect(system.screenMapping(for: id)?.calibration == (try CalibrationMatrix(parsing: calibration)))
        }
    }

    @Test("udevd running, no entry ever: the node is attached after the timeout, with a warning naming it")
    func attachesAfterTheTimeout() throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let timeout = Duration.milliseconds(300)
        try withSystem(policy: policy, timeout: timeout) { folder, system, loop, events in
            // Before the node exists: its wait cannot have started earlier.
            let nodeAdded = MonotonicInstant.now
            let node = try folder.addDevice(recording.description!)
            let added = { events().contains { $0.kind == .deviceAdded } }
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || added() })
            #expect(!added(), "attached before udev initialized it")
            #expect(runUntil(loop) { added() })
            #expect(MonotonicInstant.now - nodeAdded >= timeout, "attached before the timeout")
            #expect(system.devices.map(\.path) == [node.path])
            #expect(policy.nodesWaitingForUdev.isEmpty)
            let warnings = TestLog.lines(containing: "\(node.path): udev has not initialized it").filter { $0.level == .warning }
            #expect(warnings.count == 1, "\(warnings)")
        }
    }

    @Test("udevd running: a node removed while it waits is dropped silently; its timer never attaches it")
    func removedWhileWaiting() throws {
        let recording = try loadRecording("keyboard")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let timeout = Duration.milliseconds(200)
        try withSystem(policy: policy, timeout: timeout) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || !events().isEmpty })
            node.remove()
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.isEmpty })
            // A second node, added after the first was removed, waits with the same timeout:
            // its timer fires after the first node's would have, so once it is attached the
            // first node's timer, had it stayed, would have attached that node too.
            let later = try folder.addDevice(recording.description!)
            #expect(later.path != node.path)
            #expect(runUntil(loop) { events().contains { $0.kind == .deviceAdded } })
            #expect(system.devices.map(\.path) == [later.path])
            #expect(events().filter { $0.kind == .deviceAdded }.count == 1, "\(events().map(\.kind))")
            #expect(TestLog.lines(containing: "\(node.path): udev has not initialized it").isEmpty)
        }
    }

    /// The watch of udev's database is shared by the nodes that wait: one released must not
    /// take it off while another still waits.
    @Test("udevd running: two nodes wait; the first one's entry attaches it, and the other still attaches by its own")
    func twoNodesWaitOneReleased() throws {
        let recording = try loadRecording("touchscreen-multitouch")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        try withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let first = try folder.addDevice(recording.description!)
            let second = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev == [first.path, second.path] || !events().isEmpty })
            #expect(events().isEmpty, "attached before udev initialized it")
            let touchscreen = ["ID_INPUT": "1", "ID_INPUT_TOUCHSCREEN": "1"]
            try database.writeEntry(node: first.path, properties: touchscreen)
            #expect(runUntil(loop) { system.devices.map(\.path) == [first.path] })
            #expect(policy.nodesWaitingForUdev == [second.path])
            try database.writeEntry(node: second.path, properties: touchscreen)
            #expect(runUntil(loop) { system.devices.count == 2 })
            #expect(Set(system.devices.map(\.path)) == [first.path, second.path])
            #expect(policy.nodesWaitingForUdev.isEmpty)
            #expect(TestLog.lines(containing: "udev has not initialized it").filter { $0.message.contains(folder.path) }.isEmpty)
        }
    }

    @Test("udevd not running: a node udev has not initialized is attached at once, as before")
    func noDaemonNoWait() throws {
        let recording = try loadRecording("keyboard")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: false)
        try withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            var waited = false
            #expect(
                runUntil(loop) {
                    waited = waited || !policy.nodesWaitingForUdev.isEmpty
                    return events().contains { $0.kind == .deviceAdded }
                })
            #expect(!waited)
            #expect(system.devices.map(\.path) == [node.path])
        }
    }
}
