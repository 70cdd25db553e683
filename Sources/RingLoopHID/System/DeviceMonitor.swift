import Logging
import RingLoop
import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Finds devices in a folder and follows it: enumerates `event*` nodes, watches the
/// folder with inotify (read through the ring), opens, describes and classifies what
/// appears, retries nodes that cannot be opened yet (permissions settle after udev
/// creates them), and detaches what disappears.
///
/// While udevd runs, a node udev has not initialized yet (devtmpfs makes the node before
/// udevd has run its rules on it: its `ID_INPUT_*`, `LIBINPUT_CALIBRATION_MATRIX`,
/// `MOUSE_DPI`… are not there yet) is not attached: it waits until udevd writes its entry
/// in udev's database (`/run/udev/data/c13:67`, by a rename), watched with inotify on the
/// same descriptor as the folder, then attaches with the read that found it initialized,
/// as libinput adds a device only once udev has initialized it. A node udev has not
/// initialized within ``Settings/udevInitializationTimeout`` is attached anyway, with a
/// warning naming it, and does not wait again until it is removed (new settings that
/// detach and attach it again decide at once); one removed while it waits is dropped
/// without a word. An entry with the initialization time of the device removed from the
/// node is that device's (udevd has not run its `remove` yet): the new device at the node
/// waits for its own entry's rename. Where no
/// udevd runs (containers, the booted-kernel stage, FUSE virtual devices, which udev
/// never knows), nothing waits.
///
/// Thread rules: lives on one loop's thread (the reading loop).
final class DeviceMonitor {
    struct Settings {
        /// The folder to watch; `nil`: none (only streams are attached).
        var directory: String?
        var grab: Bool
        var openAttempts: Int
        var retryInterval: Duration
        var nodeNames: Set<String>?
        var readPath: DeviceReadPath = .ring
        /// Counts the readers' `read(2)` calls.
        var readCalls = ReadCallCounter()
        /// Whether each device is attached, and as what class (its settings' `ignore` and
        /// `class`).
        var attachPolicy = DeviceAttachPolicy()
        /// The longest a node waits for udev to initialize it, while udevd runs, before it
        /// is attached anyway.
        var udevInitializationTimeout: Duration = .seconds(2)
    }

    /// A node that waits for udev to initialize it: the name of its entry in udev's
    /// database, and the timer that ends the wait.
    private struct UdevWait {
        let entry: String
        let timer: LoopTimer
    }

    private let settings: Settings
    private let loop: RingRunLoop
    private let sink: (HIDEvent) -> Void
    private let onError: (HIDError) -> Void
    private let onDevicesChanged: ([HIDDeviceInfo]) -> Void
    private var inotifyFD: Int32 = -1
    private var inotifySource: LoopPortSource?
    private var readers: [String: DeviceReader] = [:]
    /// Each attached node's description as its capabilities gave it, before its settings'
    /// class: what ``reconsider()`` decides again by.
    private var described: [String: HIDDeviceInfo] = [:]
    /// The nodes left alone by their settings (`ignore`), not opened again until they
    /// change, disappear or the settings change.
    private var ignored: Set<String> = []
    private var nextID: UInt32 = 1
    private var pendingRetries: [String: (attempts: Int, timer: LoopTimer)] = [:]
    /// The nodes waiting for udev, by name.
    private var udevWaits: [String: UdevWait] = [:]
    /// The nodes whose wait timed out, until they are removed: they do not wait again
    /// (when an open is retried, or new settings attach them again).
    private var udevTimedOut: Set<String> = []
    /// The udev entry of the device decided at each node (attached or left alone), by node
    /// name: the entry's name and when udev initialized the device (its `I:` time), until
    /// the node is removed.
    private var decidedEntries: [String: (entry: String, initializedAt: MonotonicInstant)] = [:]
    /// When udev initialized the device removed from a node, by its entry's name, until a
    /// device is decided with that entry again: while udevd has not run the removal, the
    /// entry is still there, and a new device with the number reads it as initialized.
    private var goneEntryTimes: [String: MonotonicInstant] = [:]
    /// Whether the monitor has warned that udev's database cannot be watched (once).
    private var warnedUdevDatabaseUnwatchable = false
    /// The inotify watch of udev's database folder while a node waits (or is being
    /// considered), or -1.
    private var udevDatabaseWatch: Int32 = -1
    static let logger = Logger(label: "RingLoop.HID")

    init(
        settings: Settings, loop: RingRunLoop, sink: @escaping (HIDEvent) -> Void, onError: @escaping (HIDError) -> Void,
        onDevicesChanged: @escaping ([HIDDeviceInfo]) -> Void
    ) {
        self.settings = settings
        self.loop = loop
        self.sink = sink
        self.onError = onError
        self.onDevicesChanged = onDevicesChanged
    }

    deinit {
        if inotifyFD >= 0 { close(inotifyFD) }
    }

    /// Starts watching (before enumerating, so nothing appears unseen in between).
    func start() throws(HIDError) {
        guard let directory = settings.directory else { return }
        inotifyFD = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotifyFD >= 0 else { throw .directory(path: directory, errno: Errno(rawValue: errno)) }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF)
        guard inotify_add_watch(inotifyFD, directory, mask) >= 0 else {
            let error = errno
            close(inotifyFD)
            inotifyFD = -1
            throw .directory(path: directory, errno: Errno(rawValue: error))
        }
        let monitor = UnownedLoopReference(self, loop: loop)
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: inotifyFD)) { _ in
            monitor.value.directoryChanged()
        }
        inotifySource = source
        loop.add(source, to: .common)
        for name in Self.eventNodes(in: directory) { consider(name) }
    }

    /// Detaches every device and stops watching.
    func stop() {
        inotifySource?.invalidate()
        inotifySource = nil
        for (_, retry) in pendingRetries { retry.timer.invalidate() }
        pendingRetries = [:]
        for name in Array(udevWaits.keys) { endUdevWait(name) }
        udevTimedOut = []
        decidedEntries = [:]
        goneEntryTimes = [:]
        udevDatabaseWatch = -1  // closing the descriptor below takes the watch off
        let detaching = Array(readers.values)
        readers = [:]
        described = [:]
        for name in ignored { settings.attachPolicy.noteIgnored(nodePath(name), reason: nil) }
        ignored = []
        onDevicesChanged([])
        for reader in detaching { reader.detach() }
        if inotifyFD >= 0 {
            close(inotifyFD)
            inotifyFD = -1
        }
    }

    /// Raw events read by every reader so far, detached ones included.
    var totalEventsRead: Int { detachedEventsRead + readers.values.reduce(0) { $0 + $1.eventsRead } }
    private var detachedEventsRead = 0

    /// Whether input read or readable has not yet reached the sink: a completion of the
    /// loop not yet handled (a ring read may hold a device's bytes there, which `poll(2)`
    /// then finds gone: ``RingRunLoop/hasUnhandledCompletions``), or a device that holds
    /// input its reader has not taken (``DeviceReader/hasUnreadInput``). The loop's thread.
    var hasInputNotYetDecoded: Bool {
        loop.hasUnhandledCompletions || readers.values.contains { $0.hasUnreadInput }
    }

    /// Reads, on the poll path, what every device holds that its reader has not taken
    /// (``DeviceReader/readIfLeftUnread()``): what a delivery notice waits for is read now,
    /// not when a readiness event comes. The loop's thread.
    func readInputLeftUnread() {
        for reader in readers.values { _ = reader.readIfLeftUnread() }
    }

    var devices: [HIDDeviceInfo] { readers.values.map(\.info).sorted { $0.id.rawValue < $1.id.rawValue } }

    func reader(for id: HIDDeviceID) -> DeviceReader? { readers.values.first { $0.info.id == id } }

    static func eventNodes(in directory: String) -> [String] { eventNodesIfReadable(in: directory) ?? [] }

    /// The `event*` nodes of `directory` in numeric order (event2 before event10); `nil`
    /// when the folder cannot be read.
    static func eventNodesIfReadable(in directory: String) -> [String]? {
        guard let entries = directoryEntries(directory) else { return nil }
        let names = entries.map(\.name).filter { $0.hasPrefix("event") }
        return names.sorted { (Int($0.dropFirst(5)) ?? 0, $0) < (Int($1.dropFirst(5)) ?? 0, $1) }
    }

    private func directoryChanged() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotifyFD, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            var offset = 0
            while offset + 16 <= count {
                let watch = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset, as: Int32.self) }
                let mask = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 4, as: UInt32.self) }
                let length = Int(buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 12, as: UInt32.self) })
                let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)]
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                offset += 16 + length
                if watch == udevDatabaseWatch, udevDatabaseWatch >= 0 {
                    udevEntryChanged(name, mask: mask)
                    continue
                }
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    rescanAfterOverflow()
                    continue
                }
                guard name.hasPrefix("event") else { continue }
                if mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 {
                    forgetIgnored(name)
                    // A node removed while it waits for udev: no one ever heard of it.
                    endUdevWait(name)
                    udevTimedOut.remove(name)
                    if let decided = decidedEntries.removeValue(forKey: name) {
                        goneEntryTimes[decided.entry] = decided.initializedAt
                    }
                    releaseUdevWatchIfIdle()
                    remove(name)
                } else if mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0, readers[name] == nil {
                    forgetIgnored(name)
                    consider(name)
                } else if mask & UInt32(IN_ATTRIB) != 0, readers[name] == nil, !ignored.contains(name),
                    udevWaits[name] == nil
                {
                    // A node waiting for udev is woken by its entry or its timeout only
                    // (devtmpfs and udevd change its attributes before the entry is there).
                    consider(name)
                }
            }
        }
    }

    /// Opens, describes and attaches a node; retries briefly if it cannot be opened yet.
    /// While udevd runs, a node udev has not initialized waits for it first
    /// (``waitForUdev(_:path:entry:)``); the read that finds it initialized, or the last
    /// one at the timeout, is the attach's one udev read.
    private func consider(_ name: String) {
        guard readers[name] == nil else { return }
        if let only = settings.nodeNames, !only.contains(name) { return }
        guard let directory = settings.directory else { return }
        let path = directory + "/" + name
        let policy = settings.attachPolicy
        // udev's database is watched before the node is read, so an entry written in
        // between still ends the wait.
        // The entry's name whether udevd runs or not: an entry udevd left when it stopped
        // is as stale as one it has not removed yet.
        let entryName = udevWaits[name]?.entry ?? policy.udevDaemon.entryName(path)
        var entry: String?
        if entryName != nil, !udevTimedOut.contains(name), policy.udevDaemon.isRunning(), watchUdevDatabase() {
            entry = entryName
        }
        var reading = policy.readUdev(node: path)
        if reading.initialized, let time = reading.initializedAt, let entryName, let gone = goneEntryTimes[entryName],
            Self.sameInitialization(time, gone)
        {
            // The removed device's entry, udevd not having run its removal yet: none of
            // its properties are this node's (a node attached at the timeout or without
            // udevd goes by its capabilities, and the read is not kept).
            reading = ([:], false, nil)
        }
        if let entry, !reading.initialized {
            waitForUdev(name, path: path, entry: entry)
            return
        }
        // The wait is over before anyone hears of the node.
        endUdevWait(name)
        releaseUdevWatchIfIdle()
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            if (error == EACCES || error == EPERM || error == ENOENT), scheduleRetry(name) { return }
            onError(.open(path: path, errno: Errno(rawValue: error)))
            return
        }
        cancelRetry(name)
        // Kernel timestamps on CLOCK_MONOTONIC, so latency is measurable end to end.
        let device = EvdevDevice(fileDescriptor: fd)
        _ = try? device.setClock(CLOCK_MONOTONIC)
        let id = HIDDeviceID(rawValue: nextID)
        switch HIDDeviceInfo.read(fd: fd, id: id, path: path) {
        case .failure(let error):
            close(fd)
            onError(error)
        case .success(let described):
            let info: HIDDeviceInfo
            if reading.initialized, let entryName, let time = reading.initializedAt {
                goneEntryTimes[entryName] = nil
                decidedEntries[name] = (entryName, time)
            }
            switch policy.decide(described, reading: reading) {
            case .ignore(let reason):
                close(fd)
                ignored.insert(name)
                settings.attachPolicy.noteIgnored(path, reason: reason)
                Self.logger.info("\(path) (\(described.name)): not attached: \(reason)")
                return
            case .attach(let decided):
                info = decided
                if decided.deviceClass != described.deviceClass {
                    Self.logger.info("\(path) (\(described.name)): attached as a \(decided.deviceClass.rawValue)")
                }
            }
            self.described[name] = described
            nextID += 1
            if settings.grab {
                do throws(EvdevError) { try device.grab() } catch {
                    Self.logger.warning("\(path): could not grab (errno \(error.errno.rawValue)); reading shared")
                }
            }
            let reader = DeviceReader(info: info, fd: fd, readCalls: settings.readCalls, sink: sink) { [unowned self] reader in
                self.remove(name, reader: reader)
            }
            readers[name] = reader
            onDevicesChanged(devices)
            reader.attach(to: loop, preferred: settings.readPath)
        }
    }

    /// Decides again, by the settings now in force, what to do with every node: a node now
    /// ignored is detached (its clients see its releases and removal), a node whose class
    /// changed is detached and attached again as the new class (a new id), and a node
    /// ignored before and not now is attached. Streams keep what they were attached as.
    func reconsider() {
        for (name, original) in described.sorted(by: { $0.key < $1.key }) {
            guard let reader = readers[name] else { continue }
            switch settings.attachPolicy.decideAgain(original) {
            case .attach(let decided) where decided.deviceClass == reader.info.deviceClass && decided.roles == reader.info.roles:
                continue
            case .attach, .ignore:
                remove(name)
                consider(name)
            }
        }
        for name in ignored.sorted() {
            forgetIgnored(name)
            consider(name)
        }
    }

    private func nodePath(_ name: String) -> String { (settings.directory ?? "") + "/" + name }

    private func forgetIgnored(_ name: String) {
        guard ignored.remove(name) != nil else { return }
        settings.attachPolicy.noteIgnored(nodePath(name), reason: nil)
    }

    /// Attaches a stream of `struct input_event` records (a pipe, a socket) as a device
    /// described by `description`; the reader owns `fd` from here. The end of the stream
    /// is the device's removal.
    func attachStream(fd: Int32, description: HIDDeviceInfo) -> HIDDeviceID {
        let id = HIDDeviceID(rawValue: nextID)
        nextID += 1
        var info = description
        info.id = id
        info.path = "stream:\(id.rawValue)"
        let name = "stream \(id.rawValue)"
        if case .attach(let decided) = settings.attachPolicy.decide(info, keepingIgnored: true) { info = decided }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let reader = DeviceReader(info: info, fd: fd, readCalls: settings.readCalls, sink: sink) { [unowned self] reader in
            self.remove(name, reader: reader)
        }
        readers[name] = reader
        onDevicesChanged(devices)
        reader.attach(to: loop, preferred: settings.readPath)
        return id
    }

    /// How each attached device is read, by device.
    var readPaths: [HIDDeviceID: DeviceReadPath] {
        Dictionary(uniqueKeysWithValues: readers.values.map { ($0.info.id, $0.path) })
    }

    /// Holds `name` until udev has initialized it: until its entry `entry` appears in
    /// udev's database (``udevEntryChanged(_:mask:)``), or the timeout passes
    /// (``udevWaitTimedOut(_:)``). A node already waiting keeps its timer.
    private func waitForUdev(_ name: String, path: String, entry: String) {
        guard udevWaits[name] == nil else { return }
        let monitor = UnownedLoopReference(self, loop: loop)
        let timer = LoopTimer(after: settings.udevInitializationTimeout) { _ in monitor.value.udevWaitTimedOut(name) }
        udevWaits[name] = UdevWait(entry: entry, timer: timer)
        loop.add(timer, to: .common)
        settings.attachPolicy.noteWaitingForUdev(path, true)
        Self.logger.debug("\(path): waiting for udev to initialize it (\(settings.attachPolicy.udevDaemon.databaseDirectory)/\(entry))")
    }

    /// udev's database changed: an entry written for a node that waits is its cue. udevd
    /// renames a finished file into place (`IN_MOVED_TO`); a writer that writes in place
    /// counts once it closes the file (`IN_CLOSE_WRITE`). Not `IN_CREATE`: a file created
    /// in place is empty then, and libudev counts any entry, even an empty one, as
    /// initialized.
    private func udevEntryChanged(_ entry: String, mask: UInt32) {
        guard mask & UInt32(IN_MOVED_TO | IN_CLOSE_WRITE) != 0,
            let name = udevWaits.first(where: { $0.value.entry == entry })?.key
        else { return }
        // Written while the node waits: the new device's entry, even with the removed
        // device's initialization time (udevd keeps the time of an entry it finds, as
        // when it missed the removal).
        goneEntryTimes[entry] = nil
        consider(name)
    }

    /// udev has not initialized `name` in time: it is attached with what udev has of it now
    /// (a read the stages do not keep: they read again when they configure it).
    private func udevWaitTimedOut(_ name: String) {
        guard let wait = udevWaits[name] else { return }
        udevTimedOut.insert(name)
        let folder = settings.attachPolicy.udevDaemon.databaseDirectory
        Self.logger.warning(
            "\(nodePath(name)): udev has not initialized it within \(settings.udevInitializationTimeout) (no \(folder)/\(wait.entry)); attaching it with what udev has of it now"
        )
        consider(name)
    }

    /// Ends `name`'s wait for udev, if it waits (its timer stops).
    private func endUdevWait(_ name: String) {
        guard let wait = udevWaits.removeValue(forKey: name) else { return }
        wait.timer.invalidate()
        settings.attachPolicy.noteWaitingForUdev(nodePath(name), false)
    }

    /// Watches udev's database folder for new entries (on the folder's inotify descriptor);
    /// whether it is watched. A folder that cannot be watched lets nodes attach at once.
    private func watchUdevDatabase() -> Bool {
        if udevDatabaseWatch >= 0 { return true }
        let folder = settings.attachPolicy.udevDaemon.databaseDirectory
        let watch = inotify_add_watch(inotifyFD, folder, UInt32(IN_MOVED_TO | IN_CLOSE_WRITE))
        guard watch >= 0 else {
            let error = errno
            if !warnedUdevDatabaseUnwatchable {
                warnedUdevDatabaseUnwatchable = true
                Self.logger.warning("\(folder): cannot watch udev's database (errno \(error)): new nodes attach without waiting for udev")
            }
            return false
        }
        udevDatabaseWatch = watch
        return true
    }

    /// Whether two initialization times of a node's udev entry are one entry's: each is
    /// worked out as now less libudev's time since (`udev_device_get_usec_since_initialized`),
    /// so one entry read twice differs by the microseconds between the reads; a new
    /// device's entry is written long after the old one's.
    static func sameInitialization(_ one: MonotonicInstant, _ other: MonotonicInstant) -> Bool {
        let difference = one.nanoseconds > other.nanoseconds ? one.nanoseconds - other.nanoseconds : other.nanoseconds - one.nanoseconds
        return difference < 1_000_000
    }

    /// inotify dropped events (`IN_Q_OVERFLOW`: its queue was full): the folder is read
    /// again. A node with no reader that is not left alone is considered (one that waits
    /// for udev reads udev again, its entry's rename may have been dropped); a node gone is
    /// handled as its removal would have been: it stops waiting, is detached and
    /// forgotten, and its udev entry counts as its device's, not the next one's.
    private func rescanAfterOverflow() {
        guard let directory = settings.directory else { return }
        Self.logger.warning("\(directory): inotify's queue overflowed; reading the folder again")
        // A folder that cannot be read now (no descriptor left) says nothing of what is
        // gone: every node stays as it is.
        guard let names = Self.eventNodesIfReadable(in: directory) else {
            let error = errno
            Self.logger.error("\(directory): cannot read the folder after the overflow (errno \(error)); devices stay as they are")
            return
        }
        let present = Set(names)
        // Every node of the folder gone is handled as its lost IN_DELETE would have been
        // (streams are not the folder's).
        let known = Set(udevWaits.keys).union(udevTimedOut).union(decidedEntries.keys).union(ignored).union(readers.keys)
            .union(pendingRetries.keys)
        for name in known.sorted() where name.hasPrefix("event") && !present.contains(name) {
            forgetIgnored(name)
            endUdevWait(name)
            udevTimedOut.remove(name)
            if let decided = decidedEntries.removeValue(forKey: name) { goneEntryTimes[decided.entry] = decided.initializedAt }
            remove(name)
        }
        releaseUdevWatchIfIdle()
        for name in names where readers[name] == nil && !ignored.contains(name) { consider(name) }
    }

    /// Stops watching udev's database once no node waits.
    private func releaseUdevWatchIfIdle() {
        guard udevWaits.isEmpty, udevDatabaseWatch >= 0 else { return }
        _ = inotify_rm_watch(inotifyFD, udevDatabaseWatch)
        udevDatabaseWatch = -1
    }

    private func scheduleRetry(_ name: String) -> Bool {
        let attempts = (pendingRetries[name]?.attempts ?? 0) + 1
        guard attempts < settings.openAttempts else {
            cancelRetry(name)
            return false
        }
        pendingRetries[name]?.timer.invalidate()
        let monitor = UnownedLoopReference(self, loop: loop)
        let timer = LoopTimer(after: settings.retryInterval) { _ in monitor.value.consider(name) }
        pendingRetries[name] = (attempts, timer)
        loop.add(timer, to: .common)
        return true
    }

    private func cancelRetry(_ name: String) {
        pendingRetries.removeValue(forKey: name)?.timer.invalidate()
    }

    private func remove(_ name: String, reader expected: DeviceReader? = nil) {
        cancelRetry(name)
        guard let reader = readers[name], expected == nil || reader === expected else { return }
        readers[name] = nil
        described[name] = nil
        detachedEventsRead += reader.eventsRead
        // The table changes before the removal event can reach any client.
        onDevicesChanged(devices)
        reader.detach()
    }
}
