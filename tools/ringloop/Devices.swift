import ArgumentParser
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List evdev devices: path, name, ids, class, capabilities.",
        discussion: """
            Examples:
              ringloop devices
              ringloop devices --json
              ringloop devices --directory /tmp/ringloop-replay-1234
            """
    )

    @Option(help: "The folder of device nodes.", completion: .directory)
    var directory = "/dev/input"

    @Flag(help: "One JSON array.")
    var json = false

    func run() throws {
        try Failure.reporting("devices") { try list() }
    }

    private func list() throws(Failure) {
        var info = stat()
        let exists = stat(directory, &info) == 0
        if exists, info.st_mode & S_IFMT != S_IFDIR {
            throw .wrongKind(path: directory, found: "is not a folder", expected: "a folder of evdev nodes (--directory)")
        }
        if exists, access(directory, R_OK | X_OK) != 0 { throw .unreadable(path: directory, errno: .init(rawValue: errno)) }
        let nodes = folderEntries(directory).filter { $0.hasPrefix("event") }.sorted {
            (Int($0.dropFirst(5)) ?? 0) < (Int($1.dropFirst(5)) ?? 0)
        }
        if nodes.isEmpty {
            // No device is an answer, not a failure (as evtest says so): an empty list.
            let reason = exists ? "no eventN node in \(directory)" : "\(directory) does not exist"
            printError("ringloop devices: no input devices (\(reason))")
            if json { writeLine("[]") }
            return
        }
        var rows: [JSON] = []
        var failures = 0
        for name in nodes {
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                failures += 1
                let failure = Failure.input(path, errno: .init(rawValue: errno))
                if json {
                    rows.append(["path": .string(path), "error": .string(failure.message)])
                } else {
                    writeLine(Format.shown(failure.message))
                }
                continue
            }
            defer { close(fd) }
            guard let description = try? InputDeviceDescription(fileDescriptor: fd) else {
                failures += 1
                if json {
                    rows.append(["path": .string(path), "error": "not an evdev device"])
                } else {
                    writeLine("\(Format.shown(path)): not an evdev device")
                }
                continue
            }
            if json { rows.append(Self.json(description, path: path)) } else { writeLine(Self.text(description, path: path)) }
        }
        if json { writeLine(JSON.array(rows).text(pretty: true)) }
        if failures > 0 && failures == nodes.count { throw .failed("none of the \(nodes.count) nodes in \(directory) could be read") }
    }

    /// What a command that reads one device says when it is given none, as evtest offers
    /// the list: what to give, then each readable evdev node of /dev/input with its name.
    static func noInputGiven(_ wanted: String, otherwise: String, directory: String = "/dev/input") -> Failure {
        let nodes = folderEntries(directory).filter { $0.hasPrefix("event") }.sorted {
            (Int($0.dropFirst(5)) ?? 0) < (Int($1.dropFirst(5)) ?? 0)
        }
        var lines: [String] = []
        for name in nodes {
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard let description = try? InputDeviceDescription(fileDescriptor: fd) else { continue }
            lines.append("  \(Format.shown(path)):\t\(Format.shown(description.name))")
        }
        guard !lines.isEmpty else {
            return .usage("give \(wanted); no evdev device in \(directory) can be read here (\(otherwise))")
        }
        return .usage("give \(wanted); the evdev devices in \(directory):\n" + lines.joined(separator: "\n"))
    }

    /// `0x` and four hexadecimal digits, as every ringloop output writes ids.
    static func id(_ value: UInt16) -> String { "0x" + Format.hex(value, digits: 4) }

    static func json(_ description: InputDeviceDescription, path: String) -> JSON {
        let device = HIDDeviceInfo(description: description, path: path)
        let (info, roles) = (device.deviceClass, device.roles.map(\.rawValue).sorted())
        var capabilities: [String: JSON] = [:]
        for (type, codes) in description.codes where type != 0 {
            capabilities[Evdev.shownName(ofType: type)] = .array(codes.sorted().map { .string(Evdev.shownName(ofCode: $0, type: type)) })
        }
        return [
            "path": .string(path), "name": .string(description.name), "bus": .string(id(description.busType)),
            "vendor": .string(id(description.vendor)), "product": .string(id(description.product)),
            "version": .string(id(description.version)), "class": .string(info.rawValue), "roles": .array(roles.map(JSON.string)),
            "properties": .array(description.properties.sorted().map { .string(Evdev.shownName(ofProperty: $0)) }),
            "capabilities": .object(capabilities), "slots": .int(description.slotCount),
            "sdlGUID": .string(device.sdlGUID.hexString),
        ]
    }

    static func text(_ description: InputDeviceDescription, path: String) -> String {
        let device = HIDDeviceInfo(description: description, path: path)
        let (info, roles) = (device.deviceClass, device.roles.map(\.rawValue).sorted())
        let capabilities = description.codes.keys.filter { $0 != 0 }.sorted().map { type -> String in
            "\(Evdev.shownName(ofType: type)) (\(description.codes[type]!.count))"
        }
        var lines = [Format.shown(path), "  name        \(Format.shown(description.name))"]
        lines.append(
            "  ids         bus \(id(description.busType)) vendor \(id(description.vendor)) product \(id(description.product))"
                + " version \(id(description.version))")
        lines.append("  class       \(info.rawValue)\(roles.count > 1 ? " (roles: \(roles.joined(separator: ", ")))" : "")")
        lines.append("  events      \(capabilities.joined(separator: ", "))")
        if !description.properties.isEmpty {
            lines.append("  properties  \(description.properties.sorted().map { Evdev.shownName(ofProperty: $0) }.joined(separator: ", "))")
        }
        if description.slotCount > 0 { lines.append("  slots       \(description.slotCount)") }
        lines.append("  sdl guid    \(device.sdlGUID.hexString)")
        if device.roles.contains(.gamepad) || device.roles.contains(.joystick),
            let match = GamepadMappings.database.match(for: device)
        {
            lines.append("  sdl mapping \(Format.shown(match.mapping.name)) (\(match.kind.rawValue))")
        }
        return lines.joined(separator: "\n")
    }
}
