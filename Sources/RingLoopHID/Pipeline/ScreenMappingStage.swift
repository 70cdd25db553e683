import RingLoop

/// The screen-mapping stage (DESIGN.md §3a: after the keymap, before the pointer): gives
/// each contact, pen event and absolute pointer event of a device mapped to a screen its
/// location in that screen's pixels (``ScreenMapper``), the mapping worked out by a
/// ``DeviceSettingsResolver`` as each device attaches, and turns a motion sensor's
/// acceleration into its device's axes by its mount matrix (``DeviceSettings/mountMatrix``,
/// udev's `ACCEL_MOUNT_MATRIX`). Present only while the system has
/// screens (``HIDEventSystem/setScreens(_:)``).
///
/// The stage receives each event borrowed (``HIDEventStage/process(_:emit:)``), so a
/// digitizer frame's mapped contacts go into a buffer of the mapped event's own: one the
/// stage emitted before and no event holds any more, as the decoder reuses its buffers,
/// so the stage allocates nothing once warm.
final class ScreenMappingStage: HIDEventStage {
    private(set) var screens: DeviceSettingsResolver
    private var mapper = ScreenMapper()
    /// The motion sensors whose settings give a mount matrix (``DeviceSettings/mountMatrix``).
    private var mountMatrices: [HIDDeviceID: MountMatrix] = [:]
    private var context: HIDStageContext?
    /// Contact buffers of frames this stage emitted, reused once no event holds them (at
    /// most 64 frames held at once downstream: recognizers, a queue to clients).
    private var framePool = DigitizerFramePool(limit: 64)

    init(screens: DeviceSettingsResolver) { self.screens = screens }

    func install(in context: HIDStageContext) {
        self.context = context
        remapAttachedDevices()
    }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) {
        switch event.payload {
        case .digitizer(let frame):
            guard let mapping = mapper.mapping(for: event.device) else { return emit(event) }
            var mapped = event
            mapped.payload = .digitizer(self.mapped(frame, through: mapping))
            emit(mapped)
        case .motion(var motion):
            guard let matrix = mountMatrices[event.device] else { return emit(event) }
            // The accelerometer's axes only, as udev's ACCEL_MOUNT_MATRIX is the accelerometer's.
            motion.acceleration = matrix.apply(motion.acceleration)
            var turned = event
            turned.payload = .motion(motion)
            emit(turned)
        case .pen, .absolutePointer:
            var mapped = event
            mapper.process(&mapped)
            emit(mapped)
        case .deviceAdded:
            if let device = context?.device(event.device) { map(device) }
            emit(event)
        case .deviceRemoved:
            mapper.setMapping(nil, for: event.device)
            mountMatrices[event.device] = nil
            emit(event)
        default:
            emit(event)
        }
    }

    func remove(emit: (HIDEvent) -> Void) {
        mapper.removeAll()
        mountMatrices.removeAll()
        context = nil
    }

    /// `frame` with each contact's screen location, on a reused buffer.
    private func mapped(_ frame: DigitizerFrame, through mapping: ScreenMapping) -> DigitizerFrame {
        var mapped = framePool.frame()
        mapped.fingerCount = frame.fingerCount
        mapped.isBoundingBox = frame.isBoundingBox
        mapped.buttonDown = frame.buttonDown
        for index in 0..<frame.count {
            var contact = frame[index]
            contact.screenLocation = mapping.location(normalizedX: contact.normalizedX, normalizedY: contact.normalizedY)
            mapped.append(contact)
        }
        framePool.keep(mapped.buffer)
        return mapped
    }

    /// Takes new screens and settings: every attached device's mapping is worked out again.
    /// - Returns: where each device that maps to a screen (or did) maps now, and why.
    @discardableResult
    func update(_ screens: DeviceSettingsResolver) -> [ScreenMappingReport] {
        self.screens = screens
        return remapAttachedDevices()
    }

    /// Maps `device` through `mapping` (for the benchmark, which has no system).
    func setMapping(_ mapping: ScreenMapping?, for device: HIDDeviceID) { mapper.setMapping(mapping, for: device) }

    /// The mapping of `device` (a device whose mapping was never worked out: `nil`).
    func mapping(for device: HIDDeviceID) -> ScreenMapping? { mapper.mapping(for: device) }

    @discardableResult
    private func remapAttachedDevices() -> [ScreenMappingReport] {
        mapper.removeAll()
        mountMatrices.removeAll()
        guard let context else { return [] }
        return context.system.devices.sorted { $0.id.rawValue < $1.id.rawValue }.compactMap(map)
    }

    @discardableResult
    private func map(_ device: HIDDeviceInfo) -> ScreenMappingReport? {
        guard let attachment = context?.attachment(of: device) else { return nil }
        let report = ScreenMappingReport(device: device, screens: screens, attachment: attachment)
        mapper.setMapping(report.mapping, for: device.id)
        mountMatrices[device.id] = report.settings.mountMatrix
        return report.mapping != nil || ScreenMapper.mapsToScreen(device) ? report : nil
    }
}

/// Where one device's positions map, and why (``HIDEventSystem/setScreens(_:)``).
public struct ScreenMappingReport: Sendable {
    /// The device.
    public var device: HIDDeviceInfo
    /// Its mapping, or `nil` when it maps to no screen.
    public var mapping: ScreenMapping?
    /// Why: the sources of its screen, rotation and calibration, or why none.
    public var reason: String
    /// Every setting of the device, each with its source.
    public var settings: DeviceSettings

    /// Where `device` maps by `screens`, and why; udev's properties of its node count
    /// where udev knows it (``UdevProperties``).
    public init(device: HIDDeviceInfo, screens: DeviceSettingsResolver) {
        self.device = device
        let identity = DeviceIdentity(device, properties: UdevProperties.of(node: device.path))
        settings = screens.settings(for: identity)
        (mapping, reason) = screens.mapping(for: device, identity: identity, settings: settings)
    }

    /// Where `device` maps by `screens`, by what its attach read and resolved.
    init(device: HIDDeviceInfo, screens: DeviceSettingsResolver, attachment: DeviceAttachment) {
        self.device = device
        settings = attachment.settings
        (mapping, reason) = screens.mapping(for: device, identity: attachment.identity, settings: attachment.settings)
    }

    /// One line: `NAME → 1080x1920@90 (HDMI-A-1): screen from …`.
    public var line: String {
        "\(device.name) → " + (mapping.map { "\($0.screen.sizeText) (\($0.screen.name))" } ?? "no screen") + ": \(reason)"
    }
}

extension HIDEventSystem {
    /// Maps absolute devices' positions onto screens from now on: the screen-mapping
    /// stage gives every contact, pen event and absolute pointer event of a device that
    /// maps to a screen its ``Contact/screenLocation`` (the ``DeviceSettingsResolver``
    /// chooses each device's screen, calibration and rotation); `nil` takes the stage out.
    /// Called again (a settings file read again on `SIGHUP`), it works out every attached
    /// device's mapping again, so the next events map by the new settings. Client loop
    /// thread; before or after ``start()``.
    ///
    /// The same settings decide whether each device is attached at all and as what class
    /// (``DeviceSettings/ignore`` and ``DeviceSettings/deviceClass``, udev's
    /// `LIBINPUT_IGNORE_DEVICE` and `ID_INPUT_*` among them, as libinput reads them): an
    /// ignored device is never opened for reading, and a device given a class is that
    /// class for every stage and handler. New settings apply to attached nodes at once: a
    /// node now ignored is detached, one whose class changed is attached again (a new
    /// id), one no longer ignored is attached. udev's properties are read once as a node
    /// attaches and once more for each call here (so a udev rule or hwdb entry changed
    /// since counts from the next `SIGHUP`); every stage takes the one answer. Without any
    /// settings (`nil`), udev's properties still count.
    /// - Returns: where each attached device that maps to a screen maps now, and why
    ///   (empty before ``start()``: devices are mapped as they attach).
    @discardableResult
    public func setScreens(_ screens: DeviceSettingsResolver?) -> [ScreenMappingReport] {
        loop.preconditionOnLoopThread("HIDEventSystem.setScreens")
        attachPolicy.update(screens ?? DeviceSettingsResolver())
        feed?.reconsiderDevices()
        pipeline.gestures?.forgetSurfaces()
        guard let screens else {
            if let stage = pipeline.screenMapping {
                pipeline.remove(stage)
            }
            pipeline.pointer?.settingsChanged()
            return []
        }
        defer { pipeline.pointer?.settingsChanged() }
        if let stage = pipeline.screenMapping { return stage.update(screens) }
        let stage = ScreenMappingStage(screens: screens)
        pipeline.screenMapping = stage
        pipeline.stagesChanged()
        return []
    }

    /// The screens and settings the screen-mapping stage maps by, if it is present.
    public var screens: DeviceSettingsResolver? { pipeline.screenMapping?.screens }

    /// Where `device`'s positions map now (`nil`: to no screen, or no screens are set).
    public func screenMapping(for device: HIDDeviceID) -> ScreenMapping? { pipeline.screenMapping?.mapping(for: device) }
}
