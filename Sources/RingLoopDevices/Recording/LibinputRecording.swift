import Yams

/// Reads the YAML that `libinput record` writes (format version 1), what libinput's
/// developers ask for in bug reports: each device's `evdev` description (name, id,
/// codes, absinfo, properties) and its `events`, a list of frames of
/// `[sec, usec, type, code, value]`. Several devices in one file share one clock.
public enum LibinputRecording {
    /// Parses a `libinput record` file into one recording per device, in file order.
    public static func parse(_ text: String, file: String = "<text>") throws(RecordingError) -> [Recording] {
        let root: Node
        do {
            guard let composed = try Yams.compose(yaml: text) else {
                throw RecordingError.malformed(file: file, line: 1, message: "empty YAML document")
            }
            root = composed
        } catch let error as RecordingError {
            throw error
        } catch let error as YamlError {
            throw .malformed(file: file, line: yamlLine(error), message: "not valid YAML: \(yamlProblem(error))")
        } catch {
            throw .malformed(file: file, line: 1, message: "not valid YAML: \(error)")
        }
        func fail(_ node: Node?, _ message: String) -> RecordingError {
            .malformed(file: file, line: node?.mark?.line ?? 1, message: message)
        }
        guard let top = root.mapping else { throw fail(root, "expected a mapping with version: and devices:") }
        guard let version = top["version"]?.int else { throw fail(root, "expected 'version: 1'") }
        guard version == 1 else { throw fail(top["version"], "unsupported libinput record version \(version); expected 1") }
        guard let devices = top["devices"]?.sequence, !devices.isEmpty else {
            throw fail(root, "expected 'devices:' with at least one device")
        }
        var recordings: [Recording] = []
        for deviceNode in devices {
            guard let device = deviceNode.mapping, let evdev = device["evdev"]?.mapping else {
                throw fail(deviceNode, "expected a device with an 'evdev:' description")
            }
            guard let name = evdev["name"]?.string else { throw fail(deviceNode, "expected evdev 'name:'") }
            guard let id = evdev["id"]?.sequence, id.count == 4, let ids = intList(id), ids.allSatisfy({ 0...0xffff ~= $0 })
            else { throw fail(evdev["id"] ?? deviceNode, "expected 'id: [bus, vendor, product, version]' (0…65535)") }
            var codes: [UInt16: Set<UInt16>] = [:]
            if let codeMap = evdev["codes"]?.mapping {
                for (typeNode, listNode) in codeMap {
                    guard let type = typeNode.int, let maximum = EvdevLimits.maximumCode(type: UInt16(clamping: type)),
                        0...0x1f ~= type
                    else { throw fail(typeNode, "expected an event type with codes (0, 1, 2, 3, 4, 5, 17, 18, 21)") }
                    guard let list = listNode.sequence, let values = intList(list), values.allSatisfy({ 0...Int(maximum) ~= $0 })
                    else { throw fail(listNode, "expected a list of codes from 0 to \(maximum) for type \(type)") }
                    codes[UInt16(type)] = Set(values.map { UInt16($0) })
                }
            }
            var axes: [UInt16: AbsoluteAxis] = [:]
            if let absinfo = evdev["absinfo"]?.mapping {
                for (codeNode, infoNode) in absinfo {
                    guard let code = codeNode.int, 0...0x3f ~= code else { throw fail(codeNode, "expected an axis code from 0 to 63") }
                    guard let info = infoNode.sequence, let v = intList(info), v.count == 5,
                        v.allSatisfy({ Int(Int32.min)...Int(Int32.max) ~= $0 })
                    else { throw fail(infoNode, "expected '[minimum, maximum, fuzz, flat, resolution]'") }
                    axes[UInt16(code)] = AbsoluteAxis(
                        minimum: Int32(v[0]), maximum: Int32(v[1]), fuzz: Int32(v[2]), flat: Int32(v[3]), resolution: Int32(v[4]))
                }
            }
            var properties = Set<UInt16>()
            if let list = evdev["properties"]?.sequence {
                guard let values = intList(list), values.allSatisfy({ 0...0x1f ~= $0 }) else {
                    throw fail(evdev["properties"], "expected a list of properties from 0 to 31")
                }
                properties = Set(values.map { UInt16($0) })
            }
            var events: [RecordedEvent] = []
            for frameNode in device["events"]?.sequence ?? [] {
                guard let evdevFrame = frameNode.mapping?["evdev"] else { continue }  // libinput-only entries
                guard let list = evdevFrame.sequence else { throw fail(evdevFrame, "expected a list of events") }
                for eventNode in list {
                    guard let fields = eventNode.sequence, let v = intList(fields), v.count == 5, v[0] >= 0,
                        0...999_999 ~= v[1], 0...0xffff ~= v[2], 0...0xffff ~= v[3], Int(Int32.min)...Int(Int32.max) ~= v[4]
                    else { throw fail(eventNode, "expected '[sec, usec, type, code, value]'") }
                    events.append(
                        RecordedEvent(
                            seconds: Int64(v[0]), microseconds: Int32(v[1]), type: UInt16(v[2]), code: UInt16(v[3]),
                            value: Int32(v[4])))
                }
            }
            let description = InputDeviceDescription(
                name: name, busType: UInt16(ids[0]), vendor: UInt16(ids[1]), product: UInt16(ids[2]),
                version: UInt16(ids[3]), properties: properties, codes: codes, absoluteAxes: axes,
                keyRepeat: codes[0]?.contains(0x14) == true ? (250, 33) : nil)
            let node = device["node"]?.string
            recordings.append(
                Recording(description: description, events: events, notes: node.map { ["libinput record of \($0)"] } ?? []))
        }
        return recordings
    }

    static func intList(_ nodes: Node.Sequence) -> [Int]? {
        var values: [Int] = []
        for node in nodes {
            guard let value = node.int else { return nil }
            values.append(value)
        }
        return values
    }

    static func yamlLine(_ error: YamlError) -> Int {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _):
            return mark.line
        default:
            return 1
        }
    }

    static func yamlProblem(_ error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _):
            return problem
        default:
            return "\(error)"
        }
    }
}
