import CLibEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// A rumble (`FF_RUMBLE`): two motors' magnitudes for a time, as SDL's
/// `SDL_GameControllerRumble` and the kernel's `struct ff_rumble_effect` give them.
public struct RumbleEffect: Sendable, Hashable {
    /// The heavy, low-frequency motor (0…65535).
    public var strong: UInt16
    /// The light, high-frequency motor (0…65535).
    public var weak: UInt16
    /// How long it plays once started, in milliseconds (0: until stopped).
    public var milliseconds: UInt16
    /// How long after the start it begins, in milliseconds.
    public var delayMilliseconds: UInt16

    /// A rumble of `strong` and `weak` for `milliseconds`, starting `delayMilliseconds` after
    /// it is played.
    public init(strong: UInt16, weak: UInt16, milliseconds: UInt16, delayMilliseconds: UInt16 = 0) {
        self.strong = strong
        self.weak = weak
        self.milliseconds = milliseconds
        self.delayMilliseconds = delayMilliseconds
    }
}

/// What a device does with force feedback (`Documentation/input/ff.rst`): effects are
/// uploaded (`EVIOCSFF`, which gives each an id), played and stopped by writing `EV_FF`
/// events (code: the id, value: how many times; 0 stops), and erased (`EVIOCRMFF`). A
/// device holds at most ``forceFeedbackEffectCapacity()`` effects at once; the node must
/// be open for writing.
extension EvdevDevice {
    /// How many effects the device holds at once (`EVIOCGEFFECTS`; 0 without force feedback).
    public func forceFeedbackEffectCapacity() throws(EvdevError) -> Int {
        var count: Int32 = 0
        try request(.effectCount, ringloop_eviocgeffects(), &count)
        return Int(count)
    }

    /// Uploads a rumble (`EVIOCSFF`) and returns the id the device gave it; with
    /// `replacing`, changes the effect of that id instead (it may be playing). A device
    /// without `FF_RUMBLE` answers `EINVAL`; one whose effects are all in use, `ENOSPC`.
    public func uploadRumble(_ effect: RumbleEffect, replacing id: Int16 = -1) throws(EvdevError) -> Int16 {
        var raw = ff_effect()
        ringloop_ff_rumble(&raw, id, effect.strong, effect.weak, effect.milliseconds, effect.delayMilliseconds)
        try request(.uploadEffect, ringloop_eviocsff(), &raw)
        return ringloop_ff_effect_id(&raw)
    }

    /// Plays an uploaded effect `count` times (an `EV_FF` event with the effect's id).
    public func playEffect(_ id: Int16, count: Int32 = 1) throws(EvdevError) {
        try writeEvents([InputEvent(type: Evdev.EV_FF, code: UInt16(bitPattern: id), value: max(1, count))])
    }

    /// Stops an effect that is playing (an `EV_FF` event of value 0).
    public func stopEffect(_ id: Int16) throws(EvdevError) {
        try writeEvents([InputEvent(type: Evdev.EV_FF, code: UInt16(bitPattern: id), value: 0)])
    }

    /// Sets the overall strength of every effect (`FF_GAIN`, 0…65535), where the device has it.
    public func setForceFeedbackGain(_ gain: UInt16) throws(EvdevError) {
        try writeEvents([InputEvent(type: Evdev.EV_FF, code: Evdev.FF_GAIN, value: Int32(gain))])
    }

    /// Erases an uploaded effect (`EVIOCRMFF`), stopping it first if it plays.
    ///
    /// The kernel takes the id as the request's argument itself. A FUSE node cannot be
    /// handed a bare number (FUSE copies an argument in from the address it names, and
    /// fails with `EFAULT`), so on `EFAULT` the id is passed again as a pointer to it,
    /// which is how the package's FUSE nodes read it; a kernel node never answers
    /// `EVIOCRMFF` with `EFAULT`.
    public func eraseEffect(_ id: Int16) throws(EvdevError) {
        while true {
            if ringloop_ioctl_value(fileDescriptor, ringloop_eviocrmff(), Int(id)) >= 0 { return }
            if errno == EINTR { continue }
            guard errno == EFAULT else { throw EvdevError(request: .eraseEffect(id), errno: Errno(rawValue: errno)) }
            break
        }
        var value = Int32(id)
        try request(.eraseEffect(id), ringloop_eviocrmff(), &value)
    }

    /// Writes events to the node in one call.
    func writeEvents(_ events: [InputEvent]) throws(EvdevError) {
        var records = [UInt8](repeating: 0, count: events.count * InputEvent.size)
        records.withUnsafeMutableBytes { raw in
            for (index, event) in events.enumerated() { event.store(to: raw.baseAddress! + index * InputEvent.size) }
        }
        while true {
            let written = records.withUnsafeBytes { Glibc.write(fileDescriptor, $0.baseAddress, $0.count) }
            if written == records.count { return }
            if written < 0 && errno == EINTR { continue }
            throw EvdevError(request: .write, errno: Errno(rawValue: written < 0 ? errno : EIO))
        }
    }
}
