import ArgumentParser
import RingLoopDevices
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
                text = EvemuFormat.describe(description, kernel: kernelRelease())
            } else {
                let descriptions = try Recording.loadAll(contentsOf: input).compactMap(\.description)
                guard !descriptions.isEmpty else {
                    throw Failure.wrongKind(
                        path: input, found: "is an events-only recording", expected: "a device node or a recording with a description")
                }
                text = descriptions.map { EvemuFormat.describe($0) }.joined()
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
