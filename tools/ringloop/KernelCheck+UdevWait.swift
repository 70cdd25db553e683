import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// The wait for udev on the booted kernel. No udevd runs in the guest, so the check makes
/// libudev say one does (`udev_queue_get_udev_is_active` asks whether `/run/udev/control`
/// is there), then plugs in a real touchscreen through uinput: the kernel's node, which
/// libudev knows and reports not initialized (no database entry yet). A chain of its own
/// must hold it; the check then writes the node's entry late, as udevd would after its
/// rules, with a calibration, and the chain must attach the node and map it by that
/// calibration at once. The control file is removed afterwards, so no other check waits.
enum UdevWaitChecks {
    static func run(_ context: CheckContext) {
        let name = "udev-wait/touchscreen-calibration"
        guard context.report.wants(name) else { return }
        let (ok, detail) = check(context)
        context.report.check(name, ok, detail)
    }

    private static func check(_ context: CheckContext) -> (Bool, String) {
        let folder = "\(context.devices)/real/evemu-devices/touchscreens/"
        let file = "EP0430M09.4-finger-drag-down.events"
        guard let recording = context.loadRealRecording("udev-wait", folder: folder, file: file, description: nil),
            let description = recording.description
        else { return (false, "\(file) could not be loaded") }
        let control = "/run/udev/control"
        for made in ["/run/udev", UdevDatabaseEntry.folder] { mkdir(made, 0o755) }
        let fd = open(control, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return (false, "\(control): \(String(cString: strerror(errno)))") }
        close(fd)
        defer { unlink(control) }
        let screen: ScreenDescription
        let matrix: CalibrationMatrix
        let chain: ChainWatch
        do {
            screen = try ScreenDescription(width: 1920, height: 1080)
            matrix = try CalibrationMatrix(parsing: LibinputChecks.calibration)
            // A timeout far above the guest's pace: the entry comes when the check writes it.
            var configuration = HIDEventSystem.Configuration()
            configuration.input = .devices(HIDEventSystem.DeviceFolder(udevInitializationTimeout: .seconds(60)))
            chain = try ChainWatch(configuration: configuration)
        } catch {
            return (false, "\(error)")
        }
        defer { chain.stop() }
        chain.setScreens(DeviceSettingsResolver(screens: [screen]))
        let device: UInputDevice
        do { device = try UInputDevice(description) } catch { return (false, "uinput: \(error)") }
        defer { device.remove() }
        let node = device.nodePath
        guard waitUntil(.seconds(10), { chain.nodesWaitingForUdev.contains(node) || chain.device(atPath: node) != nil }) else {
            return (false, "the chain neither attached \(node) nor waited for udev within 10 s")
        }
        guard chain.device(atPath: node) == nil else {
            return (false, "the chain attached \(node) before udev's entry was written")
        }
        var properties = Libinput.inputProperties(of: description)
        properties[DeviceIdentity.calibrationProperty] = LibinputChecks.calibration
        let entry: UdevDatabaseEntry
        do { entry = try UdevDatabaseEntry(node: node, properties: properties) } catch { return (false, error.description) }
        defer { entry.remove() }
        guard let id = chain.waitForDevice(atPath: node, after: 0) else {
            return (false, "the chain never attached \(node) after its udev entry \(entry.path) was written")
        }
        guard let mapping = chain.screenMapping(for: id) else { return (false, "\(node) maps to no screen") }
        let waiting = chain.nodesWaitingForUdev
        return (
            mapping.calibration == matrix && waiting.isEmpty,
            "\(node) waited for udev (\(control) there, no entry), attached once \(entry.path) was written, mapped with "
                + "calibration \(mapping.calibration) (udev's: \(matrix))" + (waiting.isEmpty ? "" : "; still waiting: \(waiting.sorted())")
        )
    }
}
