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
        // Three devices one after the other: the node is held and attached by the entry
        // every time, not once by chance.
        var lines: [String] = []
        for _ in 1...3 {
            let (ok, line) = plugIn(description, chain: chain, screen: screen, matrix: matrix)
            lines.append(line)
            if !ok { return (false, lines.joined(separator: " | ")) }
        }
        return (true, "\(control) there; " + lines.joined(separator: " | "))
    }

    /// One touchscreen plugged in and out: held until its entry is written, then attached
    /// and mapped by the entry's calibration.
    private static func plugIn(
        _ description: InputDeviceDescription, chain: ChainWatch, screen: ScreenDescription, matrix: CalibrationMatrix
    ) -> (Bool, String) {
        let mark = chain.mark()
        let device: UInputDevice
        do { device = try UInputDevice(description) } catch { return (false, "uinput: \(error)") }
        defer { device.remove() }
        let node = device.nodePath
        let seen = waitUntil(.seconds(10)) {
            chain.nodesWaitingForUdev.contains(node) || chain.device(atPath: node).map { $0.rawValue > mark } ?? false
        }
        guard seen else { return (false, "the chain neither attached \(node) nor waited for udev within 10 s") }
        if let attached = chain.device(atPath: node), attached.rawValue > mark {
            return (false, "the chain attached \(node) before udev's entry was written")
        }
        var properties = Libinput.inputProperties(of: description)
        properties[DeviceIdentity.calibrationProperty] = LibinputChecks.calibration
        let entry: UdevDatabaseEntry
        do { entry = try UdevDatabaseEntry(node: node, properties: properties) } catch { return (false, error.description) }
        defer { entry.remove() }
        guard let id = chain.waitForDevice(atPath: node, after: mark) else {
            return (false, "the chain never attached \(node) after its udev entry \(entry.path) was written")
        }
        defer {
            device.remove()
            waitUntil(.seconds(10)) { chain.wasRemoved(id) }
        }
        guard let mapping = chain.screenMapping(for: id) else { return (false, "\(node) maps to no screen") }
        // Other nodes of the guest (no entry ever) may wait too; this one must not.
        let waiting = chain.nodesWaitingForUdev.contains(node)
        let detail =
            "\(node) waited, attached once \(entry.path) was written, calibration \(mapping.calibration)"
            + (waiting ? "; it still waits" : "")
        guard mapping.calibration == matrix, !waiting else {
            // What libudev reads now, and the mapping once udev is read again.
            let now = UdevProperties.of(node: node)[DeviceIdentity.calibrationProperty] ?? "none"
            let again = chain.setScreens(DeviceSettingsResolver(screens: [screen])).map(\.line).joined(separator: "; ")
            return (false, detail + ", not udev's \(matrix); libudev reads \(now) now; read again: \(again)")
        }
        return (true, detail)
    }
}
