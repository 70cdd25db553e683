import RingLoop
import RingLoopEvdev
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

let motionFolder = devicesFolder + "/motion"

/// Every motion sample of a recording, decoded from memory, with its kernel stamp.
func motionSamples(_ recording: Recording, info: HIDDeviceInfo? = nil) -> [(MonotonicInstant, MotionEvent)] {
    var decoder = FrameDecoder(info: info ?? deviceInfo(of: recording))
    var out: [HIDEvent] = []
    var samples: [(MonotonicInstant, MotionEvent)] = []
    for event in recording.events {
        decoder.feed(event, into: &out)
        for decoded in out { if case .motion(let sample) = decoded.payload { samples.append((decoded.timestamp, sample)) } }
        out.removeAll()
    }
    return samples
}

/// What a shake and an orientation recognizer report over a recording, from memory.
struct MotionRun {
    var shakes: [ShakeRecognizer.Event] = []
    var orientations: [OrientationRecognizer.Event] = []

    init(_ recording: Recording, shake: ShakeRecognizer = ShakeRecognizer(), orientation: OrientationRecognizer = OrientationRecognizer()) {
        var shakes: [ShakeRecognizer.Event] = []
        var orientations: [OrientationRecognizer.Event] = []
        shake.addAction { shakes.append($0) }
        orientation.addAction { orientations.append($0) }
        let device = HIDDeviceID(rawValue: 1)
        var last = MonotonicInstant(nanoseconds: 0)
        for (time, sample) in motionSamples(recording) {
            for recognizer in [shake, orientation] as [MotionRecognizer] {
                recognizer.process(sample, device: device, at: time)
            }
            last = time
        }
        shake.advance(to: last + .seconds(2))
        self.shakes = shakes
        self.orientations = orientations
    }

    var shakePhases: [String] { shakes.map(\.phase.rawValue) }
}

func loadMotionRecording(_ name: String) throws -> Recording {
    try Recording.load(contentsOf: motionFolder + "/" + name + ".evemu")
}

@Suite("Motion: classification, decoding, shake and orientation (from memory)")
struct MotionTests {
    /// Nodes as the kernel's drivers register them (from their sources), and the class
    /// udev gives each (`input_id`: the property or X/Y/Z without keys is an
    /// accelerometer; otherwise the usual tests).
    static let nodes: [(name: String, codes: [UInt16: Set<UInt16>], properties: Set<UInt16>, expected: HIDDeviceClass)] = [
        (
            "hid-playstation DualSense Motion Sensors",
            [Evdev.EV_ABS: [0, 1, 2, 3, 4, 5], Evdev.EV_MSC: [Evdev.MSC_TIMESTAMP]], [Evdev.INPUT_PROP_ACCELEROMETER], .motion
        ),
        (
            "hid-nintendo Joy-Con IMU",
            [Evdev.EV_ABS: [0, 1, 2, 3, 4, 5], Evdev.EV_MSC: [Evdev.MSC_TIMESTAMP]], [Evdev.INPUT_PROP_ACCELEROMETER], .motion
        ),
        ("lis3lv02d (no property, no keys)", [Evdev.EV_ABS: [0, 1, 2]], [], .motion),
        // Its joystick axes would make it a joystick; the property says accelerometer.
        ("accelerometer with rotational axes only", [Evdev.EV_ABS: [3, 4, 5]], [Evdev.INPUT_PROP_ACCELEROMETER], .motion),
        // hid-wiimote's accelerometer sets no property and uses RX/RY/RZ: udev makes it a
        // joystick, and so does the chain.
        ("hid-wiimote Accelerometer", [Evdev.EV_ABS: [3, 4, 5]], [], .joystick),
        // X/Y/Z with keys (a gamepad's sticks and triggers) is no accelerometer.
        (
            "hid-playstation DualSense gamepad",
            [Evdev.EV_ABS: [0, 1, 2, 3, 4, 5, 0x10, 0x11], Evdev.EV_KEY: [0x130, 0x131, 0x133, 0x134]], [], .gamepad
        ),
    ]

    @Test("motion nodes are classified as udev classifies them", arguments: 0..<nodes.count)
    func classification(_ index: Int) {
        let node = Self.nodes[index]
        let roles = HIDDeviceInfo.roles(codes: node.codes, properties: node.properties)
        #expect(HIDDeviceInfo.classify(codes: node.codes, properties: node.properties) == node.expected, "\(node.name)")
        #expect(roles.contains(node.expected))
        if node.expected == .motion { #expect(roles == [.motion], "\(node.name): \(roles)") }
    }

    @Test("no real recording's class changes: none of devices/real is an accelerometer")
    func realRecordingsUnchanged() throws {
        for real in RealRecording.all where real.descriptionFile == nil {
            for recording in try real.load() {
                let info = deviceInfo(of: recording)
                #expect(info.deviceClass != .motion, "\(real.file)")
            }
        }
    }

    @Test("a DualSense sample: g and °/s from the axes' resolution, the sensor's clock across its wrap, 250 Hz")
    func decoding() throws {
        let recording = try loadMotionRecording("dualsense-rotation")
        let info = deviceInfo(of: recording)
        #expect(info.deviceClass == .motion)
        let samples = motionSamples(recording)
        // One sample per frame: 250 Hz for 10.8 s.
        #expect(samples.count == recording.events.filter(\.isSynReport).count)
        #expect(samples.count == 2600)
        let first = try #require(samples.first?.1)
        #expect(first.isCalibrated && first.sensors == [.accelerometer, .gyroscope])
        #expect(abs(first.acceleration.y - 1) < 0.03 && abs(first.acceleration.x) < 0.03, "at rest upright: \(first.acceleration)")
        #expect(first.sampleRate == 0)
        // The raw clock starts 1.5 s before 2^32 µs and wraps; made continuous, it steps
        // by 4 ms throughout.
        let times = samples.compactMap(\.1.sensorTime)
        #expect(times.count == samples.count)
        #expect(times.first == (1 << 32) - 1_500_000)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 4000 })
        #expect(times.last! > 1 << 32)
        #expect(samples.dropFirst(20).allSatisfy { abs($0.1.sampleRate - 250) < 0.5 })
        // The first quarter turn about z: up to 225 °/s (90° in 0.6 s, eased).
        let peak = samples.prefix(500).map(\.1.rotationRate.z).max() ?? 0
        #expect(abs(peak - 225) < 5, "peak rotation rate \(peak) °/s")
    }

    @Test("the sensor clock: a reset counts the kernel's time, not 71 minutes")
    func clockReset() {
        let info = HIDDeviceInfo.describing(
            name: "imu", codes: [Evdev.EV_ABS: [0, 1, 2], Evdev.EV_MSC: [Evdev.MSC_TIMESTAMP]],
            axes: [
                0: AbsoluteAxis(minimum: -100, maximum: 100, resolution: 10),
                1: AbsoluteAxis(minimum: -100, maximum: 100, resolution: 10),
                2: AbsoluteAxis(minimum: -100, maximum: 100, resolution: 10),
            ], properties: [Evdev.INPUT_PROP_ACCELEROMETER])
        var decoder = FrameDecoder(info: info)
        var out: [HIDEvent] = []
        for (micro, stamp) in [(0, Int32(5_000_000)), (10_000, 5_010_000), (30_000, 0), (40_000, 10_000)] {
            decoder.feed(
                InputEvent(seconds: 1, microseconds: Int32(micro), type: Evdev.EV_MSC, code: Evdev.MSC_TIMESTAMP, value: stamp), into: &out)
            decoder.feed(
                InputEvent(seconds: 1, microseconds: Int32(micro), type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0), into: &out)
        }
        let times = out.compactMap { if case .motion(let sample) = $0.payload { sample.sensorTime } else { nil } }
        #expect(times == [5_000_000, 5_010_000, 5_030_000, 5_040_000])
        let last = out.last.flatMap { if case .motion(let sample) = $0.payload { sample } else { nil } }
        #expect(last?.acceleration == .zero)
    }

    @Test("a shake is recognized: began, then ended once the hand is still; nothing else")
    func shake() throws {
        let run = MotionRun(try loadMotionRecording("dualsense-shake"))
        #expect(run.shakePhases == ["began", "ended"])
        let ended = try #require(run.shakes.last)
        #expect(ended.strokes >= 10, "1.2 s at 5 Hz: \(ended.strokes) strokes")
        #expect(ended.peak > 2 && ended.peak < 3.5)
        #expect(ended.duration > .milliseconds(1000) && ended.duration < .milliseconds(1400), "\(ended.duration)")
        #expect(run.orientations.map(\.orientation) == [.portrait])
    }

    @Test("a knock begins a shake and cancels it; turning the device is no shake")
    func notShakes() throws {
        #expect(MotionRun(try loadMotionRecording("dualsense-bump")).shakePhases == ["began", "cancelled"])
        #expect(MotionRun(try loadMotionRecording("dualsense-rotation")).shakePhases == [])
    }

    @Test("stamps that gap and bunch (a Bluetooth link's batches, a busy host) do not split a shake: the sensor's clock times it")
    func bunchedStamps() throws {
        var recording = try loadMotionRecording("dualsense-shake")
        // Mid-shake, 0.4 s of frames reach the host at once, stamped at its end.
        let start = recording.events[0].timeMicroseconds
        for index in recording.events.indices {
            let offset = recording.events[index].timeMicroseconds - start
            guard offset >= 1_000_000 && offset < 1_400_000 else { continue }
            recording.events[index].seconds = (start + 1_400_000) / 1_000_000
            recording.events[index].microseconds = Int32((start + 1_400_000) % 1_000_000)
        }
        #expect(MotionRun(recording).shakePhases == ["began", "ended"])
        // Without the sensor's clock the silence is stillness: the shake ends there, another begins.
        recording.events.removeAll { $0.type == Evdev.EV_MSC }
        let unclocked = MotionRun(recording).shakePhases
        #expect(unclocked.count == 4 && unclocked.first == "began", "\(unclocked)")
    }

    @Test("a shake that goes on too long is cancelled")
    func longShake() throws {
        let shake = ShakeRecognizer()
        shake.maximumDuration = .milliseconds(600)
        #expect(MotionRun(try loadMotionRecording("dualsense-shake"), shake: shake).shakePhases == ["began", "cancelled"])
    }

    @Test("the device turned through the four orientations, then face up and face down")
    func orientation() throws {
        let run = MotionRun(try loadMotionRecording("dualsense-rotation"))
        #expect(
            run.orientations.map(\.orientation) == [
                .portrait, .landscapeLeft, .portraitUpsideDown, .landscapeRight, .portrait, .faceUp, .faceDown,
            ])
        #expect(run.orientations.first?.previous == .unknown)
        // Each change settles within the hold that follows the turn (1 s).
        let recording = try loadMotionRecording("dualsense-rotation")
        let start = recording.events.first!.instant
        let seconds = run.orientations.map {
            Double(($0.timestamp - start).components.attoseconds) / 1e18 + Double(($0.timestamp - start).components.seconds)
        }
        let turnsEnd = [0.0, 1.6, 3.2, 4.8, 6.4, 8.0, 9.4]
        for (index, (time, end)) in zip(seconds, turnsEnd).enumerated() {
            #expect(time >= end - 0.35 && time <= end + 0.5, "change \(index) at \(time) s")
        }
    }

    @Test("a mount matrix sets a sensor's axes right: the same turns, read on a sensor mounted a quarter turn")
    func mountMatrix() throws {
        let orientation = OrientationRecognizer()
        // The screen's x is the sensor's y, the screen's y the sensor's −x.
        orientation.mountMatrix = (MotionVector(x: 0, y: 1, z: 0), MotionVector(x: -1, y: 0, z: 0), MotionVector(x: 0, y: 0, z: 1))
        let run = MotionRun(try loadMotionRecording("dualsense-rotation"), orientation: orientation)
        #expect(run.orientations.prefix(3).map(\.orientation) == [.landscapeLeft, .portraitUpsideDown, .landscapeRight])
    }
}

/// The kernel's own hid-playstation driver, fed a DualSense's report stream through uhid
/// (devices/kernel, made by the booted-kernel stage of the kernel issue: the reports come
/// from a physical model, the events are what Linux 6.12 and 6.1 made of them).
@Suite("Motion on the kernel's hid-playstation recordings (from memory)")
struct KernelMotionTests {
    static let kernels = ["dualsense-usb-motion", "linux-6.1/dualsense-usb-motion"]

    static func load(_ name: String) throws -> Recording {
        try Recording.load(contentsOf: devicesFolder + "/kernel/" + name + ".evemu")
    }

    @Test("the driver's node is a motion device; its samples are in g and °/s on the sensor's 250 Hz clock", arguments: kernels)
    func decoding(_ name: String) throws {
        let recording = try Self.load(name)
        #expect(deviceInfo(of: recording).deviceClass == .motion)
        let samples = motionSamples(recording)
        #expect(samples.count == 1750, "7 s at 250 Hz")
        let times = samples.compactMap(\.1.sensorTime)
        #expect(times.count == samples.count && times.first == 4000 && times.last == 7_000_000)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 4000 })
        #expect(samples.dropFirst(20).allSatisfy { abs($0.1.sampleRate - 250) < 0.5 })
        let rest = try #require(samples.first?.1)
        #expect(abs(rest.acceleration.y - 1) < 0.01 && abs(rest.acceleration.x) < 0.01 && abs(rest.acceleration.z) < 0.01)
        // Linux 6.1 subtracts the calibration report's gyroscope bias (under 1 °/s here).
        #expect(rest.rotationRate.magnitude < 1, "at rest: \(rest.rotationRate)")
        // The roll about z at 90 °/s.
        let roll = samples.map(\.1.rotationRate.z).max() ?? 0
        #expect(abs(roll - 90) < 2, "roll rate \(roll) °/s")
    }

    @Test("the shake and the four orientations, on either kernel's events", arguments: kernels)
    func recognition(_ name: String) throws {
        let run = MotionRun(try Self.load(name))
        #expect(run.shakePhases == ["began", "ended"])
        #expect((run.shakes.last?.strokes ?? 0) >= 12, "1.5 s at 6 Hz")
        #expect(run.orientations.map(\.orientation) == [.portrait, .landscapeLeft, .faceUp, .portrait])
    }
}

/// A DualShock 4's own reports, recorded on the controller with hid-recorder (ChromiumOS
/// tast-tests), played through uhid to Linux 6.12's hid-playstation and 6.1's hid-sony
/// (devices/kernel): motion measured by a real sensor in a hand, not a model.
@Suite("Motion recorded on a real DualShock 4, through the kernel's drivers (from memory)")
struct HardwareMotionTests {
    static let kernels = ["dualshock4-usb-motion", "linux-6.1/dualshock4-usb-motion"]

    @Test("a hand-held controller: about 1 g, small rotations, the sensor's own 250 Hz clock", arguments: kernels)
    func handHeld(_ name: String) throws {
        let recording = try KernelMotionTests.load(name)
        #expect(deviceInfo(of: recording).deviceClass == .motion)
        let samples = motionSamples(recording)
        #expect(samples.count == 3497, "one sample per report recorded")
        let times = samples.compactMap(\.1.sensorTime)
        #expect(times.count == samples.count)
        // The DS4 counts in 5.33 µs units; the drivers give microseconds: 4 ms ± 1 ms steps.
        #expect(zip(times, times.dropFirst()).allSatisfy { (2_900...5_100).contains($1 - $0) })
        #expect(samples.dropFirst(20).allSatisfy { (240...260).contains($0.1.sampleRate) })
        // A real accelerometer in a hand: gravity and the hand's small movements, with noise.
        let magnitudes = samples.map(\.1.acceleration.magnitude)
        #expect(magnitudes.allSatisfy { (0.9...1.2).contains($0) }, "\(magnitudes.min() ?? 0)...\(magnitudes.max() ?? 0) g")
        #expect(samples.allSatisfy { $0.1.rotationRate.magnitude < 40 })
    }

    @Test("no shake and one orientation: the controller was held still while its buttons were pressed", arguments: kernels)
    func recognition(_ name: String) throws {
        let run = MotionRun(try KernelMotionTests.load(name))
        #expect(run.shakePhases.isEmpty)
        #expect(run.orientations.map(\.orientation) == [.portrait])
    }
}
