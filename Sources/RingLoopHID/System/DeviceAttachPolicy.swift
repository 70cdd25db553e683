import RingLoop

/// Decides, as a device attaches, whether it is attached at all and as what class: the
/// per-device settings' `ignore` and `class` (``DeviceSettingsResolver``: udev's
/// `LIBINPUT_IGNORE_DEVICE` and `ID_INPUT_*` tags, then the settings files, then the
/// app's own), as libinput leaves out a device udev marks ignored and takes udev's
/// `ID_INPUT_*` tags as what a device is. An ignored device is not opened for reading:
/// no stage, handler or client ever sees it. A class override is applied to the device's
/// description (``HIDDeviceInfo/treated(as:)``) before its decoder is made, so every stage
/// sees the device as that class.
///
/// Shared by the event system (which sets the settings) and its device monitor (which
/// asks, on the client's loop or on the event-system thread). Any thread.
final class DeviceAttachPolicy: Sendable {
    /// What to do with a device that appeared.
    enum Decision: Equatable {
        /// Attach it, described as this (its class overridden or not).
        case attach(HIDDeviceInfo)
        /// Leave it alone, for this reason ("ignored (from devices.conf:4)").
        case ignore(String)
    }

    private let state = ThreadLock<(resolver: DeviceSettingsResolver, ignored: [String: String])>((DeviceSettingsResolver(), [:]))
    /// Reads a node's udev properties (``UdevProperties/of(node:)``; tests give their own).
    private let udev: @Sendable (String) -> [String: String]

    /// A policy with no settings of its own (udev's properties still count), reading udev
    /// through `udev`.
    init(udev: @escaping @Sendable (String) -> [String: String] = { UdevProperties.of(node: $0) }) { self.udev = udev }

    /// The settings decisions are made by from now on.
    func update(_ resolver: DeviceSettingsResolver) { state.withLock { $0.resolver = resolver } }

    /// Whether `info` (as its capabilities describe it) is attached, and as what.
    func decide(_ info: HIDDeviceInfo) -> Decision {
        let resolver = state.withLock { $0.resolver }
        let identity = DeviceIdentity(info, properties: udev(info.path))
        let settings = resolver.settings(for: identity)
        if settings.ignore { return .ignore("ignored (from \(settings.source(of: .ignore)))") }
        guard let deviceClass = settings.deviceClass, deviceClass != info.deviceClass || info.roles != [deviceClass] else {
            return .attach(info)
        }
        return .attach(info.treated(as: deviceClass))
    }

    /// Notes that the node at `path` was left alone, and why (``ignoredNodes``).
    func noteIgnored(_ path: String, reason: String?) { state.withLock { $0.ignored[path] = reason } }

    /// The nodes left alone now, by path, each with the reason.
    var ignoredNodes: [String: String] { state.withLock { $0.ignored } }
}
