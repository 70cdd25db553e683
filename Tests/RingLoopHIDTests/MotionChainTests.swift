import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

private func hex(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 4 - digits.count) + digits
}

/// Motion through a live event system: the DualSense recordings hosted on FUSE nodes,
/// replayed at recorded speed, read through the ring, recognized at BeforeWaiting.
@Suite("Motion in the chain", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct MotionChainTests {
    /// Runs `name` through the chain with a shake and an orientation recognizer attached.
    static func recognize(
        _ name: String, shape: HIDEventSystem.Shape, coalesce: Bool = false
    ) throws -> (
        shakes: [ShakeRecognizer.Event], orientations: [OrientationRecognizer.Event], events: [HIDEvent]
    ) {
        let recording = try loadMotionRecording(name)
        let shakes = JoinedBox<[ShakeRecognizer.Event]>([])
        let orientations = JoinedBox<[OrientationRecognizer.Event]>([])
        let events = try runChain(recording, shape: shape, coalesce: coalesce, speed: .recorded) { system, _ in
            let shake = ShakeRecognizer()
            shake.addAction { shakes.value.append($0) }
            let orientation = OrientationRecognizer()
            orientation.addAction { orientations.value.append($0) }
            system.addMotionRecognizer(shake)
            system.addMotionRecognizer(orientation)
            #expect(system.motionRecognizers.count == 2)
        }
        return (shakes.value, orientations.value, events)
    }

    @Test("a shake, read from a node: every sample decoded, began and ended at BeforeWaiting", arguments: HIDEventSystem.Shape.allCases)
    func shake(shape: HIDEventSystem.Shape) throws {
        let (shakes, orientations, events) = try Self.recognize("dualsense-shake", shape: shape)
        let samples = events.compactMap { if case .motion(let sample) = $0.payload { sample } else { nil } }
        let recording = try loadMotionRecording("dualsense-shake")
        #expect(samples.count == recording.events.filter(\.isSynReport).count)
        #expect(samples.allSatisfy { $0.isCalibrated && $0.sampleCount == 1 })
        #expect(shakes.map(\.phase) == [.began, .ended])
        #expect(orientations.map(\.orientation) == [.portrait])
        // The sensor's clock, not the replay's: 4 ms steps across the wrap.
        let times = samples.compactMap(\.sensorTime)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 4000 })
    }

    @Test("coalesced for handlers, every sample still reaches the recognizers")
    func coalesced() throws {
        let (shakes, _, events) = try Self.recognize("dualsense-shake", shape: .clientLoop, coalesce: true)
        let samples = events.compactMap { if case .motion(let sample) = $0.payload { sample } else { nil } }
        let recording = try loadMotionRecording("dualsense-shake")
        let total = recording.events.filter(\.isSynReport).count
        #expect(samples.reduce(0) { $0 + Int($1.sampleCount) } == total)
        #expect(samples.count <= total)
        #expect(shakes.map(\.phase) == [.began, .ended])
    }

    @Test("turned through the orientations in front of a node")
    func orientation() throws {
        let (shakes, orientations, _) = try Self.recognize("dualsense-rotation", shape: .clientLoop)
        #expect(shakes.isEmpty)
        #expect(
            orientations.map(\.orientation) == [
                .portrait, .landscapeLeft, .portraitUpsideDown, .landscapeRight, .portrait, .faceUp, .faceDown,
            ])
    }

    @Test("a shake cut short by the device's removal is cancelled")
    func removal() throws {
        var recording = try loadMotionRecording("dualsense-shake")
        // At rest 0.6 s, then shaking: cut at 1.2 s, mid-shake.
        let start = recording.events[0].timeMicroseconds
        let cut = recording.events.lastIndex { $0.isSynReport && $0.timeMicroseconds - start < 1_200_000 }! + 1
        recording.events.removeSubrange(cut...)
        let shakes = JoinedBox<[ShakeRecognizer.Event]>([])
        _ = try runChain(recording, shape: .clientLoop, speed: .recorded) { system, _ in
            let shake = ShakeRecognizer()
            shake.addAction { shakes.value.append($0) }
            system.addMotionRecognizer(shake)
        }
        #expect(shakes.value.map(\.phase) == [.began, .cancelled])
    }

    @Test("a motion node finds its gamepad by uniq or phys, as libinput groups the nodes of one device")
    func siblings() throws {
        try onFreshThread {
            _ = MountLeakCheck.armed
            let path = "/tmp/ringloop-motion-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            var motion = try #require(try loadMotionRecording("dualsense-rotation").description)
            var gamepad = try #require(try loadRecording("gamepad").description)
            gamepad.busType = motion.busType
            gamepad.vendor = motion.vendor
            gamepad.product = motion.product
            motion.uniqueIdentifier = "a0:ab:51:12:34:56"
            gamepad.uniqueIdentifier = "a0:ab:51:12:34:56"
            var other = gamepad
            other.uniqueIdentifier = "a0:ab:51:65:43:21"
            // Without uniq, the phys path up to its input part groups them.
            var keyboard = try #require(try loadRecording("keyboard").description)
            var power = try #require(try loadRecording("power-button").description)
            power.busType = keyboard.busType
            power.vendor = keyboard.vendor
            power.product = keyboard.product
            keyboard.physicalLocation = "usb-0000:00:14.0-2/input0"
            power.physicalLocation = "usb-0000:00:14.0-2/input1"
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path), loop: loop)
            try system.start()
            defer { system.stop() }
            for description in [motion, gamepad, other, keyboard, power] { _ = try folder.addDevice(description) }
            #expect(runUntil(loop) { system.devices.count == 5 })
            let byName = { (name: String, uniq: String) in
                system.devices.first { $0.name == name && $0.uniqueIdentifier == uniq }
            }
            let sensors = try #require(byName(motion.name, motion.uniqueIdentifier))
            #expect(sensors.deviceClass == .motion)
            #expect(system.siblings(of: sensors.id).map(\.name) == [gamepad.name])
            let pad = try #require(byName(gamepad.name, gamepad.uniqueIdentifier))
            #expect(system.siblings(of: pad.id).map(\.id) == [sensors.id])
            let lone = try #require(byName(other.name, other.uniqueIdentifier))
            #expect(system.siblings(of: lone.id).isEmpty)
            let keys = try #require(system.devices.first { $0.name == keyboard.name })
            #expect(system.siblings(of: keys.id).map(\.name) == [power.name])
            #expect(keys.physicalDevice == "\(hex(keys.busType)):\(hex(keys.vendor)):\(hex(keys.product)):phys=usb-0000:00:14.0-2")
        }
    }
}

/// The kernel's hid-playstation recordings (devices/kernel) through a live event system.
@Suite("Motion in the chain: the kernel's DualSense", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct KernelMotionChainTests {
    @Test("the driver's motion node, replayed at recorded speed: every sample, the shake, the orientations")
    func replay() throws {
        let recording = try KernelMotionTests.load("dualsense-usb-motion")
        let shakes = JoinedBox<[ShakeRecognizer.Phase]>([])
        let orientations = JoinedBox<[DeviceOrientation]>([])
        let events = try runChain(recording, shape: .dedicatedThread, speed: .recorded) { system, _ in
            let shake = ShakeRecognizer()
            shake.addAction { shakes.value.append($0.phase) }
            let orientation = OrientationRecognizer()
            orientation.addAction { orientations.value.append($0.orientation) }
            system.addMotionRecognizer(shake)
            system.addMotionRecognizer(orientation)
        }
        #expect(events.filter { $0.kind == .motion }.count == 1750)
        #expect(shakes.value == [.began, .ended])
        #expect(orientations.value == [.portrait, .landscapeLeft, .faceUp, .portrait])
    }

    @Test("the DualSense's three nodes are one device: the motion sensors find the gamepad and the touchpad")
    func siblings() throws {
        try onFreshThread {
            _ = MountLeakCheck.armed
            let path = "/tmp/ringloop-motion-kernel-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let folder = try FUSEDeviceFolder(path: path)
            defer { folder.close() }
            let system = HIDEventSystem(configuration: .init(deviceDirectory: path), loop: RingRunLoop.current)
            try system.start()
            defer { system.stop() }
            for name in ["dualsense-usb-gamepad", "dualsense-usb-motion", "dualsense-usb-touchpad"] {
                var description = try #require(try KernelMotionTests.load(name).description)
                // hid-playstation gives every node the controller's address as uniq (the
                // stage's made-up 12:34:56:78:9a:bc); evemu does not record it.
                description.uniqueIdentifier = "12:34:56:78:9a:bc"
                _ = try folder.addDevice(description)
            }
            #expect(runUntil(RingRunLoop.current) { system.devices.count == 3 })
            let motion = try #require(system.devices.first { $0.deviceClass == .motion })
            let siblings = system.siblings(of: motion.id).map(\.deviceClass)
            #expect(Set(siblings) == [.gamepad, .touchpad], "\(siblings)")
        }
    }
}
