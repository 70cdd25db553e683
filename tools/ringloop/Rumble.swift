import ArgumentParser
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// `fftest` for rumble: uploads one `FF_RUMBLE` effect, plays it for its duration, stops
/// and erases it.
struct Rumble: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a gamepad rumble: strong and weak motors for a duration (as SDL_GameControllerRumble).",
        discussion: """
            DEVICE is an evdev node with force feedback (FF_RUMBLE), real or virtual (a
            FUSE node of ringloop replay reports what it was asked to play). The effect is
            uploaded (EVIOCSFF), played (an EV_FF write), stopped after --duration and
            erased (EVIOCRMFF). A device without FF_RUMBLE is refused, naming what it has.

            Examples:
              ringloop rumble /dev/input/event5 --strong 1 --weak 0.5 --duration 300
              ringloop rumble /dev/input/event5 --weak 0.2 --duration 100 --gain 0.5
            """
    )

    @Argument(help: "An evdev node with FF_RUMBLE.", completion: .file())
    var device: String

    @Option(help: "The strong (low-frequency) motor, 0 to 1.")
    var strong: Double = 0

    @Option(help: "The weak (high-frequency) motor, 0 to 1.")
    var weak: Double = 0

    @Option(help: "Milliseconds to rumble (1 to 65535).")
    var duration: Int = 500

    @Option(help: "The device's overall strength (FF_GAIN), 0 to 1, set first where it has FF_GAIN.")
    var gain: Double?

    func validate() throws {
        for (name, value) in [("--strong", strong), ("--weak", weak), ("--gain", gain ?? 0)] {
            guard value.isFinite, value >= 0, value <= 1 else { throw ValidationError("\(name): \(value) is not between 0 and 1") }
        }
        guard (1...65535).contains(duration) else {
            throw ValidationError("--duration: \(duration) is not between 1 and 65535 milliseconds")
        }
    }

    static func magnitude(_ value: Double) -> UInt16 { UInt16((value * 65535).rounded()) }

    func run() throws {
        try Failure.reporting("rumble") {
            let node: EvdevDevice
            do { node = try EvdevDevice.open(path: device, writable: true) } catch let error as EvdevError {
                throw Failure.input(device, errno: error.errno)
            }
            defer { node.close() }
            let effects: Set<UInt16>
            do { effects = try node.codes(ofType: Evdev.EV_FF) } catch let error as EvdevError {
                throw Failure.wrongKind(path: device, found: "is not an evdev node (\(error))", expected: "an evdev node with FF_RUMBLE")
            }
            guard effects.contains(Evdev.FF_RUMBLE) else {
                let has = effects.sorted().map { Evdev.shownName(ofCode: $0, type: Evdev.EV_FF) }
                throw Failure.unavailable(
                    "\(device): no FF_RUMBLE (force feedback: \(has.isEmpty ? "none" : has.joined(separator: ", "))); rumble needs a device with FF_RUMBLE"
                )
            }
            do {
                let capacity = try node.forceFeedbackEffectCapacity()
                if let gain, effects.contains(Evdev.FF_GAIN) { try node.setForceFeedbackGain(Self.magnitude(gain)) }
                let effect = RumbleEffect(strong: Self.magnitude(strong), weak: Self.magnitude(weak), milliseconds: UInt16(duration))
                let id: Int16
                do { id = try node.uploadRumble(effect) } catch let error as EvdevError where error.errno == .noSpace {
                    throw Failure.unavailable("\(device): all \(capacity) force-feedback effects are in use by other programs")
                }
                try node.playEffect(id)
                writeLine("rumble: effect \(id) of \(capacity), strong \(effect.strong) weak \(effect.weak) for \(duration) ms")
                var time = timespec(tv_sec: duration / 1000, tv_nsec: (duration % 1000) * 1_000_000)
                var left = timespec()
                while nanosleep(&time, &left) != 0 && errno == EINTR { time = left }
                try node.stopEffect(id)
                try node.eraseEffect(id)
            } catch let error as EvdevError {
                throw Failure.ioError("\(device): \(error)")
            }
        }
    }
}
