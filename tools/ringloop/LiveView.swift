import ArgumentParser
import RingLoop
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

/// Prints HID events as they arrive and keeps what the summary needs: events per kind
/// and device, device→handler latency, drops.
final class LiveView {
    /// Which events are printed (the summary counts every event).
    struct Filter {
        /// Event kinds to print (`nil`: every kind). Device arrivals and removals always print.
        var kinds: Set<HIDEvent.Kind>?
        /// Device classes whose events print (`nil`: every class).
        var classes: Set<HIDDeviceClass>?
        /// The recognizers' reports to print, `gesture` (shakes too) and `orientation`
        /// (`nil`: every report, when `kinds` is `nil` too).
        var reports: Set<String>? = nil

        static let all = Filter(kinds: nil, classes: nil)

        /// The kinds of line `--filter` takes besides HID events: the recognizers' reports.
        static let reportKinds = ["gesture", "orientation"]

        /// Parses `--filter`: HID event kinds and the recognizers' reports.
        static func parseKinds(_ text: String) throws -> (kinds: Set<HIDEvent.Kind>, reports: Set<String>) {
            var kinds = Set<HIDEvent.Kind>()
            var reports = Set<String>()
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
                if let kind = HIDEvent.Kind(rawValue: trimmed) {
                    kinds.insert(kind)
                } else if reportKinds.contains(trimmed) {
                    reports.insert(trimmed)
                } else {
                    let valid = HIDEvent.Kind.allCases.map(\.rawValue) + reportKinds
                    throw ValidationError("--filter: '\(name)' is not one of \(valid.joined(separator: ", "))")
                }
            }
            return (kinds, reports)
        }

        /// Whether a recognizer's report of this kind prints.
        func admitsReport(_ kind: String) -> Bool {
            guard kinds != nil || reports != nil else { return true }
            return reports?.contains(kind) ?? false
        }

        /// Parses a comma-separated list of `T` raw values, or says which would be valid.
        static func parse<T: RawRepresentable & CaseIterable & Hashable>(
            _ text: String, _ option: String, as: T.Type
        ) throws -> Set<T> where T.RawValue == String {
            var values = Set<T>()
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let value = T(rawValue: String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())) else {
                    throw ValidationError(
                        "\(option): '\(name)' is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                values.insert(value)
            }
            return values
        }
    }

    let json: Bool
    let quiet: Bool
    let filter: Filter
    private(set) var counts: [String: [String: Int]] = [:]
    /// Device→handler latencies, in constant memory (every sample was kept before: 18 bytes
    /// an event, 300 MB in 20 s of a fast server).
    private(set) var latencies = LatencyHistogram()
    private(set) var dropped = 0
    private(set) var removed = 0
    private(set) var added = 0
    /// Gestures that succeeded (a discrete one recognized, a continuous one ended), by name.
    private(set) var gestureCounts: [String: Int]?
    private var names: [HIDDeviceID: String] = [:]
    private weak var system: HIDEventSystem?

    init(json: Bool, quiet: Bool, filter: Filter = .all) {
        self.json = json
        self.quiet = quiet
        self.filter = filter
    }

    /// Registers the view as a handler of every event of `system`.
    func attach(to system: HIDEventSystem) {
        self.system = system
        system.addHandler { [unowned self] event in
            self.handle(event)
            return .pass
        }
    }

    /// A device's name and class as its description says (for text, through
    /// `Format.shown`); its id while the system does not know it (not remembered: a device
    /// may be described later under that id).
    func name(_ id: HIDDeviceID) -> String {
        if let name = names[id] { return name }
        guard id.rawValue != 0, let device = system?.device(id) else { return "\(id)" }
        let name = "\(device.name) [\(device.deviceClass.rawValue)]"
        names[id] = name
        return name
    }

    /// The screens the system maps absolute devices onto (`--screen`, `--calibration`,
    /// `--device-config`; its screen-mapping stage does the mapping): the view says where
    /// each device maps, and why, as it is added.
    var screens: DeviceSettingsResolver?

    /// Says where a device that was added maps.
    private func sayWhereDeviceMaps(_ id: HIDDeviceID) {
        guard let screens, let device = system?.device(id) else { return }
        let report = ScreenMappingReport(device: device, screens: screens)
        guard ScreenMapper.mapsToScreen(device) || report.mapping != nil else { return }
        printError("ringloop monitor: " + Format.shown(report.line))
    }

    private func handle(_ event: HIDEvent) {
        if screens != nil, event.kind == .deviceAdded { sayWhereDeviceMaps(event.device) }
        let lag = MonotonicInstant.now - event.timestamp
        let (seconds, attoseconds) = lag.components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let lagNanoseconds = nanoseconds.overflow ? Int64.max : nanoseconds.partialValue &+ attoseconds / 1_000_000_000
        let latency = Double(lagNanoseconds) / 1000
        let device = event.device.rawValue == 0 ? "event system" : name(event.device)
        switch event.kind {
        case .deviceAdded: added += 1
        case .deviceRemoved:
            removed += 1
            // Its id may come back for another device (a server started again numbers its
            // devices from 1).
            names[event.device] = nil
        case .eventsDropped:
            // (The count is another process's word when the events come from a server.)
            if case .eventsDropped(let count) = event.payload {
                let (sum, overflow) = dropped.addingReportingOverflow(max(count, 1))
                dropped = overflow ? .max : sum
            }
        case .focusChanged: break
        default:
            latencies.record(lagNanoseconds)
        }
        counts[device, default: [:]][event.kind.rawValue, default: 0] += 1
        guard !quiet, admits(event) else { return }
        if json {
            var object = EventFormat.json(event, device: device, latencyMicroseconds: latency)
            if event.kind == .deviceAdded, let info = system?.device(event.device) {
                object["sdlGUID"] = info.sdlGUID.hexString
            }
            writeLine(EventFormat.jsonLine(object))
        } else {
            let time = Format.pad(Format.fixed(Double(event.timestamp.nanoseconds) / 1e9, 6), 12)
            let lag = event.kind.isTimeless ? "" : "  (\(Format.fixed(latency, 0)) µs)"
            writeLine("\(time)  \(EventFormat.text(event, device: Format.shown(device)))\(lag)")
        }
    }

    /// Attaches UIKit's recognizers on touchscreens and libinput's on touchpads, a shake
    /// and an orientation recognizer on motion sensors, and prints each state they enter.
    func attachGestures(to system: HIDEventSystem) {
        gestureCounts = [:]
        for recognizer in StandardGestures.forEverySurface() {
            recognizer.addAction { [unowned self] event in self.handle(event) }
            system.addGestureRecognizer(recognizer)
        }
        let shake = ShakeRecognizer()
        shake.addAction { [unowned self] event in self.handle(event) }
        system.addMotionRecognizer(shake)
        let orientation = OrientationRecognizer()
        orientation.addAction { [unowned self] event in self.handle(event) }
        system.addMotionRecognizer(orientation)
    }

    private func handle(_ event: ShakeRecognizer.Event) {
        if event.phase == .ended { gestureCounts?["shake", default: 0] += 1 }
        guard !quiet, filter.admitsReport("gesture"), admitsDevice(event.device) else { return }
        print(
            EventFormat.json(event, device: name(event.device)), EventFormat.text(event, device: Format.shown(name(event.device))),
            event.timestamp)
    }

    private func handle(_ event: OrientationRecognizer.Event) {
        guard !quiet, filter.admitsReport("orientation"), admitsDevice(event.device) else { return }
        print(
            EventFormat.json(event, device: name(event.device)), EventFormat.text(event, device: Format.shown(name(event.device))),
            event.timestamp)
    }

    /// One line, JSON or text, for a recognizer's report.
    private func print(_ object: [String: Any], _ text: String, _ timestamp: MonotonicInstant) {
        if json {
            writeLine(EventFormat.jsonLine(object))
        } else {
            writeLine(Format.pad(Format.fixed(Double(timestamp.nanoseconds) / 1e9, 6), 12) + "  " + text)
        }
    }

    private func handle(_ event: GestureEvent) {
        if event.state == .ended { gestureCounts?[event.gesture.rawValue, default: 0] += 1 }
        guard !quiet, filter.admitsReport("gesture"), admitsDevice(event.device) else { return }
        let device = name(event.device)
        if json {
            writeLine(EventFormat.jsonLine(EventFormat.json(event, device: device)))
        } else {
            let time = Format.pad(Format.fixed(Double(event.timestamp.nanoseconds) / 1e9, 6), 12)
            writeLine("\(time)  \(EventFormat.text(event, device: Format.shown(device)))")
        }
    }

    private func admits(_ event: HIDEvent) -> Bool {
        if event.kind.isTimeless { return true }
        if let kinds = filter.kinds, !kinds.contains(event.kind) { return false }
        return admitsDevice(event.device)
    }

    /// Whether `--device-class` lets this device's lines print.
    private func admitsDevice(_ device: HIDDeviceID) -> Bool {
        guard let classes = filter.classes else { return true }
        guard let deviceClass = system?.device(device)?.deviceClass else { return false }
        return classes.contains(deviceClass)
    }

    /// The closing summary (to standard error in JSON mode, so stdout stays JSON lines).
    func summary(systemDropped: Int, stalls: (count: Int, threshold: Duration)? = nil) -> String {
        var lines: [String] = []
        lines.append("")
        lines.append("Summary")
        let width = max(20, counts.keys.map { Format.shown($0).count }.max() ?? 20)
        for device in counts.keys.sorted() {
            let kinds = counts[device]!.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append("  " + Format.padRight(Format.shown(device), width) + "  " + kinds)
        }
        let total = counts.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        lines.append("  events: \(total) delivered, devices: \(added) added, \(removed) removed")
        if let median = latencies.percentile(0.5), let p99 = latencies.percentile(0.99) {
            func microseconds(_ nanoseconds: Int64) -> String { Format.fixed(Double(nanoseconds) / 1000, 0) }
            lines.append(
                "  device→handler latency: p50 \(microseconds(median)) µs, p99 \(microseconds(p99)) µs,"
                    + " max \(microseconds(latencies.maximum)) µs (\(latencies.count) events)")
        }
        lines.append("  drops: \(dropped + systemDropped)\(dropped + systemDropped == 0 ? " (none)" : "")")
        if let gestureCounts {
            let recognized = gestureCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append("  gestures: \(gestureCounts.values.reduce(0, +)) recognized\(recognized.isEmpty ? "" : " (\(recognized))")")
        }
        if let stalls {
            lines.append("  stalls: \(stalls.count) (passes of the loop longer than \(stalls.threshold))")
        }
        return lines.joined(separator: "\n")
    }
}

extension HIDEvent.Kind {
    /// Device arrivals and removals and a client's focus changes: always printed, without
    /// a latency (the chain made them; no device stamped them).
    fileprivate var isTimeless: Bool { self == .deviceAdded || self == .deviceRemoved || self == .focusChanged }
}
