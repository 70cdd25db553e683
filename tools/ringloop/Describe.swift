import ArgumentParser
import RingLoopDevices
import RingLoopHID
import RingLoopToolSupport

#if canImport(Glibc)
import Glibc
#endif

struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a device's description as an evemu file, without events (as evemu-describe).",
        discussion: """
            DEVICE is an evdev node, real or virtual; RECORDING an evemu or libinput
            record file, whose devices are described one after the other. The output is
            what evemu-describe prints, its comment block included: what `ringloop replay`
            and evemu-device take.

            With --device-config (and --screen, --calibration), comment lines after each
            description give the device's settings, each with where it came from
            ("calibration = 1 0 0 0 1 0 (from /etc/ringloop/devices.conf:12)"), and
            the screen its positions map to, and why.

            -o writes as a shell's `>` would: into a FIFO or a character device; a regular
            file is replaced only once the whole description is written; a folder is
            refused.

            Examples:
              ringloop describe /dev/input/event3
              ringloop describe devices/touchpad.evemu -o touchpad-description.evemu
            """
    )

    @Argument(help: "An evdev device node, or a recording (none: the list of devices).", completion: .file())
    var input: String?

    @Option(name: .shortAndLong, help: "Output file (default: standard output).", completion: .file())
    var output: String?

    @OptionGroup(title: "Screens")
    var screenOptions: ScreenOptions

    func run() throws {
        try Failure.reporting("describe") {
            guard let input else {
                throw Devices.noInputGiven("an evdev device node or a recording", otherwise: "a recording: devices/keyboard.evemu")
            }
            let kind = try InputPath.require(input, [.node, .recording], expected: "an evdev device node or a recording")
            let text: String
            if kind == .node {
                let fd = open(input, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                guard fd >= 0 else { throw Failure.input(input, errno: .init(rawValue: errno)) }
                defer { close(fd) }
                let description = try InputDeviceDescription(fileDescriptor: fd)
                text = EvemuFormat.describe(description, kernel: kernelRelease()) + (try settingsLines(description, node: input))
            } else {
                let descriptions = try Recording.loadAll(contentsOf: input).compactMap(\.description)
                guard !descriptions.isEmpty else {
                    throw Failure.wrongKind(
                        path: input, found: "is an events-only recording", expected: "a device node or a recording with a description")
                }
                text = try descriptions.map { EvemuFormat.describe($0) + (try settingsLines($0)) }.joined()
            }
            guard let output else {
                StandardOutput.write(text)
                return
            }
            let file = try OutputFile(path: output)
            if file.followedLink { printError("ringloop describe: writing to \(file.target) (\(output) is a symbolic link to it)") }
            try file.write(text)
            try file.commit()
        }
    }
}

extension Describe {
    /// The device's settings and screen as comment lines: what the chain would apply to
    /// it, each value with its source. Without the screen options, a node's udev
    /// properties still give settings (`LIBINPUT_CALIBRATION_MATRIX`, `ACCEL_MOUNT_MATRIX`,
    /// `LIBINPUT_IGNORE_DEVICE`, `ID_INPUT_*`); nothing is printed when none apply.
    func settingsLines(_ description: InputDeviceDescription, node: String? = nil) throws(Failure) -> String {
        let resolver = try screenOptions.resolver(command: "describe")
        let properties = node.map { UdevProperties.of(node: $0) } ?? [:]
        let lines = Self.settingsLines(
            HIDDeviceInfo(description: description), properties: properties, resolver: resolver ?? DeviceSettingsResolver(),
            showScreen: resolver != nil)
        guard resolver != nil || lines != ["(none)"] else { return "" }
        return (["# ringloop settings:"] + lines.map { "#   " + $0 }).map { Format.shown($0) }.joined(separator: "\n") + "\n"
    }

    /// The lines `describe` and `doctor` show for one device: its settings with their
    /// sources, whether it is attached and as what, udev properties not used, and (with
    /// `showScreen`) its screen.
    static func settingsLines(
        _ info: HIDDeviceInfo, properties: [String: String], resolver: DeviceSettingsResolver, showScreen: Bool
    ) -> [String] {
        let identity = DeviceIdentity(info, properties: properties)
        let settings = resolver.settings(for: identity)
        let shown = settings.shown
        var lines = shown.isEmpty ? ["(none)"] : shown
        if settings.ignore {
            lines.append("attached: no, ignored (from \(settings.source(of: .ignore)))")
        } else if let deviceClass = settings.deviceClass, deviceClass != info.deviceClass {
            lines.append(
                "attached as a \(deviceClass.rawValue), not a \(info.deviceClass.rawValue) (class from \(settings.source(of: .deviceClass)))"
            )
        }
        lines += resolver.udevProblems(for: identity)
        if showScreen {
            let (mapping, reason) = resolver.mapping(for: info, identity: identity)
            lines.append("screen: " + (mapping.map { "\($0.screen.name) \($0.screen.sizeText), " } ?? "none, ") + reason)
        }
        return lines
    }
}
