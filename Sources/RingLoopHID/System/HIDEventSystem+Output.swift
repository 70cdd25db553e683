import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

// Output to devices: LEDs.
extension HIDEventSystem {
    // MARK: Output

    /// Turns an LED of a device on or off (caps lock, num lock…) through the feed: a
    /// system that reads its own devices writes `EV_LED` to the node as a compositor
    /// does, and the device reports the change back; a client of an event server is
    /// refused (the server owns the devices). Client loop thread, while started.
    public func setLED(_ code: UInt16, on: Bool, device: HIDDeviceID) throws(HIDError) {
        guard let feed else { throw .configuration("setLED: the event system is not started") }
        guard let info = self.device(device) else { throw .noSuchDevice(device) }
        guard info.leds.contains(code) else { throw .noSuchLED(code: code, device: device, available: info.leds) }
        _ = try feed.control(.setLED(code: code, on: on, device: info))
    }
}
