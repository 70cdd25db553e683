import RingLoop

/// What a device's attach read and resolved, once: its identity with the udev properties
/// read for its node, and its settings by the resolver in force. The attach policy
/// decides by it, and every stage that configures the device (the screen mapping, the
/// pointer) takes it from the policy (``HIDStageContext``) instead of reading udev and
/// resolving again, so they all see the same answer even when the udev database or a
/// settings file changes in between.
struct DeviceAttachment: Sendable {
    /// The node the properties were read for.
    var path: String
    /// The device as the settings match it (its class the one it was attached as), with
    /// its udev properties.
    var identity: DeviceIdentity
    /// Its settings, each value with its source.
    var settings: DeviceSettings
}

/// What the attach policy knows of udevd: whether it runs, where it writes its database,
/// and which entry there is a node's. A node udev has not initialized yet waits for its
/// entry while udevd runs (``DeviceMonitor``); tests give a folder of their own standing
/// for udev's.
struct UdevDaemon: Sendable {
    /// Whether udevd runs now (``UdevProperties/isDaemonRunning``).
    var isRunning: @Sendable () -> Bool
    /// The folder udevd writes a device's entry into, by a rename, once it has run its
    /// rules on the device (``UdevProperties/databaseDirectory``).
    var databaseDirectory: String
    /// The name of a node's entry in ``databaseDirectory`` (`c13:67`), `nil` for a node
    /// udev does not know (``UdevProperties/databaseEntryName(node:)``).
    var entryName: @Sendable (String) -> String?

    /// The machine's udevd, through libudev.
    static let system = UdevDaemon(
        isRunning: { UdevProperties.isDaemonRunning }, databaseDirectory: UdevProperties.databaseDirectory,
        entryName: { UdevProperties.databaseEntryName(node: $0) })

    /// No udevd: nothing waits for it.
    static let absent = UdevDaemon(isRunning: { false }, databaseDirectory: UdevProperties.databaseDirectory, entryName: { _ in nil })
}

/// A node's udev properties, whether udev had initialized the device when they were read,
/// and when udev initialized it (its database entry's `I:` time, `nil` when not known)
/// (``UdevProperties/reading(node:)``).
typealias UdevReading = (properties: [String: String], initialized: Bool, initializedAt: MonotonicInstant?)

/// Decides, as a device attaches, whether it is attached at all and as what class: the
/// per-device settings' `ignore` and `class` (``DeviceSettingsResolver``: udev's
/// `LIBINPUT_IGNORE_DEVICE` and `ID_INPUT_*` tags, then the settings files, then the
/// app's own), as libinput leaves out a device udev marks ignored and takes udev's
/// `ID_INPUT_*` tags as what a device is. An ignored device is not opened for reading:
/// no stage, handler or client ever sees it. A class override is applied to the device's
/// description (``HIDDeviceInfo/treated(as:)``) before its decoder is made, so every stage
/// sees the device as that class.
///
/// While udevd runs, the device monitor does not attach a node udev has not initialized
/// yet (``readUdev(node:)`` says so, ``udevDaemon`` says udevd runs): it waits for the
/// node's entry in udev's database and attaches with the read that found it initialized
/// (``nodesWaitingForUdev`` are the nodes waiting).
///
/// The node's udev properties are read once per attach; what they and the settings gave
/// is kept, by device id, as the device's ``DeviceAttachment`` until its removal
/// (``forget(_:)``), and worked out again, udev read once more, when the settings change.
///
/// Shared by the event system (which sets the settings), its device monitor (which
/// asks, on the client's loop or on the event-system thread) and its stages (which take
/// the attachments). Any thread.
final class DeviceAttachPolicy: Sendable {
    /// What to do with a device that appeared.
    enum Decision: Equatable {
        /// Attach it, described as this (its class overridden or not).
        case attach(HIDDeviceInfo)
        /// Leave it alone, for this reason ("ignored (from devices.conf:4)").
        case ignore(String)
    }

    private struct State {
        var resolver = DeviceSettingsResolver()
        var ignored: [String: String] = [:]
        var attachments: [HIDDeviceID: DeviceAttachment] = [:]
        var waitingForUdev: Set<String> = []
    }

    private let state = ThreadLock<State>(State())
    /// Reads a node's udev properties and whether udev has initialized the device
    /// (`UdevProperties.reading(node:)`; tests give their own properties, final).
    private let udev: @Sendable (String) -> UdevReading
    /// Whether udevd runs, and where a node's entry appears once it has initialized it.
    let udevDaemon: UdevDaemon

    /// A policy with no settings of its own (udev's properties still count), reading udev.
    init() {
        udev = { UdevProperties.reading(node: $0) }
        udevDaemon = .system
    }

    /// A policy with no settings of its own, reading the properties `udev` gives (taken as
    /// udev's final ones); no udevd runs.
    init(udev: @escaping @Sendable (String) -> [String: String]) {
        self.udev = { (udev($0), true, nil) }
        udevDaemon = .absent
    }

    /// A policy with no settings of its own, reading the properties `reading` gives and
    /// whether udev had initialized the device then, `daemon` saying whether udevd runs
    /// (none by default) and where its entries appear.
    init(reading: @escaping @Sendable (String) -> UdevReading, daemon: UdevDaemon = .absent) {
        udev = reading
        udevDaemon = daemon
    }

    /// Reads the udev properties of the node at `path`, and whether udev has initialized it:
    /// what the monitor decides by whether a node waits for udev, then hands to
    /// ``decide(_:reading:keepingIgnored:)`` as the attach's one read.
    func readUdev(node path: String) -> UdevReading { udev(path) }

    /// The settings decisions are made by from now on. Every kept attachment is worked out
    /// again: its node's udev properties read once more (new settings, a `SIGHUP`, also
    /// take in a udev rule or hwdb entry changed since the attach, or written after it, as
    /// a test's udev database entry may be), then its settings resolved; the stages take
    /// that one answer again.
    func update(_ resolver: DeviceSettingsResolver) {
        let paths = state.withLock { state in
            state.resolver = resolver
            return state.attachments.mapValues(\.path)
        }
        // Read with no lock held (libudev reads files).
        let readings = paths.mapValues { udev($0) }
        state.withLock { state in
            for (id, var attachment) in state.attachments {
                if let reading = readings[id], paths[id] == attachment.path {
                    attachment.identity.properties = reading.properties
                }
                attachment.settings = state.resolver.settings(for: attachment.identity)
                state.attachments[id] = attachment
            }
        }
    }

    /// Whether `info` (as its capabilities describe it), attaching now, is attached, and
    /// as what: reads its node's udev properties (once) and keeps what they and the
    /// settings gave as its attachment. With `keepingIgnored` (a stream, attached even
    /// when the settings ignore it) the attachment is kept also for an ignored device, so
    /// its stages take this read instead of reading udev again.
    ///
    /// A read made before udev has initialized the device (the node can appear before
    /// udev's rules have run on it) is not kept: the stages read again at their first ask,
    /// when udev's own properties are more likely there.
    ///
    /// - Parameters:
    ///   - info: The device as its capabilities describe it.
    ///   - reading: The node's udev reading made for this attach (``readUdev(node:)``);
    ///     `nil` reads it now.
    ///   - keepingIgnored: Keep the attachment also when the settings ignore the device.
    func decide(_ info: HIDDeviceInfo, reading given: UdevReading? = nil, keepingIgnored: Bool = false) -> Decision {
        let reading = given ?? udev(info.path)
        let keeping: Keeping = reading.initialized ? (keepingIgnored ? .always : .whenAttached) : .never
        return decide(info, properties: reading.properties, keeping: keeping)
    }

    /// Whether the attached `info` (as its capabilities describe it) stays attached, and
    /// as what, by the settings now in force and the udev properties kept for it (read at
    /// its attach or at the last ``update(_:)``).
    /// Keeps nothing: a device that stays keeps its attachment (``update(_:)`` resolved it
    /// again), one that goes is attached again under a new id, its own read then.
    func decideAgain(_ info: HIDDeviceInfo) -> Decision {
        let kept = state.withLock { $0.attachments[info.id] }
        let properties = kept.flatMap { $0.path == info.path ? $0.identity.properties : nil } ?? udev(info.path).properties
        return decide(info, properties: properties, keeping: .never)
    }

    /// Which decisions keep their attachment.
    private enum Keeping { case whenAttached, always, never }

    private func decide(_ info: HIDDeviceInfo, properties: [String: String], keeping: Keeping) -> Decision {
        state.withLock { state in
            var identity = DeviceIdentity(info, properties: properties)
            var settings = state.resolver.settings(for: identity)
            let decision: Decision
            if settings.ignore {
                decision = .ignore("ignored (from \(settings.source(of: .ignore)))")
            } else {
                var attached = info
                if let deviceClass = settings.deviceClass, deviceClass != info.deviceClass || info.roles != [deviceClass] {
                    attached = info.treated(as: deviceClass)
                    // Sections matching by class match the class the device is attached as.
                    identity = DeviceIdentity(attached, properties: properties)
                    settings = state.resolver.settings(for: identity)
                }
                decision = .attach(attached)
            }
            let keeps =
                switch keeping {
                case .always: true
                case .whenAttached: !settings.ignore
                case .never: false
                }
            if keeps { state.attachments[info.id] = DeviceAttachment(path: info.path, identity: identity, settings: settings) }
            return decision
        }
    }

    /// What `device`'s attach read and resolved. A device attached elsewhere (an event
    /// server's, seen by its client), or whose attach read udev before udev had
    /// initialized it, has its properties read and settings resolved at the first ask,
    /// kept for the next once udev has initialized it.
    func attachment(of device: HIDDeviceInfo) -> DeviceAttachment {
        if let kept = state.withLock({ $0.attachments[device.id] }), kept.path == device.path { return kept }
        let reading = udev(device.path)
        let identity = DeviceIdentity(device, properties: reading.properties)
        return state.withLock { state in
            let attachment = DeviceAttachment(path: device.path, identity: identity, settings: state.resolver.settings(for: identity))
            if reading.initialized { state.attachments[device.id] = attachment }
            return attachment
        }
    }

    /// Drops the attachment of a device that was removed.
    func forget(_ id: HIDDeviceID) { state.withLock { $0.attachments[id] = nil } }

    /// Drops every attachment (the system stopped: its device ids are used again).
    func forgetAttachments() { state.withLock { $0.attachments.removeAll() } }

    /// Notes that the node at `path` was left alone, and why (``ignoredNodes``).
    func noteIgnored(_ path: String, reason: String?) { state.withLock { $0.ignored[path] = reason } }

    /// The nodes left alone now, by path, each with the reason.
    var ignoredNodes: [String: String] { state.withLock { $0.ignored } }

    /// Notes that the node at `path` waits for udev to initialize it, or no longer does
    /// (``nodesWaitingForUdev``).
    func noteWaitingForUdev(_ path: String, _ waiting: Bool) {
        state.withLock { state in
            if waiting { state.waitingForUdev.insert(path) } else { state.waitingForUdev.remove(path) }
        }
    }

    /// The nodes not attached yet because udevd runs and has not initialized them, by path.
    var nodesWaitingForUdev: Set<String> { state.withLock { $0.waitingForUdev } }
}
