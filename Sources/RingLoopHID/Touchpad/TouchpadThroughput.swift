import RingLoop
import RingLoopEvdev

/// The touchpad interpreter's cost per frame, for `ringloop-bench`'s `touchpad` rows:
/// frames of ten contacts on a precision touchpad (the description of hid-multitouch's
/// ELAN pad) through ``TouchpadInterpreter/process(_:at:into:)``, from memory. It lives
/// here, with package access, so the measured path is compiled as the chain's own is (see
/// ``DecodeThroughput``).
package enum TouchpadThroughput {
    /// Frames of `contacts` fingers that touch down together, move 100 frames 1 mm a frame
    /// apart in time (8 ms), and lift: one round.
    package static func frames(contacts: Int) -> [DigitizerFrame] {
        var frames: [DigitizerFrame] = []
        for step in 0...101 {
            var frame = DigitizerFrame()
            for finger in 0..<contacts {
                let phase: Contact.Phase = step == 0 ? .began : step == 101 ? .ended : .moved
                let x = Int32(200 + finger * 280)
                let y = Int32(300 + min(step, 100) * 15)
                frame.append(Contact(slot: Int16(finger), trackingID: Int32(finger + 1), phase: phase, x: x, y: y))
            }
            frame.fingerCount = step == 101 ? 0 : contacts
            frames.append(frame)
        }
        return frames
    }

    /// Runs `frames` `warmRounds` then `measuredRounds` times through one interpreter of
    /// `device` with tapping on (every contact is a candidate for everything); returns the
    /// frames fed in the measured rounds and the actions made. `beforeMeasured` runs between
    /// the two.
    package static func run(
        frames: [DigitizerFrame], device: HIDDeviceInfo, warmRounds: Int, measuredRounds: Int, beforeMeasured: () -> Void
    ) -> (frames: Int, actions: Int) {
        var interpreter = TouchpadInterpreter(device: device, settings: TouchpadSettings(tapping: true))
        var out: [TouchpadAction] = []
        out.reserveCapacity(64)
        var time = MonotonicInstant(nanoseconds: 1_000_000_000)
        var fed = 0
        var actions = 0
        for round in 0..<(warmRounds + measuredRounds) {
            if round == warmRounds {
                beforeMeasured()
                fed = 0
                actions = 0
            }
            for frame in frames {
                time = time + .milliseconds(8)
                interpreter.process(frame, at: time, into: &out)
                actions += out.count
                out.removeAll(keepingCapacity: true)
                fed += 1
            }
            time = time + .seconds(1)
            interpreter.advance(to: time, into: &out)
            out.removeAll(keepingCapacity: true)
        }
        return (fed, actions)
    }
}
