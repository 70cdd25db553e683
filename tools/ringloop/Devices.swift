import ArgumentParser
import Foundation
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List evdev devices: path, name, ids, class, capabilities.",
        discussion: """
            Examples:
              ringloop devices
              ringloop devices --json
              ringloop devices --directory /tmp/ringloop-demo-1234
            """
    )

    @Option(help: "The folder of device nodes.")
    var directory = "/dev/input"

    @Flag(help: "One JSON array.")
    var json = false

    func run() throws {
        var names: [String] = []
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder)
        if exists {
            guard isFolder.boolValue else {
                printError("ringloop devices: \(directory) is not a folder (--directory takes a folder of evdev nodes)")
                throw ExitCode(1)
            }
            guard let listed = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
                printError("ringloop devices: \(directory): \(String(cString: strerror(errno)))")
                throw ExitCode(1)
            }
            names = listed
        }
        let nodes = names.filter { $0.hasPrefix("event") }.sorted { (Int($0.dropFirst(5)) ?? 0) < (Int($1.dropFirst(5)) ?? 0) }
        if nodes.isEmpty {
            // No device is an answer, not a failure (as evtest says so): an empty list.
            let reason = exists ? "no eventN node in \(directory)" : "\(directory) does not exist"
            printError("ringloop devices: no input devices (\(reason))")
            if json { print("[]") }
            return
        }
        var rows: [[String: Any]] = []
        var failures = 0
        for name in nodes {
            let path = directory + "/" + name
            let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else {
                failures += 1
                let error = errno
                if json {
                    rows.append(["path": path, "error": String(cString: strerror(error))])
                } else {
                    print("\(path): cannot open: \(openFailure(error))")
                }
                continue
            }
            defer { close(fd) }
            guard let description = try? InputDeviceDescription(fileDescriptor: fd) else {
                failures += 1
                if !json { print("\(path): not an evdev device") }
                continue
            }
            let info = HIDDeviceInfo.classifyDescription(description)
            let roles = HIDDeviceInfo.roles(codes: description.codes, properties: description.properties)
                .map(\.rawValue).sorted()
            let capabilities = description.codes.keys.filter { $0 != 0 }.sorted().map { type -> String in
                "\(Evdev.shownName(ofType: type)) (\(description.codes[type]!.count))"
            }
            if json {
                rows.append([
                    "path": path, "name": description.name,
                    "bus": String(format: "0x%04x", description.busType), "vendor": String(format: "0x%04x", description.vendor),
                    "product": String(format: "0x%04x", description.product),
                    "version": String(format: "0x%04x", description.version), "class": info.rawValue,
                    "roles": roles,
                    "properties": description.properties.sorted().map { Evdev.shownName(ofProperty: $0) },
                    "capabilities": Dictionary(
                        uniqueKeysWithValues: description.codes.filter { $0.key != 0 }.map { type, codes in
                            (Evdev.shownName(ofType: type), codes.sorted().map { Evdev.shownName(ofCode: $0, type: type) })
                        }),
                    "slots": description.slotCount,
                ])
            } else {
                print("\(path)")
                print("  name        \(description.name)")
                print(
                    String(
                        format: "  ids         bus 0x%04x vendor 0x%04x product 0x%04x version 0x%04x", description.busType,
                        description.vendor, description.product, description.version))
                print("  class       \(info.rawValue)\(roles.count > 1 ? " (roles: \(roles.joined(separator: ", ")))" : "")")
                print("  events      \(capabilities.joined(separator: ", "))")
                if !description.properties.isEmpty {
                    print(
                        "  properties  \(description.properties.sorted().map { Evdev.shownName(ofProperty: $0) }.joined(separator: ", "))")
                }
                if description.slotCount > 0 { print("  slots       \(description.slotCount)") }
            }
        }
        if json {
            let data = try JSONSerialization.data(withJSONObject: rows, options: [.sortedKeys, .prettyPrinted])
            print(String(decoding: data, as: UTF8.self))
        } else if nodes.isEmpty {
            print("no event devices in \(directory)")
        }
        if failures > 0 && failures == nodes.count { throw ExitCode(1) }
    }
}

extension HIDDeviceInfo {
    /// The class of a device described by a recording or a live node.
    static func classifyDescription(_ description: InputDeviceDescription) -> HIDDeviceClass {
        HIDDeviceInfo.classify(codes: description.codes, properties: description.properties)
    }
}
