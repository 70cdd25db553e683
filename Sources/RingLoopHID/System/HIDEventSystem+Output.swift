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
        // Write-only, as a compositor opens it: EvdevDevice borrows the descriptor.
        do throws(EvdevError) {
            try EvdevDevice(fileDescriptor: fd).setLED(code, on: on)
        } catch {
            throw .write(path: info.path, errno: error.errno)
        }
    }
}
