import Glibc
import RingLoop
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// The wait for udev where it can go wrong: a node attached after the timeout is not held
/// again when new settings attach it again, an entry udev's database kept from the device
/// that had the node's number before does not count as the new node's, and an entry's
/// rename lost to an inotify queue overflow still ends the wait.
@Suite("Waiting for udev: timed-out nodes and stale entries", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct UdevWaitEdgeTests {
    /// A node attached after the timeout (udev never initialized it) is decided at once
    /// when new settings detach it and attach it again: no new wait, timeout or warning.
    @Test("udevd running: a node attached after the timeout is not held again when the settings change")
    func timedOutNodeNotHeldAgain() throws {
        let recording = try loadRecording("keyboard")
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        try UdevInitializationTests().withSystem(policy: policy, timeout: .milliseconds(300)) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            #expect(runUntil(loop) { system.devices.map(\.path) == [node.path] })
            let ignoring = DeviceSettingsFile(text: "version = 1\n[match class=keyboard]\nignore = yes\n", path: "kiosk.conf")
            system.setScreens(DeviceSettingsResolver(files: [ignoring]))
            #expect(system.devices.isEmpty)
            #expect(policy.nodesWaitingForUdev.isEmpty, "the ignored node is held for udev again")
            #expect(system.attachPolicy.ignoredNodes.keys.contains(node.path), "not decided at once")
            system.setScreens(nil)
            #expect(policy.nodesWaitingForUdev.isEmpty, "the node is held for udev again")
            #expect(system.devices.map(\.path) == [node.path], "not attached again at once")
            let warnings = TestLog.lines(containing: "\(node.path): udev has not initialized it").filter { $0.level == .warning }
            #expect(warnings.count == 1, "\(warnings)")
        }
    }

    /// The entry of the device that had the node's number before (removed; udevd has not
    /// run its `remove` yet, which deletes the entry) is still there when a new device
    /// comes at the node: the node waits for its own entry instead of attaching by the old
    /// device's properties, as libinput, which adds on udev's `add` event, hears the
    /// `remove` first and never reads the old entry for the new device.
    @Test("udevd running: a stale entry of the number's previous device does not attach a new node by its properties")
    func staleEntry() throws {
        // The kernel gives the new device the number the old one freed; FUSE folders
        // number their nodes on: both nodes stand for c13:64 here.
        let database = try UdevDatabaseFolder(entryName: { $0.hasSuffix("/event0") || $0.hasSuffix("/event1") ? "c13:64" : nil })
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        let keyboard = try loadRecording("keyboard")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            // The number's previous device, a keyboard, attached by its entry, then
            // unplugged: its entry stays until udevd runs the removal.
            try database.writeEntry(node: folder.path + "/event0", properties: ["ID_INPUT": "1", "ID_INPUT_KEYBOARD": "1"])
            let old = try folder.addDevice(keyboard.description!)
            #expect(old.path == folder.path + "/event0")
            let count = { (kind: HIDEvent.Kind) in events().filter { $0.kind == kind }.count }
            #expect(runUntil(loop) { count(.deviceAdded) == 1 })
            #expect(system.devices.map(\.deviceClass) == [.keyboard])
            old.remove()
            #expect(runUntil(loop) { count(.deviceRemoved) == 1 })
            let node = try folder.addDevice(recording.description!)
            let added = { count(.deviceAdded) == 2 }
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || added() })
            #expect(!added(), "attached by the stale entry as \(system.devices.map(\.deviceClass))")
            // udevd has run the new device's rules: its own entry, renamed into place.
            try database.writeEntry(node: node.path, properties: ["ID_INPUT": "1", "ID_INPUT_TOUCHSCREEN": "1"])
            #expect(runUntil(loop) { added() })
            #expect(system.devices.map(\.deviceClass) == [.touchscreen])
            #expect(policy.nodesWaitingForUdev.isEmpty)
        }
    }

    /// udevd can run a new device's rules before the monitor reads the node's creation (a
    /// loop busy elsewhere): an entry written before the node was seen is the node's own,
    /// not a stale one, when no device was removed from the node.
    @Test("udevd running: an entry written before the monitor saw the node attaches it at once")
    func entryBeforeTheMonitorSawTheNode() throws {
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            // The loop does not run between these: the monitor reads the creation after.
            let node = try folder.addDevice(recording.description!)
            try database.writeEntry(node: node.path, properties: ["ID_INPUT": "1", "ID_INPUT_TOUCHSCREEN": "1"])
            let added = { events().contains { $0.kind == .deviceAdded } }
            #expect(runUntil(loop) { added() || policy.nodesWaitingForUdev.contains(node.path) })
            #expect(added(), "held although its own entry is there")
            #expect(system.devices.map(\.deviceClass) == [.touchscreen])
            let warnings = TestLog.lines(containing: "\(node.path): udev has not initialized it")
            #expect(warnings.isEmpty, "\(warnings)")
        }
    }

    /// inotify's queue holds `max_queued_events` events; past that it drops them and queues
    /// `IN_Q_OVERFLOW`. While a node waits, that many entries closed in udev's database
    /// folder (each a distinct name, so the kernel merges none) fill the queue, and the
    /// rename of the node's own entry is dropped: the monitor reads the folder again and
    /// the node reads udev again.
    @Test("udevd running: an entry whose rename was lost to an inotify queue overflow still ends the wait")
    func entryLostToOverflow() throws {
        let limitText = try #require(textOfFile("/proc/sys/fs/inotify/max_queued_events"))
        let limit = try #require(Int(limitText.split(separator: "\n").first ?? ""))
        let database = try UdevDatabaseFolder()
        let policy = database.policy(daemonRunning: true)
        let recording = try loadRecording("touchscreen-multitouch")
        try UdevInitializationTests().withSystem(policy: policy, timeout: .seconds(60)) { folder, system, loop, events in
            let node = try folder.addDevice(recording.description!)
            let added = { events().contains { $0.kind == .deviceAdded } }
            #expect(runUntil(loop) { policy.nodesWaitingForUdev.contains(node.path) || added() })
            #expect(!added(), "attached before udev initialized it")
            // The loop does not run here: nothing reads the queue until it is full.
            for index in 0...limit {
                let fd = open(database.path + "/other-\(index)", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
                #expect(fd >= 0)
                close(fd)
            }
            try database.writeEntry(node: node.path, properties: ["ID_INPUT": "1", "ID_INPUT_TOUCHSCREEN": "1"])
            #expect(runUntil(loop) { added() })
            #expect(system.devices.map(\.deviceClass) == [.touchscreen])
            #expect(policy.nodesWaitingForUdev.isEmpty)
            #expect(TestLog.lines(containing: "\(folder.path): inotify's queue overflowed").count == 1)
        }
    }
}
