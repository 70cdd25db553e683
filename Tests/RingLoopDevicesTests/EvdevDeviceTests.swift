import Glibc
import RingLoopEvdev
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoopDevices

/// `EvdevDevice`'s requests against FUSE nodes served by this process: what they answer
/// matches the node's description and state, and a refused request names itself.
@Suite("EvdevDevice on a node", .enabled(if: FUSEHere.usable, FUSEHere.missing))
struct EvdevDeviceTests {
    @Test("identity and capabilities read back as the node describes them, as libevdev reads them")
    func identityAndCapabilities() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testTouchscreen)
            let device = try EvdevDevice.open(path: node.path)
            defer { device.close() }
            #expect(try device.driverVersion() == Evdev.EV_VERSION)
            let identity = try device.identity()
            #expect(identity.busType == 0x18 && identity.vendor == 0x2386 && identity.product == 0x4328 && identity.version == 0x100)
            #expect(try device.name() == "Virtual Touch Screen")
            #expect(try device.properties() == [Evdev.INPUT_PROP_DIRECT])
            #expect(try device.codes(ofType: Evdev.EV_KEY) == [Evdev.BTN_TOUCH])
            #expect(try device.codes(ofType: Evdev.EV_ABS) == testTouchscreen.codes[Evdev.EV_ABS])
            #expect(try device.codes(ofType: Evdev.EV_SYN) == [Evdev.EV_SYN, Evdev.EV_KEY, Evdev.EV_ABS])
            #expect(try device.absoluteAxis(Evdev.ABS_X) == testTouchscreen.absoluteAxes[Evdev.ABS_X])
            // The description libevdev reads from the same node agrees.
            let described = try InputDeviceDescription(fileDescriptor: device.fileDescriptor)
            #expect(described.codes == testTouchscreen.codes)
            #expect(described.absoluteAxes == testTouchscreen.absoluteAxes)
            // No `phys`: the node answers ENOENT, named as the request that failed.
            #expect(throws: EvdevError(request: .physicalLocation, errno: .noSuchFileOrDirectory)) {
                try device.physicalLocation()
            }
        }
    }

    @Test("key, slot and axis state follow the events sent")
    func state() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testTouchscreen)
            let device = try EvdevDevice.open(path: node.path)
            defer { device.close() }
            try node.send([
                (Evdev.EV_ABS, Evdev.ABS_MT_SLOT, 1), (Evdev.EV_ABS, Evdev.ABS_MT_TRACKING_ID, 7),
                (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_X, 300), (Evdev.EV_ABS, Evdev.ABS_MT_POSITION_Y, 400),
                (Evdev.EV_ABS, Evdev.ABS_X, 300), (Evdev.EV_KEY, Evdev.BTN_TOUCH, 1), (Evdev.EV_SYN, Evdev.SYN_REPORT, 0),
            ])
            #expect(try device.keysDown() == [Evdev.BTN_TOUCH])
            #expect(try device.switchesOn().isEmpty)
            #expect(try device.absoluteAxis(Evdev.ABS_X).value == 300)
            #expect(try device.absoluteAxis(Evdev.ABS_MT_SLOT).value == 1)
            let ids = try device.slotValues(of: Evdev.ABS_MT_TRACKING_ID, slotCount: 10)
            #expect(ids.count == 10 && ids[1] == 7 && ids[0] == -1)
            #expect(try device.slotValues(of: Evdev.ABS_MT_POSITION_X, slotCount: 10)[1] == 300)
        }
    }

    @Test("grab and ungrab, clock, key repeat and LED writes")
    func settings() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testKeyboard)
            let device = try EvdevDevice.open(path: node.path, writable: true)
            defer { device.close() }
            let other = try EvdevDevice.open(path: node.path)
            defer { other.close() }
            try device.setClock(CLOCK_MONOTONIC)
            try device.grab()
            #expect(throws: EvdevError(request: .grab, errno: .resourceBusy)) { try other.grab() }
            // Released, the node can be grabbed by the other descriptor, and ungrabbing a node
            // this descriptor does not hold is refused (as the kernel's evdev answers).
            try device.ungrab()
            try other.grab()
            #expect(throws: EvdevError(request: .ungrab, errno: .invalidArgument)) { try device.ungrab() }
            try other.ungrab()
            #expect(try device.keyRepeat() == (250, 33))
            try device.setKeyRepeat(delay: 400, period: 50)
            #expect(try other.keyRepeat() == (400, 50))
            try device.setLED(Evdev.LED_CAPSL, on: true)
            #expect(try other.ledsOn() == [Evdev.LED_CAPSL])
        }
    }

    @Test("a refused request throws the request and the errno: an axis the device lacks, no descriptor")
    func errors() throws {
        try withDeviceFolder { folder in
            let node = try folder.addDevice(testMouse)
            let device = try EvdevDevice.open(path: node.path)
            let noAxis = EvdevError(request: .absoluteAxis(Evdev.ABS_X), errno: .invalidArgument)
            #expect(throws: noAxis) { try device.absoluteAxis(Evdev.ABS_X) }
            #expect(noAxis.description == "EVIOCGABS(ABS_X): \(Errno.invalidArgument)")
            // Past ABS_MAX: refused before any request is made.
            #expect(throws: EvdevError(request: .absoluteAxis(0x40), errno: .invalidArgument)) { try device.absoluteAxis(0x40) }
            device.close()
            // Not `device` once closed: the suite's other tests, running in parallel, may be
            // given its number at once. -1 is never a descriptor.
            #expect(throws: EvdevError(request: .name, errno: .badFileDescriptor)) {
                try EvdevDevice(fileDescriptor: -1).name()
            }
        }
        #expect(throws: EvdevError(request: .open(path: "/nonexistent/event0"), errno: .noSuchFileOrDirectory)) {
            try EvdevDevice.open(path: "/nonexistent/event0")
        }
    }
}
