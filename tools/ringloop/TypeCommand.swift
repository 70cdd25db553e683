import ArgumentParser
import RingLoop
import RingLoopDevices
import RingLoopEvdev
import RingLoopHID

#if canImport(Glibc)
import Glibc
#endif

struct TypeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "type",
        abstract: "Type text as key presses of a virtual keyboard, in a keymap.",
        discussion: """
            Each character is typed on the key, level and layout the keymap gives it (Shift
            and AltGr held around it, the keymap's own group keys to switch layouts), or as
            a dead key followed by a key that the locale's Compose table composes into it.
            A character the keymap cannot type is refused with its name and position, and
            nothing is typed.

            With --output the key events are written as an evemu recording of a virtual
            keyboard instead. Without it a virtual keyboard is made (uinput where usable,
            else a FUSE folder, as replay does), its node printed, and the text typed into
            it after --wait seconds, or once --wait-for-readers readers read it.

            Examples:
              ringloop type --layout fr --output typed.evemu "Bonjour @ 10 EUR"
              ringloop type --layout de "Hallo, Welt"
            """
    )

    @Argument(help: "The text to type.")
    var text: String

    @OptionGroup var keymapOptions: KeymapOptions

    @Option(help: "Write the key events to this evemu recording instead of typing them.", completion: .file())
    var output: String?

    @Option(help: "Milliseconds between key events (1 to 1000).")
    var delay: Int = 12

    @Option(help: "Seconds to wait for readers before typing into a virtual keyboard (default 1).")
    var wait: Double?

    @Option(help: "uinput or fuse (default: uinput where usable, else fuse).")
    var backend: VirtualDeviceBackend?

    @Option(help: "Type once this many readers read the keyboard's node (FUSE nodes only; --wait bounds the wait).")
    var waitForReaders: Int?

    func validate() throws {
        guard (1...1000).contains(delay) else { throw ValidationError("--delay must be between 1 and 1000 milliseconds, got \(delay)") }
        if let wait { try OptionRange.wait(wait) }
        if output != nil && (wait != nil || backend != nil || waitForReaders != nil) {
            throw ValidationError(
                "--wait, --wait-for-readers and --backend are for typing into a virtual keyboard; --output writes a recording")
        }
        if let waitForReaders, !(1...1024).contains(waitForReaders) {
            throw ValidationError("--wait-for-readers must be between 1 and 1024, got \(waitForReaders)")
        }
        if waitForReaders != nil, backend == .uinput {
            throw ValidationError("--wait-for-readers counts the readers of FUSE nodes; the kernel does not say who has a uinput node open")
        }
    }

    func run() throws {
        try Failure.reporting("type") {
            let keymap = try keymapOptions.keymap()
            // Without a Compose table (no libx11-data) only characters on keys are typed.
            var composeTable: ComposeTable?
            do { composeTable = try ComposeTable.forLocale() } catch { printError("ringloop type: no dead keys: \(error)") }
            let strokes: [KeyStroke]
            do {
                strokes = try keymap.keyStrokes(typing: text, composeTable: composeTable)
            } catch {
                throw Failure(error)
            }
            let recording = Self.recording(of: strokes, delayMilliseconds: delay, configuration: keymap.configuration)
            if let output {
                do { try recording.write(to: output) } catch { throw Failure(error) }
                printError("ringloop type: \(strokes.count) key events written to \(output) (\(keymap.configuration))")
                return
            }
            try typeLive(recording)
        }
    }

    /// A virtual keyboard (the keys of a 105-key keyboard and every key typed, the lock
    /// LEDs) and one frame per stroke, `delay` apart.
    static func recording(of strokes: [KeyStroke], delayMilliseconds: Int, configuration: KeyboardConfiguration) -> Recording {
        var keys = Set((1...UInt16(255)).filter { Evdev.name(ofCode: $0, type: Evdev.EV_KEY) != nil })
        keys.formUnion(strokes.map(\.code))
        let device = InputDeviceDescription(
            name: "RingLoop virtual keyboard", busType: Evdev.BUS_VIRTUAL, vendor: 0, product: 0,
            codes: [Evdev.EV_KEY: keys, Evdev.EV_LED: [Evdev.LED_NUML, Evdev.LED_CAPSL, Evdev.LED_SCROLLL]])
        var events: [InputEvent] = []
        for (index, stroke) in strokes.enumerated() {
            let microseconds = Int64(index) * Int64(delayMilliseconds) * 1000
            let (seconds, fraction) = microseconds.quotientAndRemainder(dividingBy: 1_000_000)
            let time = (seconds: seconds, microseconds: Int32(fraction))
            events.append(
                InputEvent(
                    seconds: time.seconds, microseconds: time.microseconds, type: Evdev.EV_KEY, code: stroke.code,
                    value: stroke.isDown ? 1 : 0))
            events.append(
                InputEvent(seconds: time.seconds, microseconds: time.microseconds, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: 0))
        }
        return Recording(
            description: device, events: events, notes: ["Typed by ringloop type in the keymap \(configuration)"], warnings: [])
    }

    /// Hosts the keyboard, prints its node, waits, types, removes it.
    func typeLive(_ recording: Recording) throws(Failure) {
        let loop = RingRunLoop.current
        let replay: ReplaySession
        do {
            replay = try ReplaySession(
                files: [[recording]],
                configuration: .init(
                    backend: waitForReaders != nil ? .fuse : backend, speed: .recorded, readers: waitForReaders ?? 0,
                    readersTimeout: waitForReaders != nil ? wait.map(ReplayCommand.duration) : nil,
                    startDelay: waitForReaders == nil ? ReplayCommand.duration(wait ?? 1) : .zero, settleTime: .milliseconds(200)))
        } catch {
            throw Failure(error)
        }
        defer { replay.close() }
        StandardOutput.write(replay.nodePaths.map { $0 + "\n" }.joined())
        replay.start(
            progress: { _ in },
            finished: { _ in
                loop.perform(inModes: [.common]) { loop.stop() }
                loop.wakeUp()
            })
        let keepAlive = LoopSource {}
        loop.add(keepAlive, to: .default)
        loop.run(mode: .default, until: .distantFuture)
        keepAlive.invalidate()
        let outcome = replay.wait()
        if let failure = outcome.failures.first { throw Failure(failure) }
    }
}
