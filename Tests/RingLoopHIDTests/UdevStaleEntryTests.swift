import Glibc
import RingLoop
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// Whether udevd runs, as a test changes it.
final class UdevRunningFlag: Sendable {
    let value = Mutex(true)
}

@Suite("Waiting for udev: entries of removed devices", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct UdevStaleEntryTests {
    /// udevd stops after the old device was removed (its entry stays: nothing runs the
    /// removal): the new device at the number must not be attached by the old entry.
    @Test("udevd stopped between the removal and the new device: the stale entry is not the new node's")
    func staleEntryAfterUdevdStopped() throws {
        let database = try UdevDatabaseFolder(entryName: { $0.hasSuffix("/event0") || $0.hasSuffix("/event1") ? "c13:64" : nil })
        let running = UdevRunningFlag()
        let policy = DeviceAttachPolicy(
            reading: { database.reading(node: $0) },
            daemon: UdevDaemon(
                isRunning: { running.value.withLock { $0 } }, databaseDirectory: database.path, entryName: database.entryNameOf))
        let recording = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let old = try folder.addDevice(keyboard.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(old.path) })
            try database.writeEntry(node: folder.path + "/event0", properties: ["ID_INPUT": "1", "ID_INPUT_KEYBOARD": "1"])
            let count = { (kind: HIDEvent.Kind) in events().filter { $0.kind == kind }.count }
            #expect(runUntil(loop) { count(.deviceAdded) == 1 })
            #expect(system.devices.map(\.deviceClass) == [.keyboard])
            old.remove()
            #expect(runUntil(loop) { count(.deviceRemoved) == 1 })
            running.value.withLock { $0 = false }
            _ = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { count(.deviceAdded) == 2 })
            #expect(system.devices.map(\.deviceClass) == [.touchscreen], "attached by the stale entry")
        }
    }

    /// udevd runs the new device's `add` while the old entry is still there (its `remove`
    /// was missed): udevd keeps the old entry's `I:` time (device_ensure_usec_initialized
    /// takes the database clone's), so the new device's own entry has the removed
    /// device's time. Its rename must still end the wait.
    @Test("the new device's own entry with the inherited I: time ends the wait")
    func inheritedInitializationTime() throws {
        let database = try UdevDatabaseFolder(entryName: { $0.hasSuffix("/event0") || $0.hasSuffix("/event1") ? "c13:64" : nil })
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(30)) { folder, system, loop, events in
            try database.writeEntry(node: folder.path + "/event0", properties: ["ID_INPUT": "1", "ID_INPUT_KEYBOARD": "1"])
            let old = try folder.addDevice(keyboard.description!)
            let count = { (kind: HIDEvent.Kind) in events().filter { $0.kind == kind }.count }
            #expect(runUntil(loop) { count(.deviceAdded) == 1 })
            old.remove()
            #expect(runUntil(loop) { count(.deviceRemoved) == 1 })
            let oldText = try #require(textOfFile(database.path + "/c13:64"))
            let initialized = try #require(oldText.split(separator: "\n").first { $0.hasPrefix("I:") })
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || count(.deviceAdded) == 2 })
            let text = "\(initialized)\nE:ID_INPUT=1\nE:ID_INPUT_TOUCHSCREEN=1\nG:seat\n"
            let temporary = database.path + "/.#c13:64new"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            _ = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
            #expect(rename(temporary, database.path + "/c13:64") == 0)
            #expect(runUntil(loop, timeout: .seconds(5)) { count(.deviceAdded) == 2 }, "held although its own entry was renamed into place")
        }
    }

    /// The stale entry is found stale, the node waits, udev never writes its own entry:
    /// at the timeout it must not be attached by the removed device's properties.
    @Test("a node attached at the timeout with a stale entry is not classified by it")
    func staleEntryAtTimeout() throws {
        let database = try UdevDatabaseFolder(entryName: { $0.hasSuffix("/event0") || $0.hasSuffix("/event1") ? "c13:64" : nil })
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .milliseconds(300)) { folder, system, loop, events in
            let old = try folder.addDevice(keyboard.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(old.path) })
            try database.writeEntry(node: old.path, properties: ["ID_INPUT": "1", "ID_INPUT_KEYBOARD": "1"])
            let count = { (kind: HIDEvent.Kind) in events().filter { $0.kind == kind }.count }
            #expect(runUntil(loop) { count(.deviceAdded) == 1 })
            old.remove()
            #expect(runUntil(loop) { count(.deviceRemoved) == 1 })
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) })
            #expect(runUntil(loop) { count(.deviceAdded) == 2 })
            #expect(system.devices.map(\.deviceClass) == [.touchscreen], "attached at the timeout by the stale entry")
        }
    }

    /// The old device's removal and the new device's creation are lost to an inotify queue
    /// overflow: the rescan must still not attach the new device by the old entry.
    @Test("overflow: the removed device's entry is not the new node's after the rescan")
    func staleEntryAcrossOverflow() throws {
        let limitText = try #require(textOfFile("/proc/sys/fs/inotify/max_queued_events"))
        let limit = try #require(Int(limitText.split(separator: "\n").first ?? ""))
        let database = try UdevDatabaseFolder(entryName: {
            $0.hasSuffix("/event0") || $0.hasSuffix("/event2") ? "c13:64" : ($0.hasSuffix("/event1") ? "c13:99" : nil)
        })
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let old = try folder.addDevice(keyboard.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(old.path) })
            try database.writeEntry(node: old.path, properties: ["ID_INPUT": "1", "ID_INPUT_KEYBOARD": "1"])
            let count = { (kind: HIDEvent.Kind) in events().filter { $0.kind == kind }.count }
            #expect(runUntil(loop) { count(.deviceAdded) == 1 })
            let waiting = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(waiting.path) })
            for index in 0...limit {
                let fd = open(database.path + "/other-\(index)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
                close(fd)
            }
            old.remove()
            let node = try folder.addDevice(recording.description!)
            #expect(node.path.hasSuffix("/event2"))
            #expect(runUntil(loop) { count(.deviceRemoved) == 1 })
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || count(.deviceAdded) == 2 })
            #expect(TestLog.lines(containing: "\(folder.path): inotify's queue overflowed").count == 1)
            #expect(count(.deviceAdded) == 1, "attached after the rescan as \(system.devices.map(\.deviceClass))")
        }
    }
}
