import CEvemu
import Glibc
import RingLoopEvdev
import Testing

@testable import RingLoopDevices

/// What evemu's own reader (libevemu 2.7, `evemu_read` then `evemu_read_event`) makes of
/// a file: the reference for RingLoop's evemu reader.
struct EvemuReading: Equatable, CustomStringConvertible {
    var accepted: Bool
    var name = ""
    var ids: [UInt16] = []
    var properties: Set<UInt16> = []
    /// Codes per type, for the types the kernel reports codes for.
    var codes: [UInt16: Set<UInt16>] = [:]
    /// minimum, maximum, fuzz, flat, resolution per enabled axis.
    var axes: [UInt16: [Int32]] = [:]
    var hasRepeat = false
    var events: [InputEvent] = []

    var description: String {
        "accepted \(accepted), \(name), ids \(ids), props \(properties.sorted()), codes \(codes.mapValues { $0.count }), axes \(axes.keys.sorted()), repeat \(hasRepeat), \(events.count) events"
    }

    /// Reads `path` with evemu. With `describe` false, reads events only (as evemu-play
    /// reads an events file).
    static func read(_ path: String, describe: Bool = true) -> EvemuReading {
        guard let file = fopen(path, "r") else { return EvemuReading(accepted: false) }
        defer { fclose(file) }
        var reading = EvemuReading(accepted: true)
        if describe {
            guard let device = evemu_new(nil) else { return EvemuReading(accepted: false) }
            defer { evemu_delete(device) }
            // evemu prints why it refuses on standard error; the verdict is the result.
            guard evemu_read(device, file) > 0 else { return EvemuReading(accepted: false) }
            reading.name = String(cString: evemu_get_name(device))
            reading.ids = [
                UInt16(truncatingIfNeeded: evemu_get_id_bustype(device)),
                UInt16(truncatingIfNeeded: evemu_get_id_vendor(device)),
                UInt16(truncatingIfNeeded: evemu_get_id_product(device)),
                UInt16(truncatingIfNeeded: evemu_get_id_version(device)),
            ]
            for property in 0...Evdev.INPUT_PROP_MAX where evemu_has_prop(device, Int32(property)) != 0 {
                reading.properties.insert(property)
            }
            for type in Evdev.maskTypes where type != 0 {
                var set = Set<UInt16>()
                for code in 0...Evdev.maximumCode(ofType: type)! where evemu_has_event(device, Int32(type), Int32(code)) != 0 {
                    set.insert(code)
                }
                if !set.isEmpty { reading.codes[type] = set }
            }
            for code in reading.codes[3] ?? [] {
                let c = Int32(code)
                reading.axes[code] = [
                    evemu_get_abs_minimum(device, c), evemu_get_abs_maximum(device, c), evemu_get_abs_fuzz(device, c),
                    evemu_get_abs_flat(device, c), evemu_get_abs_resolution(device, c),
                ]
            }
            reading.hasRepeat = evemu_has_bit(device, 0x14) != 0
        }
        var seconds: Int64 = 0
        var microseconds: Int64 = 0
        var type: UInt32 = 0
        var code: UInt32 = 0
        var value: Int32 = 0
        while ringloop_evemu_read_event(file, &seconds, &microseconds, &type, &code, &value) > 0 {
            reading.events.append(
                InputEvent(
                    seconds: seconds, microseconds: Int32(truncatingIfNeeded: microseconds),
                    type: UInt16(truncatingIfNeeded: type), code: UInt16(truncatingIfNeeded: code), value: value))
        }
        return reading
    }

    /// The same view of RingLoop's reading.
    init(_ recording: Recording) {
        accepted = true
        if let device = recording.description {
            name = device.name
            ids = [device.busType, device.vendor, device.product, device.version]
            properties = device.properties
            codes = device.codes.filter { $0.key != 0 && Evdev.maximumCode(ofType: $0.key) != nil && !$0.value.isEmpty }
            axes = device.absoluteAxes.mapValues { [$0.minimum, $0.maximum, $0.fuzz, $0.flat, $0.resolution] }
            hasRepeat = device.keyRepeat != nil
        }
        events = recording.events
    }

    init(accepted: Bool) { self.accepted = accepted }
}

/// Writes `text` to a fresh file and returns its path.
func temporaryFile(_ text: String, suffix: String = ".evemu") -> String {
    var template = Array("/tmp/ringloop-test-XXXXXX\(suffix)".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, Int32(suffix.utf8.count)) }
    precondition(fd >= 0, "mkstemps failed")
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

@Suite("evemu format against evemu's own reader")
struct EvemuDifferentialTests {
    static let describedFiles = RealRecordings.entries.filter { $0.description == nil }
    static let eventsOnlyFiles = RealRecordings.entries.filter { $0.description != nil }

    @Test("Every real recording with a description reads as evemu reads it", arguments: describedFiles)
    func describedFile(_ entry: RealRecordings.Entry) throws {
        let reference = EvemuReading.read(entry.path)
        #expect(reference.accepted, "evemu refuses \(entry.file)")
        let recordings = try Recording.loadAll(contentsOf: entry.path)
        // evemu reads the first description and every E: line of the file.
        var ours = EvemuReading(recordings[0])
        ours.events = recordings.flatMap(\.events)
        #expect(ours == reference, "\(entry.file):\n ours   \(ours)\n evemu  \(reference)")
    }

    @Test("Every events-only real recording gives evemu-play's events", arguments: eventsOnlyFiles)
    func eventsFile(_ entry: RealRecordings.Entry) throws {
        let reference = EvemuReading.read(entry.path, describe: false)
        let recording = try EvemuFormat.parse(Recording.readFile(entry.path), file: entry.file)
        #expect(recording.description == nil)
        #expect(recording.events == reference.events, "\(entry.file): \(recording.events.count) events, evemu \(reference.events.count)")
    }

    /// Hand-made files at the edges of the format: what evemu accepts is read the same,
    /// what it refuses is refused, and where RingLoop differs the difference is the
    /// documented one.
    enum Verdict: Sendable {
        /// Both accept and read the same device and events.
        case same
        /// Both refuse.
        case bothRefuse
        /// evemu accepts but would drop or misread something; RingLoop refuses, saying so.
        case stricter(String)
        /// evemu refuses a form whose meaning is plain; RingLoop reads it.
        case lenient
    }

    static let header = "N: Edge\nI: 0003 0001 0002 0003\n"

    @Test(
        "Edge cases of the format",
        arguments: [
            // Versions and headers.
            // short B: line: evemu wants 8 bytes
            ("# EVEMU 1.3\n" + header + "B: 03 03\nA: 00 0 100 1 2 3\nA: 01 0 50 0 0 4\n", Verdict.lenient),
            ("# EVEMU 1.3\n" + header + "B: 03 03 00 00 00 00 00 00 00\nA: 00 0 100 1 2 3\nA: 01 0 50 0 0 4\n", .same),
            ("# EVEMU 1.1\n" + header + "B: 03 03 00 00 00 00 00 00 00\nA: 00 0 100 1 2\nA: 01 0 50 0 0\n", .same),
            (header + "B: 03 03 00 00 00 00 00 00 00\nA: 00 0 100 1 2\n", .same),  // no header: format 1.0
            (header + "B: 03 03 00 00 00 00 00 00 00\nA: 00 0 100 1 2 7\n", .lenient),  // 1.0 with a resolution column
            ("# EVEMU 1.3\n" + header + "B: 03 03 00 00 00 00 00 00 00\nA: 00 0 100 1 2\n", .lenient),  // 1.3 without one
            ("# EVEMU 1.9\n" + header + "B: 01 00 00 00 00 00 00 00 00\n", .same),  // newer: warned, read
            // Masks: EV_REP, EV_PWR, EV_FF_STATUS, longer and shorter than the kernel's.
            (
                "# EVEMU 1.3\n" + header + "B: 00 0b 00 00 00 00 00 00 00\nB: 01 00 00 ff 00 00 00 00 00\nB: 14 03 00 00 00 00 00 00 00\n",
                .same
            ),
            (
                "# EVEMU 1.3\n" + header
                    + "B: 00 ff ff ff ff 00 00 00 00\nB: 16 01 00 00 00 00 00 00 00\nB: 17 01 00 00 00 00 00 00 00\nB: 04 10 00 00 00 00 00 00 00\n",
                .same
            ),
            ("# EVEMU 1.3\n" + header + "B: 02 03 09 00 00 00 00 00 00\nB: 02 ff ff 00 00 00 00 00 00\n", .same),  // bits past REL_MAX
            // property bits past INPUT_PROP_MAX
            ("# EVEMU 1.3\n" + header + "P: 05 00 00 00 00 00 00 00\nP: ff 00 00 00 00 00 00 00\n", .same),
            ("# EVEMU 1.3\n" + header + "B: 07 ff 00 00 00 00 00 00 00\nB: 11 07 00 00 00 00 00 00 00\n", .same),  // a type without codes
            ("# EVEMU 1.3\n" + header + "B: 20 01 00 00 00 00 00 00 00\n", .bothRefuse),  // past EV_MAX
            // Axes outside the mask are ignored, as evemu ignores them.
            ("# EVEMU 1.3\n" + header + "B: 03 01 00 00 00 00 00 00 00\nA: 00 0 10 0 0 0\nA: 05 0 99 0 0 0\n", .same),
            ("# EVEMU 1.3\n" + header + "B: 03 01 00 00 00 00 00 00 00\nA: 00 0 10 0 0 0\nA: 7f 0 99 0 0 0\n", .same),
            // LED and switch states, comments, CR LF, blank lines.
            ("# EVEMU 1.3\n# note\n" + header + "B: 05 01 00 00 00 00 00 00 00\nB: 11 02 00 00 00 00 00 00 00\nL: 01 1\nS: 00 1\n", .same),
            (
                "# EVEMU 1.3\r\nN: Edge\r\nI: 0003 0001 0002 0003\r\nB: 01 00 00 00 00 00 00 00 00\r\nE: 0.000001 0001 0002 0001\r\nE: 0.000001 0000 0000 0000\r\n",
                .same
            ),
            (
                "# EVEMU 1.3\n" + header
                    + "\n\nB: 01 02 00 00 00 00 00 00 00\n# between\nE: 0.000010 0001 0001 0001 # key\n\nE: 0.000010 0000 0000 0000\t# ---\n",
                .same
            ),
            // Events: times, negative values, hexadecimal codes.
            ("# EVEMU 1.3\n" + header + "B: 02 03 00 00 00 00 00 00 00\nE: 1000.999999 0002 0000 -5\nE: 1000.999999 0000 0000 0\n", .same),
            // Missing pieces.
            ("N: Edge\n", .bothRefuse),
            ("N: Edge\nB: 01 00 00 00 00 00 00 00 00\n", .bothRefuse),
            ("I: 0003 0001 0002 0003\n", .bothRefuse),
            ("# EVEMU 1.3\n" + header + "P: 00 00 00\n", .lenient),  // evemu wants 8 property bytes
            ("# EVEMU 1.3\n" + header + "B: 03 01 00 00 00 00 00 00 00\nA: 00 0 x 0 0 0\n", .bothRefuse),
            ("N: X\nI: 3 0001 0001\nR: 52 05 01\n", .bothRefuse),  // a hid-recorder file
            // Where evemu drops or misreads lines, RingLoop refuses and says so.
            ("# EVEMU 1.3\n" + header + "A: 00 0 10 0 0 0\nB: 03 01 00 00 00 00 00 00 00\n", .stricter("move it up")),
            (
                "# EVEMU 1.3\n" + header + "B: 01 02 00 00 00 00 00 00 00\nE: 0.000001 0001 0001 0001\nB: 01 04 00 00 00 00 00 00 00\n",
                .stricter("after the device's events")
            ),
            (
                "# EVEMU 1.3\n" + header + "B: 01 02 00 00 00 00 00 00 00\ngarbage here\nE: 0.000001 0001 0001 0001\n",
                .stricter("ringloop is stricter")
            ),
            ("# EVEMU 1.3\n" + header + "B: 01 02 00 00 00 00 00 00 00\nE: 0.5 0001 0001 0001\n", .stricter("six digits")),
        ] as [(String, Verdict)])
    func edgeCase(_ text: String, _ verdict: Verdict) throws {
        let path = temporaryFile(text)
        defer { unlink(path) }
        let reference = EvemuReading.read(path)
        let ours: Result<[Recording], RecordingError> = Result { () throws(RecordingError) in try Recording.loadAll(contentsOf: path) }
        switch verdict {
        case .same:
            #expect(reference.accepted, "evemu refuses:\n\(text)")
            let recordings = try ours.get()
            var mine = EvemuReading(recordings[0])
            mine.events = recordings.flatMap(\.events)
            #expect(mine == reference, "\n ours   \(mine)\n evemu  \(reference)\n\(text)")
        case .bothRefuse:
            #expect(!reference.accepted, "evemu accepts:\n\(text)")
            #expect(throws: RecordingError.self) { try ours.get() }
        case .stricter(let message):
            #expect(reference.accepted, "evemu refuses:\n\(text)")
            guard case .failure(let error) = ours else {
                Issue.record("accepted, but evemu would misread it:\n\(text)")
                return
            }
            #expect(error.description.contains(message), "\(error)")
        case .lenient:
            #expect(!reference.accepted, "evemu accepts:\n\(text)")
            #expect(throws: Never.self) { try ours.get() }
        }
    }
}
