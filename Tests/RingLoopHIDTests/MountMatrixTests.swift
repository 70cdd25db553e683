import Glibc
import RingLoop
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices
@testable import RingLoopHID

/// udev's `ACCEL_MOUNT_MATRIX` (systemd's 60-sensor.hwdb) and the settings file's
/// `mount-matrix`, applied to a real DualSense's accelerometer as iio-sensor-proxy applies
/// it: each row of the matrix gives one corrected axis from the raw ones.
@Suite("Motion sensors' mount matrix")
struct MountMatrixTests {
    @Test("udev's notation reads (as hwdb writes it, spaces or none); bad matrices say what would be valid")
    func parsing() throws {
        let turned = try MountMatrix(parsing: "0, 1, 0; -1, 0, 0; 0, 0, 1")
        #expect(turned.rows == [[0, 1, 0], [-1, 0, 0], [0, 0, 1]])
        #expect(try MountMatrix(parsing: "1,0,0;0,1,0;0,0,1") == .identity)
        #expect(turned.description == "0, 1, 0; -1, 0, 0; 0, 0, 1")
        // (x, y, z) = (0.1, 0.2, 0.9): x' = y, y' = −x, z' = z.
        #expect(turned.apply(MotionVector(x: 0.1, y: 0.2, z: 0.9)) == MotionVector(x: 0.2, y: -0.1, z: 0.9))
        for (text, said) in [
            ("1, 0, 0; 0, 1, 0", "has 2 row(s)"), ("1, 0; 0, 1, 0; 0, 0, 1", "'1, 0' is not three numbers"),
            ("1, 0, 0; 0, 0, 0; 0, 0, 1", "is all zeros"), ("1, 0, x; 0, 1, 0; 0, 0, 1", "is not three numbers"),
        ] {
            #expect(throws: DeviceSettingValueError.self) { try MountMatrix(parsing: text) }
            do { _ = try MountMatrix(parsing: text) } catch {
                #expect(
                    error.description.contains(said) && error.description.contains("ACCEL_MOUNT_MATRIX: 1, 0, 0; 0, 1, 0; 0, 0, 1"),
                    "\(error)")
            }
        }
    }

    @Test("from udev, then from the file (which wins), each with its source; a malformed property is said and not used")
    func sources() throws {
        var sensor = DeviceIdentity(name: "Sony Interactive Entertainment DualSense Wireless Controller Motion Sensors", roles: [.motion])
        sensor.properties = [DeviceIdentity.mountMatrixProperty: "0, -1, 0; 1, 0, 0; 0, 0, 1"]
        let fromUdev = DeviceSettingsResolver().settings(for: sensor)
        #expect(fromUdev.mountMatrix == (try MountMatrix(parsing: "0,-1,0;1,0,0;0,0,1")))
        #expect(fromUdev.shown == ["mount-matrix = 0, -1, 0; 1, 0, 0; 0, 0, 1 (from udev's ACCEL_MOUNT_MATRIX)"])
        let file = DeviceSettingsFile(
            text: "version = 1\n[match class=motion]\nmount-matrix = -1, 0, 0; 0, -1, 0; 0, 0, 1\n", path: "/etc/ringloop/devices.conf")
        #expect(file.problems.isEmpty, "\(file.problems)")
        let fromFile = DeviceSettingsResolver(files: [file]).settings(for: sensor)
        #expect(fromFile.shown == ["mount-matrix = -1, 0, 0; 0, -1, 0; 0, 0, 1 (from /etc/ringloop/devices.conf:3)"])
        sensor.properties[DeviceIdentity.mountMatrixProperty] = "1, 0, 0"
        #expect(DeviceSettingsResolver().settings(for: sensor).mountMatrix == nil)
        #expect(DeviceSettingsResolver().udevProblems(for: sensor).first?.contains("has 1 row(s)") == true)
        let bad = DeviceSettingsFile(text: "version = 1\n[match class=motion]\nmount-matrix = 1 0 0 0 1 0 0 0 1\n", path: "d.conf")
        #expect(
            bad.problems.map(\.description).first?.hasPrefix("d.conf:3: mount-matrix: '1 0 0 0 1 0 0 0 1' has 1 row(s)") == true,
            "\(bad.problems)")
    }

    @Test("a real DualSense's samples through the chain: acceleration turned by the file's matrix, rotation rate as decoded")
    func chain() throws {
        let recording = try loadMotionRecording("dualsense-rotation")
        let decoded: [MotionEvent] = decodedEvents(of: recording).compactMap {
            if case .motion(let motion) = $0.payload { motion } else { nil }
        }
        #expect(decoded.count > 100)
        let file = DeviceSettingsFile(
            text: "version = 1\n[match class=motion]\nmount-matrix = 0, 1, 0; -1, 0, 0; 0, 0, -1\n", path: "devices.conf")
        let seen = try onFreshThread { () throws -> [MotionEvent] in
            let loop = RingRunLoop.current
            let system = HIDEventSystem(configuration: .init(deviceDirectory: "/tmp", queueCapacity: 1 << 16, nodeNames: []), loop: loop)
            system.setScreens(DeviceSettingsResolver(files: [file]))
            var seen: [MotionEvent] = []
            var removed = false
            system.addHandler { event in
                if case .motion(let motion) = event.payload { seen.append(motion) }
                if event.kind == .deviceRemoved { removed = true }
                return .pass
            }
            try system.start()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            // The whole recording (480 kB) fits the pipe: written before the loop reads.
            #expect(fcntl(ends[1], 1031 /* F_SETPIPE_SZ */, Int32(1 << 20)) >= 1 << 20)
            _ = try system.attachStream(fileDescriptor: FileDescriptor(rawValue: ends[0]), description: deviceInfo(of: recording))
            let writer = ThreadBody { writeFrames(recording.events, to: ends[1]) }
            writer.runAndJoin()
            close(ends[1])
            #expect(runUntil(loop) { removed })
            system.stop()
            return seen
        }
        #expect(seen.count == decoded.count)
        for (got, raw) in zip(seen, decoded) {
            // Rows (0, 1, 0), (−1, 0, 0), (0, 0, −1): x' = y, y' = −x, z' = −z.
            #expect(got.acceleration == MotionVector(x: raw.acceleration.y, y: -raw.acceleration.x, z: -raw.acceleration.z))
            #expect(got.rotationRate == raw.rotationRate && got.sensorTime == raw.sensorTime)
            if got.acceleration != MotionVector(x: raw.acceleration.y, y: -raw.acceleration.x, z: -raw.acceleration.z) { break }
        }
        #expect(seen.contains { $0.acceleration != .zero && $0.acceleration != MotionVector(x: 0, y: 0, z: 0) })
    }
}
