import Dispatch
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// Output to devices: LEDs.
extension HIDEventSystem {
    // MARK: Output

    /// Turns an LED of a device on or off (caps lock, num lock…), by writing `EV_LED`
    /// to its node as a compositor does; the device reports the change back.
    public func setLED(_ code: UInt16, on: Bool, device: HIDDeviceID) throws(HIDError) {
        guard let info = self.device(device) else { throw .noSuchDevice(device) }
        guard info.leds.contains(code) else { throw .noSuchLED(code: code, device: device, available: info.leds) }
        let fd = open(info.path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .open(path: info.path, errno: Errno(rawValue: errno)) }
        defer { close(fd) }
        // The LED change and the SYN_REPORT that ends its frame.
        let frame = [
            InputEvent(type: Evdev.EV_LED, code: code, value: on ? 1 : 0),
            InputEvent(type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0),
        ]
        var records = [UInt8](repeating: 0, count: frame.count * InputEvent.size)
        records.withUnsafeMutableBytes { raw in
            for (index, event) in frame.enumerated() { event.store(to: raw.baseAddress! + index * InputEvent.size) }
        }
        let written = records.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written != records.count { throw .write(path: info.path, errno: Errno(rawValue: written < 0 ? errno : EIO)) }
    }
}
