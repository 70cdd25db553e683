import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

// Output to devices: LEDs and rumble.
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

    /// Rumbles a device's two motors, as `SDL_GameControllerRumble` does: `strong` (the
    /// heavy, low-frequency motor) and `weak` (the light, high-frequency one), 0…65535,
    /// for `duration` (zero: until ``stopRumble(_:)``; at most 65.535 s), replacing a rumble
    /// the device plays. A system that reads its own devices uploads the effect to the node
    /// (`EVIOCSFF`, `EV_FF`) and erases it at its end; a client of an event server asks the
    /// server, which plays it only while the client has the focus and stops it when the
    /// focus goes. Client loop thread, while started.
    /// - Throws: ``HIDError/configuration(_:)`` for a device without `FF_RUMBLE` or a
    ///   duration out of range (the message says what would do), ``HIDError/noSuchDevice(_:)``,
    ///   and what opening or writing the node gives.
    public func rumble(_ device: HIDDeviceID, strong: UInt16, weak: UInt16, duration: Duration) throws(HIDError) {
        loop.preconditionOnLoopThread("HIDEventSystem.rumble")
        let info = try rumbleDevice(device)
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        guard duration >= .zero, milliseconds <= Int64(UInt16.max) else {
            throw .configuration("rumble: the duration must be 0 (until stopped) to 65535 ms, not \(duration)")
        }
        let effect = RumbleEffect(strong: strong, weak: weak, milliseconds: UInt16(milliseconds))
        _ = try feed!.control(.rumble(effect, device: info))
    }

    /// Stops a device's rumble (nothing when it plays none). Client loop thread, while
    /// started.
    public func stopRumble(_ device: HIDDeviceID) throws(HIDError) {
        loop.preconditionOnLoopThread("HIDEventSystem.stopRumble")
        _ = try feed!.control(.stopRumble(device: try rumbleDevice(device)))
    }

    /// The attached device `id`, which must have `FF_RUMBLE`.
    private func rumbleDevice(_ id: HIDDeviceID) throws(HIDError) -> HIDDeviceInfo {
        guard feed != nil else { throw .configuration("rumble: the event system is not started") }
        guard let info = self.device(id) else { throw .noSuchDevice(id) }
        guard info.codes[Evdev.EV_FF]?.contains(Evdev.FF_RUMBLE) == true else {
            throw .configuration(
                "rumble: \(info.name) (\(info.path)) has no FF_RUMBLE; a gamepad whose driver supports force feedback has")
        }
        return info
    }
}
