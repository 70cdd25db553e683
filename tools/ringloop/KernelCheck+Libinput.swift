import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// libinput 1.22 (Debian's `libinput-tools`, put in the guest by `tools/kernel-stage`) as
/// the reference the booted-kernel checks compare the chain with: `libinput debug-events`
/// reads a uinput device's node through libinput's path backend while a recording plays,
/// and its lines are parsed into ``LibinputEvent``s.
///
/// No udevd runs in the guest. libinput accepts only a node that udev has initialized and
/// tagged (`ID_INPUT=1` and the `ID_INPUT_*` of its kind) and reads its settings from udev
/// properties (`LIBINPUT_CALIBRATION_MATRIX`, `MOUSE_DPI`…), so a check writes the node's
/// udev database entry itself (``UdevDatabaseEntry``), as udevd would, before libinput
/// opens the node; libudev reads it as udevd's.
///
/// Other checks use
/// ``Libinput/replay(_:udev:options:speed:chainConfiguration:context:beforePlaying:)``:
/// the recording through a new uinput device, read by libinput and by the chain, both
/// results returned.
enum Libinput {
    /// The dispatcher, which runs `/usr/libexec/libinput/libinput-debug-events`.
    static let command = "/usr/bin/libinput"

    /// Whether libinput's tools are here (the guest of `tools/kernel-stage`).
    static var isInstalled: Bool { access(command, X_OK) == 0 }

    /// How a recording is played for libinput.
    enum Speed {
        /// At the recorded pace: what libinput's timing-dependent parts (pointer
        /// acceleration, debouncing, tapping, palm and thumb timeouts) were made for.
        case recorded
        /// At `factor` times the recorded pace (gaps that libinput times, a button's
        /// debouncing, 25 ms, must stay longer than its timeouts).
        case scaled(Double)
        /// Without the recorded gaps, as fast as libinput and the chain keep up (half a
        /// node buffer at a time): for checks of positions and codes only.
        case asFastAsReadersKeepUp
    }

    /// What one replay gave.
    struct Replayed {
        /// The uinput node the recording played through.
        var node: String
        /// libinput's lines.
        var libinput: LibinputReading
        /// The chain's events for the device (its addition and removal included).
        var chain: [HIDEvent]
        /// The device as the chain described it.
        var info: HIDDeviceInfo?
        /// The udev properties libinput (and a chain made for the replay) were given.
        var udev: [String: String]
        /// Events the node gave each reader.
        var eventsAtNode: Int
        /// What `beforePlaying` returned.
        var prepared: String
    }

    /// The `ID_INPUT_*` properties udev's `input_id` builtin gives a device with this
    /// description, from the chain's classification (which follows the same rules):
    /// `ID_INPUT=1` and one property per role.
    static func inputProperties(of description: InputDeviceDescription) -> [String: String] {
        var properties = ["ID_INPUT": "1"]
        let names: [HIDDeviceClass: [String]] = [
            .keyboard: ["ID_INPUT_KEYBOARD", "ID_INPUT_KEY"], .pointer: ["ID_INPUT_MOUSE"], .touchpad: ["ID_INPUT_TOUCHPAD"],
            .touchscreen: ["ID_INPUT_TOUCHSCREEN"], .tablet: ["ID_INPUT_TABLET"], .tabletPad: ["ID_INPUT_TABLET_PAD"],
            .gamepad: ["ID_INPUT_JOYSTICK"], .joystick: ["ID_INPUT_JOYSTICK"], .switch: ["ID_INPUT_SWITCH"],
            .motion: ["ID_INPUT_ACCELEROMETER"], .buttons: ["ID_INPUT_KEY"],
        ]
        for role in HIDDeviceInfo.roles(codes: description.codes, properties: description.properties) {
            for name in names[role] ?? [] { properties[name] = "1" }
        }
        return properties
    }

    /// Replays `recording` through a new uinput device read at once by `libinput
    /// debug-events --show-keycodes` (with `options`) and by the chain, and returns what
    /// both read. The node's udev entry holds the `ID_INPUT_*` properties of its kind
    /// (``inputProperties(of:)``) and `udev` on top (a value of "" removes one).
    ///
    /// The chain is the command's own (`context.chain`), which attaches the node as soon
    /// as it appears and may do so before the udev entry is written; with
    /// `chainConfiguration`, a chain of that configuration is made for the replay after
    /// the entry is written (so it reads the same udev properties as libinput) and
    /// stopped after it.
    ///
    /// `beforePlaying` runs once the chain has attached the device and every reader is
    /// there, the udev entry written (a check sets the chain's screens there: the
    /// screen-mapping stage reads the node's udev properties again); what it returns is
    /// kept in ``Replayed/prepared``.
    ///
    /// Bounded: libinput must show the device within 30 s, the replay runs for the
    /// recording's length (or as fast as the readers keep up), then libinput and the chain
    /// get at most 20 s to read every event the node gave, libinput half a second of quiet
    /// for its timers, and libinput is interrupted.
    static func replay(
        _ recording: Recording, udev: [String: String] = [:], options: [String] = [], speed: Speed = .recorded,
        chainConfiguration: HIDEventSystem.Configuration? = nil, context: CheckContext,
        beforePlaying: ((ChainWatch, HIDDeviceID) -> String)? = nil
    ) -> Result<Replayed, LibinputFailure> {
        guard let description = recording.description else { return .failure(LibinputFailure("the recording describes no device")) }
        guard isInstalled else { return .failure(LibinputFailure("\(command) is missing (tools/kernel-stage puts it in the guest)")) }
        let mark = context.chain.mark()
        let host: VirtualDeviceHost
        let device: any VirtualInputDevice
        do {
            host = try VirtualDeviceHost(backend: .uinput)
            device = try host.create(description, forReplay: true)
        } catch {
            return .failure(LibinputFailure("uinput: \(error)"))
        }
        defer { host.close() }
        var properties = inputProperties(of: description)
        for (key, value) in udev { properties[key] = value.isEmpty ? nil : value }
        let entry: UdevDatabaseEntry
        do { entry = try UdevDatabaseEntry(node: device.nodePath, properties: properties) } catch {
            return .failure(error)
        }
        defer { entry.remove() }
        let session: LibinputDebugEvents
        do { session = try LibinputDebugEvents(node: device.nodePath, options: options) } catch { return .failure(error) }
        var ownChain: ChainWatch?
        if let chainConfiguration {
            do { ownChain = try ChainWatch(configuration: chainConfiguration) } catch {
                session.stop()
                return .failure(LibinputFailure("the chain for the replay: \(error)"))
            }
        }
        defer { ownChain?.stop() }
        let chain = ownChain ?? context.chain
        guard let id = chain.waitForDevice(atPath: device.nodePath, after: ownChain == nil ? mark : 0) else {
            session.stop()
            return .failure(LibinputFailure("the chain never attached \(device.nodePath)"))
        }
        let readers = ownChain == nil ? 2 : 3
        guard device.waitForReaders(readers, timeout: .seconds(30)) else {
            session.stop()
            return .failure(LibinputFailure("\(device.nodePath) has \(device.readerCount) readers, not \(readers)"))
        }
        let prepared = beforePlaying?(chain, id) ?? ""
        let atNode = expectedAtNode(recording).events.count
        let chainBase = chain.rawEventsRead
        do {
            switch speed {
            case .recorded: try Replay.play(recording, to: device, speed: .recorded)
            case .scaled(let factor): try Replay.play(recording, to: device, speed: .scaled(factor))
            case .asFastAsReadersKeepUp:
                try CorpusReplay.paced([recording], [device], progress: [{ session.eventsRead }], chain: chain, chainBase: chainBase)
            }
        } catch {
            session.stop()
            return .failure(LibinputFailure("replay: \(error)"))
        }
        let chainRead = waitUntil(.seconds(20)) { chain.rawEventsRead - chainBase >= atNode }
        let reading = session.finish(expectedEvents: atNode)
        host.close()
        waitUntil(.seconds(10)) { chain.wasRemoved(id) }
        if !chainRead {
            return .failure(LibinputFailure("the chain read \(chain.rawEventsRead - chainBase) of \(atNode) events within 20 s"))
        }
        return .success(
            Replayed(
                node: device.nodePath, libinput: reading, chain: chain.events(of: id), info: chain.info(id), udev: properties,
                eventsAtNode: atNode, prepared: prepared))
    }
}

/// Why a libinput run gave nothing to compare.
struct LibinputFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A node's entry in udev's database (`/run/udev/data/cMAJOR:MINOR`), written as udevd
/// writes it: `I:` (when it was initialized: libudev then reports the device initialized,
/// which libinput's path backend waits for) and one `E:KEY=value` line per property.
/// Removed by ``remove()`` (node numbers are reused by the next device).
final class UdevDatabaseEntry {
    static let folder = "/run/udev/data"
    let path: String

    /// Writes the entry of `node` (`/dev/input/eventN`, its numbers from sysfs).
    init(node: String, properties: [String: String]) throws(LibinputFailure) {
        let name = node.split(separator: "/").last.map(String.init) ?? node
        guard let numbers = fileText("/sys/class/input/\(name)/dev")?.trimmed, !numbers.isEmpty else {
            throw LibinputFailure("\(node): no /sys/class/input/\(name)/dev")
        }
        path = "\(Self.folder)/c\(numbers)"
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        var text = "I:\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)\n"
        for key in properties.keys.sorted() { text += "E:\(key)=\(properties[key]!)\n" }
        text += "V:1\n"
        for folder in ["/run/udev", Self.folder] { mkdir(folder, 0o755) }
        // Written whole, then renamed into place, as udevd writes it: libudev counts any
        // entry, even an empty one, as initialized, so a reader must never see it half
        // written (a chain waiting for udev reads it when the rename lands).
        let temporary = "\(Self.folder)/.#c\(numbers).\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw LibinputFailure("\(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else {
            let failure = LibinputFailure("\(path): \(String(cString: strerror(errno)))")
            unlink(temporary)
            throw failure
        }
    }

    func remove() { unlink(path) }
}

/// `libinput debug-events --device NODE --show-keycodes OPTIONS` running, its output in a
/// file (the tool flushes after each batch of events, so the file follows it live).
final class LibinputDebugEvents {
    let node: String
    private let child: ChildCommand
    private let output: String
    private let errors: String
    /// Bytes it had read (`rchar`) when it showed the device: its reads of the node count
    /// from there (24 bytes an event; its timers' 8-byte reads count too, which the quiet
    /// wait in ``finish(expectedEvents:quiet:timeout:)`` makes up for).
    private var readBase = 0
    private static let counter = ThreadLock<Int>(0)

    /// Starts it on `node` (whose udev entry must be written) and waits, at most
    /// `timeout`, until it shows the device (`DEVICE_ADDED`).
    init(node: String, options: [String] = [], timeout: Duration = .seconds(30)) throws(LibinputFailure) {
        self.node = node
        let number = Self.counter.withLock { value in
            value += 1
            return value
        }
        output = "/tmp/libinput-\(getpid())-\(number).out"
        errors = output + ".err"
        let arguments = ["debug-events", "--device", node, "--show-keycodes"] + options
        guard let child = ChildCommand(arguments, executable: Libinput.command, output: output, errors: errors) else {
            throw LibinputFailure("cannot start \(Libinput.command)")
        }
        self.child = child
        var added = false
        waitUntil(timeout, poll: .milliseconds(10)) {
            added = fileText(output)?.contains("DEVICE_ADDED") ?? false
            return added || !child.isRunning
        }
        guard added else {
            let running = child.isRunning
            stop()
            let said = ((fileText(output) ?? "") + (fileText(errors) ?? "")).trimmed
            throw LibinputFailure(
                "libinput debug-events \(options.joined(separator: " ")) did not show \(node)"
                    + (running ? " within \(timeout)" : " (it ended)") + (said.isEmpty ? "" : ": " + said.prefix(400)))
        }
        readBase = child.bytesRead
    }

    /// Events it has read from the node since it showed the device (see `readBase`).
    var eventsRead: Int { max(0, child.bytesRead - readBase) / InputEvent.size }

    /// Waits until it has read `expectedEvents` from the node and neither its reads nor its
    /// output have changed for `quiet` (its timers have fired: tapping, debouncing), at
    /// most `timeout` in all; then interrupts it (it prints what it holds and ends) and
    /// parses its output.
    func finish(expectedEvents: Int, quiet: Duration = .milliseconds(500), timeout: Duration = .seconds(20)) -> LibinputReading {
        let deadline = MonotonicInstant.now + timeout
        let readAll = waitUntil(timeout, poll: .milliseconds(5)) { eventsRead >= expectedEvents || !child.isRunning }
        var last = (child.bytesRead, fileSize(output))
        var stableSince = MonotonicInstant.now
        waitUntil(max(deadline - MonotonicInstant.now, .zero), poll: .milliseconds(20)) {
            let now = (child.bytesRead, fileSize(output))
            if now != last {
                last = now
                stableSince = MonotonicInstant.now
            }
            return MonotonicInstant.now - stableSince >= quiet || !child.isRunning
        }
        let read = eventsRead
        stop()
        let text = fileText(output) ?? ""
        var reading = LibinputReading(text: text)
        reading.eventsRead = read
        reading.readEverything = readAll && read >= expectedEvents
        reading.errors = (fileText(errors) ?? "").trimmed
        unlink(output)
        unlink(errors)
        return reading
    }

    /// Interrupts it and waits (at most 10 s, then kills it).
    func stop() {
        child.interrupt()
        if !waitUntil(.seconds(10), poll: .milliseconds(5), { !child.isRunning }) {
            child.forceEnd()
        }
        _ = child.wait()
    }

    private func fileSize(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : -1
    }
}

/// What `libinput debug-events` printed, parsed.
struct LibinputReading {
    /// The device as libinput added it (its `DEVICE_ADDED` line: name, seat, group,
    /// capabilities `cap:kptgTPS`, size in mm, options).
    var added: LibinputEvent?
    /// Every event after the device's addition, in order.
    var events: [LibinputEvent] = []
    /// Lines that are not events (libinput's own messages).
    var messages: [String] = []
    /// Events it read from the node.
    var eventsRead = 0
    /// Whether it read every event the node gave before it was stopped.
    var readEverything = false
    /// Its standard error.
    var errors = ""

    init(text: String) {
        for line in text.split(separator: "\n") {
            guard let event = LibinputEvent(line: line) else {
                if !line.trimmed.isEmpty { messages.append(String(line)) }
                continue
            }
            if event.type == "DEVICE_ADDED" && added == nil {
                added = event
            } else {
                events.append(event)
            }
        }
    }

    /// The capabilities libinput gave the device (`k` keyboard, `p` pointer, `t` touch,
    /// `g` gesture, `T` tablet tool, `P` tablet pad, `S` switch).
    var capabilities: String {
        guard let text = added?.text, let range = text.firstRange(of: "cap:") else { return "" }
        return String(text[range.upperBound...].prefix { $0.isLetter })
    }

    /// A short account for a check's line: the addition, counts by type, messages.
    var summary: String {
        var counts: [String: Int] = [:]
        for event in events { counts[event.type, default: 0] += 1 }
        let byType = counts.keys.sorted().map { "\($0) \(counts[$0]!)" }.joined(separator: ", ")
        return "libinput cap:\(capabilities), read \(eventsRead) events, \(byType.isEmpty ? "no events" : byType)"
            + (messages.isEmpty ? "" : "; said: \(messages.prefix(3).joined(separator: " | "))")
    }
}

/// One line of `libinput debug-events` (libinput 1.22's format: the device's sysname,
/// the event type, the time since its first event, then the type's values).
struct LibinputEvent: CustomStringConvertible {
    /// The node's name (`event4`).
    var device: String
    /// libinput's name of the event type (`POINTER_MOTION`, `KEYBOARD_KEY`, `TOUCH_DOWN`…).
    var type: String
    /// Seconds after libinput's first event (none for a device's addition or removal).
    var time: Double?
    /// The values as printed.
    var text: String

    init?(line: Substring) {
        // "%c%-7s  %-23s ": '-' when the device differs from the previous line's, else ' '.
        guard let first = line.first, first == "-" || first == " " else { return nil }
        let fields = line.dropFirst().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard fields.count >= 1, fields[0].hasPrefix("event") else { return nil }
        device = String(fields[0])
        let rest = fields.count > 1 ? fields[1].drop { $0 == " " } : ""
        let typeEnd = rest.firstIndex(of: " ") ?? rest.endIndex
        type = String(rest[..<typeEnd])
        guard !type.isEmpty, type.allSatisfy({ $0.isUppercase || $0 == "_" }) else { return nil }
        var values = rest[typeEnd...].drop { $0 == " " }
        // "%+6.3fs\t"
        if let tab = values.firstIndex(of: "\t"), values[..<tab].hasSuffix("s"),
            let seconds = Double(values[..<tab].trimmed.dropLast())
        {
            // libinput 1.22 prints a time below zero (its first event's, −2 ms) as an
            // unsigned count of milliseconds: 4294967.294 s.
            time = seconds > 4_000_000 ? seconds - 4_294_967.296 : seconds
            values = values[values.index(after: tab)...]
        }
        text = String(values).trimmed
    }

    /// Every number in the values, in order (names with digits, `KEY_1`, excluded; `mm`
    /// dropped).
    var numbers: [Double] {
        text.split(whereSeparator: { " /()*,:\t".contains($0) }).compactMap { token in
            guard let first = token.first, first.isNumber || first == "-" || first == "+" || first == "." else { return nil }
            return Double(token.hasSuffix("mm") ? token.dropLast(2) : token)
        }
    }

    /// A pointer button or keyboard key: its code and whether it went down
    /// (`POINTER_BUTTON`, `KEYBOARD_KEY`; keys need `--show-keycodes`, which
    /// ``LibinputDebugEvents`` passes).
    var press: (code: UInt16, pressed: Bool)? {
        guard type == "POINTER_BUTTON" || type == "KEYBOARD_KEY" || type == "TABLET_PAD_KEY",
            let open = text.firstIndex(of: "("), let close = text.firstIndex(of: ")"), open < close,
            let code = UInt16(text[text.index(after: open)..<close])
        else { return nil }
        let state = text[text.index(after: close)...].trimmed
        return (code, state.hasPrefix("pressed"))
    }

    /// Relative motion (`POINTER_MOTION`): accelerated, then unaccelerated (normalized
    /// to 1000 dpi).
    var motion: (dx: Double, dy: Double, unacceleratedDX: Double, unacceleratedDY: Double)? {
        let values = numbers
        guard type == "POINTER_MOTION", values.count == 4 else { return nil }
        return (values[0], values[1], values[2], values[3])
    }

    /// Scrolling (`POINTER_SCROLL_WHEEL`, `_FINGER`, `_CONTINUOUS`): each axis's value
    /// (libinput's: positive is down and right) and its v120 (wheels only), `nil` for an
    /// axis the event does not have; the source (`wheel`, `finger`, `continuous`).
    var scroll: (vertical: Double?, vertical120: Double, horizontal: Double?, horizontal120: Double, source: String)? {
        guard type.hasPrefix("POINTER_SCROLL_"), let split = text.firstRange(of: " horiz ") else { return nil }
        let verticalPart = text[..<split.lowerBound]
        let horizontalPart = text[split.upperBound...]
        func values(_ part: Substring) -> [Double] {
            part.split(whereSeparator: { " /()*".contains($0) }).compactMap { Double($0) }
        }
        let vertical = values(verticalPart)
        let horizontal = values(horizontalPart)
        guard vertical.count == 2, horizontal.count >= 2, let open = horizontalPart.lastIndex(of: "("),
            let close = horizontalPart.lastIndex(of: ")"), open < close
        else { return nil }
        return (
            verticalPart.contains("*") ? vertical[0] : nil, vertical[1],
            horizontalPart[..<open].contains("*") ? horizontal[0] : nil, horizontal[1],
            String(horizontalPart[horizontalPart.index(after: open)..<close])
        )
    }

    /// A touch (`TOUCH_DOWN`, `TOUCH_MOTION`, `TOUCH_UP`, `TOUCH_CANCEL`): its slot and
    /// seat slot; for down and motion its position on a screen of 100 × 100
    /// (`libinput_event_touch_get_x_transformed`: the device's normalized position through
    /// its calibration matrix, times 100) and in mm from the device's origin
    /// (`libinput_event_touch_get_x`).
    var touch: (slot: Int, seatSlot: Int, screenX: Double?, screenY: Double?, millimetresX: Double?, millimetresY: Double?)? {
        guard type.hasPrefix("TOUCH_"), type != "TOUCH_FRAME" else { return nil }
        let values = numbers
        guard values.count >= 2 else { return nil }
        if values.count >= 6 { return (Int(values[0]), Int(values[1]), values[2], values[3], values[4], values[5]) }
        return (Int(values[0]), Int(values[1]), nil, nil, nil, nil)
    }

    var description: String { "\(device) \(type) \(time.map { Format.fixed($0, 3) + "s " } ?? "")\(text)" }
}

/// The checks that compare the chain with libinput on the booted kernel.
enum LibinputChecks {
    static func run(_ context: CheckContext) {
        mouse(context)
        touchscreenCalibration(context)
    }

    /// The calibration matrix every touchscreen check gives libinput and the chain (a
    /// quarter turn with scaling and offsets: every one of the six values counts).
    static let calibration = "0 -0.9 0.95 1.1 0 -0.05"

    /// Real touchscreens' recordings (devices/real: an Atmel maXTouch and the EP0430M09
    /// panel of the issue, four fingers dragged down) played through uinput, the node's
    /// udev entry holding `LIBINPUT_CALIBRATION_MATRIX` (``calibration``). libinput maps
    /// each touch through it onto a screen of 100 × 100 (`debug-events` prints
    /// `libinput_event_touch_get_x_transformed(touch, 100)`); the chain reads the same
    /// udev property (its screen-mapping stage, through libudev) and maps onto a screen of
    /// 1920 × 1080, given back here in percent. Every touch's down position and its moves
    /// (repeats of one position dropped on both sides) must agree within what libinput's
    /// arithmetic in whole device units allows, as measured: it normalizes over
    /// max − min + 1 units (the chain over max − min: one device unit through the matrix),
    /// and it applies the matrix in device units and keeps the calibrated position as
    /// integers (truncated: one more device unit of the axis; the Atmel's first touch,
    /// 415/107, calibrates to 599.5/249.9 and prints as 599/249 of 800/480), plus the
    /// 0.005 of its two decimals.
    static func touchscreenCalibration(_ context: CheckContext) {
        let folder = "\(context.devices)/real/evemu-devices/touchscreens/"
        let files = [
            ("atmel", "Atmel maXTouch Touchscreen.4-finger-drag-down.events"),
            ("ep0430m09", "EP0430M09.4-finger-drag-down.events"),
        ]
        for (short, file) in files {
            let name = "libinput/touchscreen-calibration/\(short)"
            guard context.report.wants(name) else { continue }
            // A recording that cannot be loaded fails its own check only: the next one is
            // still compared.
            guard let recording = context.loadRealRecording(name, folder: folder, file: file, description: nil) else {
                continue
            }
            let (agree, detail) = touchscreen(recording, file: file, context: context)
            context.report.check(name, agree, detail)
        }
    }

    /// One touchscreen recording through libinput and the chain; whether they agree, and
    /// the line that says so.
    static func touchscreen(_ recording: Recording, file: String, context: CheckContext) -> (Bool, String) {
        let screen: ScreenDescription
        let matrix: CalibrationMatrix
        do {
            screen = try ScreenDescription(width: 1920, height: 1080)
            matrix = try CalibrationMatrix(parsing: calibration)
        } catch {
            return (false, "\(error)")
        }
        let result = Libinput.replay(
            recording, udev: ["LIBINPUT_CALIBRATION_MATRIX": calibration], speed: .recorded, context: context
        ) { chain, id in
            let screens = DeviceSettingsResolver(screens: [screen])
            chain.setScreens(screens)
            guard let info = chain.info(id), let mapping = chain.screenMapping(for: id) else { return "no screen" }
            let line = ScreenMappingReport(device: info, screens: screens).line
            return mapping.calibration == matrix ? line : "calibration \(mapping.calibration), not udev's (\(line))"
        }
        context.chain.setScreens(nil)
        let replayed: Libinput.Replayed
        switch result {
        case .success(let value): replayed = value
        case .failure(let failure): return (false, failure.description)
        }
        // Each touch: its positions in percent of the screen, in order, repeats dropped.
        typealias Track = [(x: Double, y: Double)]
        func add(_ point: (x: Double, y: Double), to track: inout Track) {
            if let last = track.last, last.x == point.x, last.y == point.y { return }
            track.append(point)
        }
        var libinputTracks: [Track] = []
        var open: [Int: Int] = [:]
        for event in replayed.libinput.events {
            guard let touch = event.touch else { continue }
            switch event.type {
            case "TOUCH_DOWN":
                open[touch.slot] = libinputTracks.count
                libinputTracks.append([])
                fallthrough
            case "TOUCH_MOTION":
                if let index = open[touch.slot], let x = touch.screenX, let y = touch.screenY { add((x, y), to: &libinputTracks[index]) }
            default: open[touch.slot] = nil
            }
        }
        var chainTracks: [Track] = []
        var chainOpen: [Int16: Int] = [:]
        var unmapped = 0
        for event in replayed.chain {
            guard case .digitizer(let frame) = event.payload else { continue }
            for contact in frame.contacts {
                switch contact.phase {
                case .began:
                    chainOpen[contact.slot] = chainTracks.count
                    chainTracks.append([])
                    fallthrough
                case .moved:
                    guard let location = contact.screenLocation else {
                        unmapped += 1
                        continue
                    }
                    let point = (location.x / Double(screen.width) * 100, location.y / Double(screen.height) * 100)
                    if let index = chainOpen[contact.slot] { add(point, to: &chainTracks[index]) }
                case .ended, .cancelled: chainOpen[contact.slot] = nil
                case .stationary: break
                }
            }
        }
        let axes = replayed.info?.description.absoluteAxes
        let rangeX = Double((axes?[Evdev.ABS_MT_POSITION_X]).map { $0.maximum - $0.minimum } ?? 1)
        let rangeY = Double((axes?[Evdev.ABS_MT_POSITION_Y]).map { $0.maximum - $0.minimum } ?? 1)
        let toleranceX = (abs(matrix.a) / rangeX + abs(matrix.b) / rangeY + 1 / (rangeX + 1)) * 100 + 0.005
        let toleranceY = (abs(matrix.d) / rangeX + abs(matrix.e) / rangeY + 1 / (rangeY + 1)) * 100 + 0.005
        var problems: [String] = []
        if !replayed.libinput.readEverything {
            problems.append("libinput read \(replayed.libinput.eventsRead) of \(replayed.eventsAtNode) events")
        }
        if !replayed.prepared.hasPrefix(recording.description!.name) { problems.append("the chain's mapping: \(replayed.prepared)") }
        if unmapped > 0 { problems.append("\(unmapped) of the chain's contacts had no screen location (\(replayed.prepared))") }
        if libinputTracks.count != chainTracks.count {
            problems.append("libinput saw \(libinputTracks.count) touches, the chain \(chainTracks.count)")
        }
        var worst = (x: 0.0, y: 0.0)
        var positions = 0
        for (index, (ours, theirs)) in zip(chainTracks, libinputTracks).enumerated() {
            if ours.count != theirs.count {
                problems.append("touch \(index): libinput \(theirs.count) positions, the chain \(ours.count)")
                continue
            }
            for (step, (a, b)) in zip(ours, theirs).enumerated() {
                positions += 1
                worst = (max(worst.x, abs(a.x - b.x)), max(worst.y, abs(a.y - b.y)))
                if abs(a.x - b.x) > toleranceX || abs(a.y - b.y) > toleranceY {
                    problems.append(
                        "touch \(index) position \(step): libinput \(Format.fixed(b.x, 2))/\(Format.fixed(b.y, 2)),"
                            + " the chain \(Format.fixed(a.x, 3))/\(Format.fixed(a.y, 3))")
                    break
                }
            }
        }
        if positions == 0 { problems.append("no positions to compare (\(replayed.libinput.summary))") }
        if !problems.isEmpty { return (false, problems.prefix(4).joined(separator: "; ")) }
        return (
            true,
            "\(file) through \(replayed.node) with LIBINPUT_CALIBRATION_MATRIX=\"\(calibration)\": \(chainTracks.count) touches,"
                + " \(positions) positions equal within \(Format.fixed(toleranceX, 3))/\(Format.fixed(toleranceY, 3)) % of the"
                + " screen (largest difference \(Format.fixed(worst.x, 3))/\(Format.fixed(worst.y, 3))); the chain: \(replayed.prepared)"
        )
    }

    /// A real mouse (a Logitech Ultrathin Touch Mouse's recording: buttons held long
    /// enough for the kernel's key repeat, motion, both wheels) played at three times the
    /// recorded pace (its shortest press, 124 ms, stays past libinput's debouncing) through
    /// uinput and read by libinput and the chain: the same button presses
    /// and releases in order, the same relative motion frame by frame (libinput's
    /// unaccelerated deltas, normalized to 1000 dpi, which is its default for a mouse
    /// without `MOUSE_DPI`) and the same wheel clicks (libinput's v120 over 120, its
    /// vertical sign the other way round).
    static func mouse(_ context: CheckContext) {
        let name = "libinput/mouse"
        guard context.report.wants(name) else { return }
        guard
            let recording = context.loadRealRecording(
                name, folder: "\(context.devices)/real/evemu-devices/mice/", file: "Ultrathin Touch Mouse.events",
                description: nil)
        else { return }
        let replayed: Libinput.Replayed
        switch Libinput.replay(recording, speed: .scaled(3), context: context) {
        case .success(let result): replayed = result
        case .failure(let failure): return context.report.fail(name, failure.description)
        }
        let reading = replayed.libinput
        var libinputButtons: [String] = []
        var libinputMotion: [String] = []
        var libinputScroll: [String] = []
        for event in reading.events {
            if let press = event.press, event.type == "POINTER_BUTTON" {
                libinputButtons.append("\(press.code) \(press.pressed ? "down" : "up")")
            } else if let motion = event.motion {
                libinputMotion.append("\(Int(motion.unacceleratedDX.rounded())),\(Int(motion.unacceleratedDY.rounded()))")
            } else if let scroll = event.scroll, scroll.source == "wheel" {
                libinputScroll.append("\(Format.fixed(-scroll.vertical120 / 120, 2)),\(Format.fixed(scroll.horizontal120 / 120, 2))")
            }
        }
        var chainButtons: [String] = []
        var chainMotion: [String] = []
        var chainScroll: [String] = []
        for event in replayed.chain {
            switch event.payload {
            case .button(let button): chainButtons.append("\(button.code) \(button.isDown ? "down" : "up")")
            case .pointerMotion(let motion): chainMotion.append("\(motion.dx),\(motion.dy)")
            case .scroll(let scroll):
                chainScroll.append("\(Format.fixed(scroll.vertical, 2)),\(Format.fixed(scroll.horizontal, 2))")
            default: break
            }
        }
        var problems: [String] = []
        if !reading.readEverything { problems.append("libinput read \(reading.eventsRead) of \(replayed.eventsAtNode) events") }
        if let difference = firstDifference(libinputButtons, chainButtons) { problems.append("buttons \(difference)") }
        if let difference = firstDifference(libinputMotion, chainMotion) { problems.append("motion \(difference)") }
        if let difference = firstDifference(libinputScroll, chainScroll) { problems.append("wheel \(difference)") }
        if libinputButtons.isEmpty || libinputMotion.isEmpty || libinputScroll.isEmpty {
            problems.append("the recording gave libinput \(reading.summary)")
        }
        context.report.check(
            name, problems.isEmpty,
            problems.isEmpty
                ? "\(replayed.node), \(replayed.eventsAtNode) events at the node: libinput and the chain agree on"
                    + " \(libinputButtons.count) button presses and releases, \(libinputMotion.count) motions,"
                    + " \(libinputScroll.count) wheel clicks (\(reading.summary))"
                : problems.prefix(4).joined(separator: "; ") + " (libinput first, the chain second)")
    }
}
