import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// Every recording replayed through uinput into the kernel and read back from its node:
/// by the chain (hotplug through inotify on devtmpfs, the ring or poll), by a reader as
/// `record` reads, and for the bundled recordings by the `record` command itself. The
/// events at the node must equal the recording's through the input core's filter (what a
/// FUSE node gives), event for event, and the chain's events must equal the same events
/// decoded in memory.
enum CorpusReplay {
    struct Entry {
        var name: String
        var load: () throws -> [Recording]
        /// At recorded speed (the keyboard: the kernel's own key repeat would show in
        /// its held keys), else as fast as the readers keep up.
        var recordedSpeed: Bool
        /// Also read by a `ringloop record` process.
        var recordCommand: Bool
    }

    static func entries(devices: String) -> [Entry] {
        var entries: [Entry] = []
        let bundled = folderEntries(devices)
        for file in bundled.sorted() where file.hasSuffix(".evemu") {
            entries.append(
                Entry(
                    name: file, load: { try Recording.loadAll(contentsOf: devices + "/" + file) },
                    recordedSpeed: file == "keyboard.evemu", recordCommand: true))
        }
        let gestures = folderEntries(devices + "/gestures")
        for file in gestures.sorted() where file.hasSuffix(".evemu") {
            entries.append(
                Entry(
                    name: "gestures/" + file, load: { try Recording.loadAll(contentsOf: devices + "/gestures/" + file) },
                    recordedSpeed: false, recordCommand: false))
        }
        let real = devices + "/real"
        let manifest = fileText(real + "/manifest.tsv") ?? ""
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 2 else { continue }
            let (file, description) = (fields[0], fields[1])
            entries.append(
                Entry(
                    name: "real/" + file,
                    load: {
                        description == "-"
                            ? try Recording.loadAll(contentsOf: real + "/" + file)
                            : [try Recording.load(description: real + "/" + description, events: real + "/" + file)]
                    }, recordedSpeed: false, recordCommand: false))
        }
        return entries
    }

    static func run(_ context: CheckContext) {
        var totals = (files: 0, devices: 0, events: 0, hid: 0)
        for entry in entries(devices: context.devices) where context.report.wants("replay/" + entry.name) {
            if let counts = replay(entry, context) {
                totals.files += 1
                totals.devices += counts.devices
                totals.events += counts.events
                totals.hid += counts.hid
            }
        }
        say(
            "kernel-check: \(totals.files) recordings, \(totals.devices) devices, \(totals.events) events at the nodes,"
                + " \(totals.hid) HID events compared")
    }

    /// Replays one file's devices; reports one result; returns the counts when it passed.
    static func replay(_ entry: Entry, _ context: CheckContext) -> (devices: Int, events: Int, hid: Int)? {
        let name = "replay/" + entry.name
        let started = MonotonicInstant.now
        let report = context.report
        let chain = context.chain
        let recordings: [Recording]
        do { recordings = try entry.load().filter { $0.description != nil } } catch {
            report.fail(name, "cannot load: \(error)")
            return nil
        }
        guard !recordings.isEmpty else { return nil }
        let mark = chain.mark()
        let host: VirtualDeviceHost
        var devices: [any VirtualInputDevice] = []
        do {
            host = try VirtualDeviceHost(backend: .uinput)
            for recording in recordings { devices.append(try host.create(recording.description!, forReplay: true)) }
        } catch {
            // A "fake MT" device (hid-input's ABS_MISC overflow reaching ABS_MT_SLOT,
            // with ABS_RESERVED set): its ABS_MT_SLOT is a plain axis on the real kernel
            // device, but uinput gives any ABS_MT_SLOT real slots, at most 64.
            let fakeMultitouch = recordings.contains {
                $0.description!.has(type: Evdev.EV_ABS, code: Evdev.ABS_MT_SLOT)
                    && $0.description!.has(type: Evdev.EV_ABS, code: Evdev.ABS_RESERVED)
            }
            if case .uinput(_, .invalidArgument) = error, fakeMultitouch {
                report.skip(
                    name,
                    "uinput cannot make this device: its ABS_MT_SLOT is a plain axis (fake MT, ABS_RESERVED set, as"
                        + " hid-input makes it), and uinput gives every ABS_MT_SLOT real slots (at most 64; dmesg: unreasonably"
                        + " large number of slots)")
            } else {
                report.fail(name, "uinput: \(error)")
            }
            return nil
        }
        defer { host.close() }
        var problems: [String] = []
        // Described back by the kernel as recorded.
        for (device, recording) in zip(devices, recordings) {
            if let difference = describedDifference(device.nodePath, recording.description!) {
                problems.append("\(device.nodePath) described back differently: \(difference)")
            }
        }
        let captures = devices.map { NodeCapture(path: $0.nodePath) }
        var recorders: [(process: ChildCommand?, file: String)] = []
        if entry.recordCommand {
            for device in devices {
                let file = "/tmp/record-\(getpid())-\(recorders.count).evemu"
                let process = ChildCommand(["record", device.nodePath, "-o", file], errors: file + ".log")
                if process == nil { problems.append("record: cannot start") }
                recorders.append((process, file))
            }
            // Ready once it says it records: its clock is set (a reader that sets its
            // clock after events were queued loses them to a SYN_DROPPED).
            for (_, file) in recorders
            where !waitUntil(
                .seconds(30), { fileText(file + ".log")?.contains("recording") ?? false })
            {
                problems.append("record never started recording")
            }
        }
        // How far each reader is through its node, in events: the capture's count, and a
        // `record` process's bytes read since it said it records.
        let recordBase = recorders.map { $0.process?.bytesRead ?? 0 }
        let progress: [() -> Int] = devices.indices.map { index in
            {
                let captured = captures[index]?.count ?? .max
                guard index < recorders.count, let process = recorders[index].process else { return captured }
                return min(captured, (process.bytesRead - recordBase[index]) / InputEvent.size)
            }
        }
        let readers = entry.recordCommand ? 3 : 2
        let waited = MonotonicInstant.now
        if !devices.waitForReaders(readers, timeout: .seconds(30)) {
            problems.append(
                "readers never came: \(devices.map { "\($0.nodePath) \($0.readerCount)" }) of \(readers) each")
        }
        let readersAfter = milliseconds(MonotonicInstant.now - waited)
        let ids = devices.map { chain.waitForDevice(atPath: $0.nodePath, after: mark) }
        let readPaths = Set(ids.compactMap { $0.flatMap(chain.readPath) }.map(\.rawValue)).sorted()
        let atNode = recordings.map(expectedAtNode)
        let expected = atNode.map(\.events)
        let chainBase = chain.rawEventsRead
        do {
            if entry.recordedSpeed {
                try Replay.play(Array(zip(recordings, devices)).map { ($0.0, $0.1) }, timeline: .sharedClock)
            } else {
                try paced(recordings, devices, progress: progress, chain: chain, chainBase: chainBase)
            }
        } catch {
            problems.append("replay: \(error)")
        }
        let total = expected.reduce(0) { $0 + $1.count }
        let drained = waitUntil(.seconds(20)) {
            zip(progress, expected).allSatisfy { $0.0() >= $0.1.count } && chain.rawEventsRead - chainBase >= total
        }
        if !drained { problems.append("the readers did not get every event within 20 s") }
        // Every reader has read every event: `record` stops on Ctrl-C and writes its file
        // before the devices go (a removed node answers ENODEV to what was still queued).
        for (process, _) in recorders { process?.interrupt() }
        for (process, _) in recorders where !waitUntil(.seconds(20), { !(process?.isRunning ?? false) }) {
            problems.append("record did not end on Ctrl-C")
        }
        host.close()
        for capture in captures { capture?.finish() }
        for (index, device) in devices.enumerated() {
            guard let id = ids[index] else {
                problems.append("\(device.nodePath): the chain never attached it")
                continue
            }
            if !waitUntil(.seconds(10), { chain.wasRemoved(id) }) {
                problems.append("\(device.nodePath): the chain saw no removal")
            }
        }
        var hidCount = 0
        for (index, recording) in recordings.enumerated() {
            let node = devices[index].nodePath
            // The frame the kernel sends at removal is read or not, as the reader's read
            // races the node's end.
            let want = expected[index].map(RawKey.init)
            let removal = atNode[index].atRemoval.map(RawKey.init)
            func matches(_ got: [RawKey]) -> String? {
                got.count > want.count && got == want + removal ? nil : firstDifference(got, want)
            }
            let got = (captures[index]?.captured ?? []).map(RawKey.init)
            if let difference = matches(got) { problems.append("\(node) raw events \(difference)") }
            if let id = ids[index], let info = chain.info(id) {
                let chainGot = chainTexts(chain.events(of: id))
                let description = recording.description!
                let chainWant = decodedInMemory(expected[index], info: info, description: description)
                hidCount += chainWant.count
                // With or without the frame sent at removal, as the chain read it or not.
                let withRemoval = decodedInMemory(expected[index] + atNode[index].atRemoval, info: info, description: description)
                if chainGot != withRemoval, let difference = firstDifference(chainGot, chainWant) {
                    problems.append("\(node) chain \(difference)")
                }
            }
            if index < recorders.count {
                let (process, file) = recorders[index]
                let status = process?.wait() ?? -1
                if let recorded = try? Recording.load(contentsOf: file) {
                    let fromRecord = recorded.events.map(RawKey.init)
                    if let difference = matches(fromRecord) { problems.append("\(node) record \(difference)") }
                } else {
                    problems.append("\(node): record wrote no recording (exit \(status))")
                }
                unlink(file)
                unlink(file + ".log")
            }
        }
        let events = expected.reduce(0) { $0 + $1.count }
        if problems.isEmpty {
            report.pass(
                name,
                "\(devices.count) device(s), \(events) events at the node, \(hidCount) HID events equal"
                    + " in \(Int(milliseconds(MonotonicInstant.now - started))) ms"
                    + " (readers in \(Int(readersAfter)) ms; read by \(readPaths.joined(separator: ",")))")
            return (devices.count, events, hidCount)
        }
        report.fail(name, problems.prefix(4).joined(separator: "; "))
        return nil
    }

    /// The events each reader's buffer holds on the kernel's node for this device
    /// (`evdev_compute_buffer_size`: eight packets of the input core's estimate,
    /// `input_estimate_events_per_packet`, at least 64, rounded up to a power of two;
    /// uinput hints 60 for multitouch without slots).
    static func kernelBufferSize(_ description: InputDeviceDescription) -> Int {
        let axes = description.codes[Evdev.EV_ABS] ?? []
        var slots = 0
        if axes.contains(Evdev.ABS_MT_SLOT) {
            slots = description.slotCount
        } else if let id = description.absoluteAxes[Evdev.ABS_MT_TRACKING_ID] {
            slots = min(max(Int(id.maximum) - Int(id.minimum) + 1, 2), 32)
        } else if axes.contains(Evdev.ABS_MT_POSITION_X) {
            slots = 2
        }
        var events = slots + 1
        for axis in axes { events += Evdev.isMultitouchAxis(axis) ? slots : 1 }
        events += (description.codes[Evdev.EV_REL] ?? []).count + 7
        if !axes.contains(Evdev.ABS_MT_SLOT) && axes.contains(Evdev.ABS_MT_POSITION_X) { events = max(events, 60) }
        var size = 64
        while size < events * 8 { size *= 2 }
        return size
    }

    /// Sends the recordings' frames in time order without waiting for the recorded gaps,
    /// but never more than the readers can hold: up to half a reader's buffer at a time,
    /// consecutive frames of one device in one `write(2)` (the readers wake once for
    /// them), then waits until every reader (`progress`, in events) and the chain have
    /// read them all (a reader further behind than its buffer would get `SYN_DROPPED`).
    static func paced(
        _ recordings: [Recording], _ devices: [any VirtualInputDevice], progress: [() -> Int], chain: ChainWatch,
        chainBase: Int
    ) throws(VirtualDeviceError) {
        let window = recordings.map { kernelBufferSize($0.description!) }.min()! / 2
        var schedule: [(time: Int64, device: Int, events: [InputEvent])] = []
        for (index, recording) in recordings.enumerated() {
            for frame in Replay.frames(of: recording) { schedule.append((frame.time, index, frame.events)) }
        }
        schedule = schedule.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        var models = recordings.map { EvdevDeviceState(description: $0.description!, appliesFuzz: false) }
        var passed = Array(repeating: 0, count: recordings.count)
        var totalPassed = 0
        var batch: [(type: UInt16, code: UInt16, value: Int32)] = []
        var batchDevice = 0
        var batchPassed = 0
        func flush() throws(VirtualDeviceError) {
            guard !batch.isEmpty else { return }
            try devices[batchDevice].send(batch)
            passed[batchDevice] += batchPassed
            totalPassed += batchPassed
            batch.removeAll(keepingCapacity: true)
            batchPassed = 0
            waitUntil(.seconds(5), poll: .microseconds(100)) {
                zip(progress, passed).allSatisfy { $0.0() >= $0.1 } && chain.rawEventsRead - chainBase >= totalPassed
            }
        }
        for frame in schedule {
            var frameEvents = 0
            for event in frame.events {
                if let out = models[frame.device].feed(type: event.type, code: event.code, value: event.value) {
                    frameEvents += out.count + 1
                }
            }
            if frame.device != batchDevice || batchPassed + frameEvents > window { try flush() }
            batchDevice = frame.device
            batch += frame.events.map { ($0.type, $0.code, $0.value) }
            batchPassed += frameEvents
        }
        try flush()
    }

    /// How the kernel's description of the node differs from the recording's, beyond
    /// what uinput cannot make (the repeat period, see ``UInputDevice``; fuzz, set to 0
    /// for a replay).
    static func describedDifference(
        _ node: String, _ recorded: InputDeviceDescription, live known: InputDeviceDescription? = nil
    )
        -> String?
    {
        let live: InputDeviceDescription
        if let known {
            live = known
        } else {
            let fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return "cannot open: \(String(cString: strerror(errno)))" }
            defer { close(fd) }
            guard let read = try? InputDeviceDescription(fileDescriptor: fd) else { return "not an evdev node" }
            live = read
        }
        if live.name != String(recorded.name.utf8.prefix(79))! { return "name \(live.name)" }
        if (live.busType, live.vendor, live.product, live.version) != (
            recorded.busType, recorded.vendor, recorded.product, recorded.version
        ) {
            return "ids \(live.busType) \(live.vendor) \(live.product) \(live.version)"
        }
        if live.properties != recorded.properties { return "properties \(live.properties.sorted())" }
        for (type, codes) in recorded.codes where type != Evdev.EV_REP && live.codes[type] != codes {
            let missing = codes.subtracting(live.codes[type] ?? []).sorted()
            let extra = (live.codes[type] ?? []).subtracting(codes).sorted()
            return "type \(type): missing \(missing), extra \(extra)"
        }
        for (code, axis) in recorded.absoluteAxes {
            guard let other = live.absoluteAxes[code] else { return "axis \(code) missing" }
            if (other.minimum, other.maximum, other.resolution, other.flat) != (axis.minimum, axis.maximum, axis.resolution, axis.flat) {
                return "axis \(code): \(other) instead of \(axis)"
            }
        }
        if let repeatSettings = recorded.keyRepeat, live.keyRepeat?.delay != repeatSettings.delay || live.keyRepeat?.period != 0 {
            return "repeat \(String(describing: live.keyRepeat)) (expected delay \(repeatSettings.delay), period 0)"
        }
        return nil
    }
}
