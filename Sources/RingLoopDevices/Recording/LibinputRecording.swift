import RingLoopEvdev

/// Reads the YAML that `libinput record` writes (format version 1), what libinput's
/// developers ask for in bug reports: each device's `evdev` description (name, id,
/// codes, absinfo, properties) and its `events`, a list of frames of
/// `[sec, usec, type, code, value]`. Several devices in one file share one clock.
///
/// Also read, because people paste them into bug reports: a file's `devices:` list or
/// one device (`- node:` … with `evdev:` and `events:`) without the file's header, and
/// fragments of events only (an `events:` list, or its `- evdev:` items), which replay
/// onto a description given separately (``Recording/load(description:events:)``).
/// Entries of other kinds in the events list (`- libinput:` events libinput itself
/// printed) and the `hid:`, `udev:` and `quirks:` sections are skipped. As libinput
/// writes them, `codes:` lists the device's event types with their codes (type 0 lists
/// `SYN_*` codes, not types; type 20 (`EV_REP`) means kernel key repeat).
public enum LibinputRecording {
    /// Parses `libinput record` YAML into one recording per device, in file order (one
    /// recording without a description for an events-only fragment).
    public static func parse(_ text: String, file: String = "<text>") throws(RecordingError) -> [Recording] {
        let parsed: YAMLNode?
        do { parsed = try YAMLReader.parse(text) } catch {
            throw .malformed(file: file, line: error.line, message: "not valid YAML: \(error.problem)")
        }
        guard let root = parsed else { throw .malformed(file: file, line: 1, message: "empty YAML document") }
        let reader = Reader(file: file)
        if let sequence = root.sequence {
            // A pasted list: of devices (`- node:`/`- evdev:` with a description) or of
            // event frames (`- evdev: [[…], …]`).
            if sequence.contains(where: { $0.mapping?["evdev"]?.mapping != nil }) {
                return try sequence.map { node throws(RecordingError) in try reader.device(node) }
            }
            return [try reader.eventsOnly(root)]
        }
        guard let top = root.mapping else {
            throw reader.fail(root, "expected libinput record YAML: a mapping with version: and devices:, or an events: list")
        }
        if let version = top["version"] {
            guard let number = version.int else { throw reader.fail(version, "expected 'version: 1'") }
            guard number == 1 else {
                throw reader.fail(version, "unsupported libinput record version \(number); expected 1")
            }
        }
        if let devices = top["devices"] {
            guard let list = devices.sequence, !list.isEmpty else {
                throw reader.fail(devices, "expected 'devices:' with at least one device")
            }
            return try list.map { node throws(RecordingError) in try reader.device(node) }
        }
        if top["evdev"] != nil { return [try reader.device(root)] }
        if let events = top["events"] { return [try reader.eventsOnly(events)] }
        throw reader.fail(
            root,
            top["version"] == nil
                ? "expected libinput record YAML: 'version: 1' and 'devices:', one device's 'evdev:', or an 'events:' list"
                : "expected 'devices:' with at least one device")
    }

    /// Turns YAML nodes into recordings, naming the file and line of what is wrong.
    struct Reader {
        let file: String

        func fail(_ node: YAMLNode?, _ message: String) -> RecordingError {
            .malformed(file: file, line: node?.line ?? 1, message: message)
        }

        func warning(_ node: YAMLNode?, _ message: String) -> RecordingWarning {
            RecordingWarning(file: file, line: node?.line ?? 1, message: message)
        }

        /// One entry of `devices:`: `evdev:` description and `events:`.
        func device(_ deviceNode: YAMLNode) throws(RecordingError) -> Recording {
            guard let device = deviceNode.mapping, let evdevNode = device["evdev"], let evdev = evdevNode.mapping else {
                throw fail(deviceNode, "expected a device with an 'evdev:' description")
            }
            var warnings: [RecordingWarning] = []
            guard let name = evdev["name"]?.string else { throw fail(evdevNode, "expected evdev 'name:'") }
            guard let id = evdev["id"]?.sequence, id.count == 4, let ids = intList(id), ids.allSatisfy({ 0...Int(UInt16.max) ~= $0 })
            else { throw fail(evdev["id"] ?? evdevNode, "expected 'id: [bus, vendor, product, version]' (0…65535)") }
            var codes: [UInt16: Set<UInt16>] = [:]
            var types: Set<UInt16> = [Evdev.EV_SYN]
            if let codesNode = evdev["codes"] {
                guard let codeMap = codesNode.mapping else { throw fail(codesNode, "expected 'codes:' mapping types to code lists") }
                for (typeNode, listNode) in codeMap {
                    guard let type = typeNode.int, 0...Int(Evdev.EV_MAX) ~= type else {
                        throw fail(typeNode, "expected an event type from 0 to \(Evdev.EV_MAX)")
                    }
                    guard let list = listNode.sequence, let values = intList(list), values.allSatisfy({ 0...Int(UInt16.max) ~= $0 }) else {
                        throw fail(listNode, "expected a list of codes for type \(type)")
                    }
                    types.insert(UInt16(type))
                    // EV_SYN lists SYN_* codes and EV_REP the REP_* codes: neither is a
                    // mask the kernel reports codes for.
                    guard type != Evdev.EV_SYN, type != Evdev.EV_REP else { continue }
                    guard let maximum = Evdev.maximumCode(ofType: UInt16(type)) else {
                        if !values.isEmpty {
                            warnings.append(warning(listNode, "codes of event type \(type) ignored: the kernel reports none for it"))
                        }
                        continue
                    }
                    let kept = values.filter { $0 <= Int(maximum) }
                    if kept.count != values.count {
                        warnings.append(warning(listNode, "codes above \(maximum) for type \(type) ignored: the kernel has none"))
                    }
                    if !kept.isEmpty { codes[UInt16(type)] = Set(kept.map { UInt16($0) }) }
                }
            }
            var axes: [UInt16: AbsoluteAxis] = [:]
            if let absinfoNode = evdev["absinfo"] {
                guard let absinfo = absinfoNode.mapping else { throw fail(absinfoNode, "expected 'absinfo:' mapping axes to ranges") }
                for (codeNode, infoNode) in absinfo {
                    guard let code = codeNode.int, 0...Int(Evdev.ABS_MAX) ~= code else {
                        throw fail(codeNode, "expected an axis code from 0 to \(Evdev.ABS_MAX)")
                    }
                    guard let info = infoNode.sequence, let v = intList(info), v.count == 5,
                        v.allSatisfy({ Int(Int32.min)...Int(Int32.max) ~= $0 })
                    else { throw fail(infoNode, "expected '[minimum, maximum, fuzz, flat, resolution]'") }
                    guard codes[Evdev.EV_ABS]?.contains(UInt16(code)) == true else {
                        warnings.append(warning(codeNode, "absinfo for axis \(code), which 'codes:' does not list for type 3: ignored"))
                        continue
                    }
                    axes[UInt16(code)] = AbsoluteAxis(
                        minimum: Int32(v[0]), maximum: Int32(v[1]), fuzz: Int32(v[2]), flat: Int32(v[3]), resolution: Int32(v[4]))
                }
            }
            var properties = Set<UInt16>()
            if let list = evdev["properties"]?.sequence {
                guard let values = intList(list), values.allSatisfy({ 0...Int(Evdev.INPUT_PROP_MAX) ~= $0 }) else {
                    throw fail(evdev["properties"], "expected a list of properties from 0 to \(Evdev.INPUT_PROP_MAX)")
                }
                properties = Set(values.map { UInt16($0) })
            }
            types.formUnion(codes.keys)
            codes[Evdev.EV_SYN] = types
            let description = InputDeviceDescription(
                name: name, busType: UInt16(ids[0]), vendor: UInt16(ids[1]), product: UInt16(ids[2]),
                version: UInt16(ids[3]), properties: properties, codes: codes, absoluteAxes: axes,
                keyRepeat: types.contains(Evdev.EV_REP) ? InputDeviceDescription.kernelDefaultKeyRepeat : nil)
            if let problem = description.problem { throw fail(evdevNode, problem) }
            let events = try self.events(device["events"])
            let node = device["node"]?.string
            return Recording(
                description: description, events: events, notes: node.map { ["libinput record of \($0)"] } ?? [],
                warnings: warnings)
        }

        /// A fragment with events and no description.
        func eventsOnly(_ node: YAMLNode) throws(RecordingError) -> Recording {
            Recording(description: nil, events: try events(node))
        }

        /// An `events:` list: frames `- evdev: [[sec, usec, type, code, value], …]`;
        /// entries of other kinds are skipped.
        func events(_ node: YAMLNode?) throws(RecordingError) -> [InputEvent] {
            guard let node else { return [] }
            if node.null != nil { return [] }
            guard let frames = node.sequence else { throw fail(node, "expected 'events:' to be a list of '- evdev:' frames") }
            var events: [InputEvent] = []
            for frameNode in frames {
                guard let evdevFrame = frameNode.mapping?["evdev"] else { continue }  // libinput-only entries
                guard let list = evdevFrame.sequence else { throw fail(evdevFrame, "expected a list of events") }
                for eventNode in list {
                    guard let fields = eventNode.sequence, let v = intList(fields), v.count == 5, v[0] >= 0,
                        v[0] <= Int(Int32.max) * 4, 0...999_999 ~= v[1], 0...Int(UInt16.max) ~= v[2], 0...Int(UInt16.max) ~= v[3],
                        Int(Int32.min)...Int(Int32.max) ~= v[4]
                    else { throw fail(eventNode, "expected '[sec, usec, type, code, value]'") }
                    events.append(
                        InputEvent(
                            seconds: Int64(v[0]), microseconds: Int32(v[1]), type: UInt16(v[2]), code: UInt16(v[3]),
                            value: Int32(v[4])))
                }
            }
            return events
        }
    }

    static func intList(_ nodes: [YAMLNode]) -> [Int]? {
        var values: [Int] = []
        for node in nodes {
            guard let value = node.int else { return nil }
            values.append(value)
        }
        return values
    }
}
