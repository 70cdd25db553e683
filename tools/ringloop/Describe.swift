import ArgumentParser
import Foundation
import RingLoopDevices

struct Describe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a device's description as an evemu file, without events (as evemu-describe).",
        discussion: """
            DEVICE is an evdev node, real or virtual; RECORDING an evemu or libinput record
            file, whose devices are described one after the other. The output is what
            `ringloop replay` and evemu-device take.

            Examples:
              ringloop describe /dev/input/event3
              ringloop describe devices/touchpad.evemu -o touchpad-description.evemu
            """
    )

    @Argument(help: "An evdev device node, or a recording.")
    var input: String

    @Option(name: .shortAndLong, help: "Output file (default: standard output).")
    var output: String?

    func run() throws {
        let descriptions: [InputDeviceDescription]
        do {
            switch try Monitor.kind(of: input) {
            case .node:
                let fd = open(input, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                guard fd >= 0 else { throw ValidationError("\(input): \(openFailure(errno))") }
                defer { close(fd) }
                descriptions = [try InputDeviceDescription(fileDescriptor: fd)]
            case .recording:
                let recordings = try Recording.loadAll(contentsOf: input)
                descriptions = recordings.compactMap(\.description)
                guard !descriptions.isEmpty else {
                    throw ValidationError("\(input): an events-only recording has no description to print")
                }
            case .folder:
                throw ValidationError("\(input) is a folder: describe one device node or recording")
            }
        } catch let error as ValidationError {
            printError("ringloop describe: \(error.message)")
            throw ExitCode(1)
        } catch {
            printError("ringloop describe: \(error)")
            throw ExitCode(1)
        }
        let text = descriptions.map { EvemuFormat.write(Recording(description: $0, events: [])) }.joined()
        guard let output else { return print(text, terminator: "") }
        do { try text.write(toFile: output, atomically: true, encoding: .utf8) } catch {
            printError("ringloop describe: \(output): \(error.localizedDescription)")
            throw ExitCode(1)
        }
    }
}
