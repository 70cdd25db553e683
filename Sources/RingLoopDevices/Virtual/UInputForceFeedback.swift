import CLibEvdev
import RingLoop
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

/// The driver side of a uinput device's force feedback (`Documentation/input/uinput.rst`,
/// `linux/uinput.h`), for a device described with `EV_FF`.
///
/// A reader's `EVIOCSFF` on the node makes the kernel's force-feedback core pick the
/// effect's id and hand the effect to the driver; for a uinput device the kernel sends the
/// uinput descriptor an `EV_UINPUT`/`UI_FF_UPLOAD` event and blocks the reader until the
/// device fetches the request (`UI_BEGIN_FF_UPLOAD`) and answers it (`UI_END_FF_UPLOAD`),
/// or 30 s pass. `EVIOCRMFF` (and a reader's close, which erases its effects) does the same
/// with `UI_FF_ERASE`. Plays, stops and the gain arrive as `EV_FF` events on the descriptor.
///
/// A thread of its own answers every request at once: a rumble (`FF_RUMBLE`) is accepted;
/// any other effect type the description names is refused with `EINVAL` (this device
/// keeps only rumbles). Each request is kept, in order, as a ``ForceFeedbackRequest`` (the
/// same log a FUSE node keeps), and the other events the kernel hands the device (LEDs,
/// repeat settings, the `EV_FF` events too) are kept for ``UInputDevice/receivedEvents()``.
final class UInputForceFeedback: Sendable {
    private struct State {
        var requests = ForceFeedbackLog()
        var received: [InputEvent] = []
        /// Set by ``stop()``.
        var ending = false
    }

    private let state = ThreadLock<State>(State())
    /// Wakes the thread to end: a pipe (read end, write end; -1 when none could be made,
    /// and the thread then looks for the end every 100 ms).
    private let wake: (read: Int32, write: Int32)
    private let thread: PosixThread

    /// The most received events kept (the oldest half goes first), as many as requests.
    static let logLimit = ForceFeedbackLog.limit

    /// Starts answering the requests that arrive on `descriptor` (the uinput device's),
    /// which must stay open until ``stop()`` returns.
    init(descriptor: Int32) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        } else {
            ends = [-1, -1]
        }
        let wake = (read: ends[0], write: ends[1])
        self.wake = wake
        let state = self.state
        thread = PosixThread.start(name: "uinput-ff") {
            Self.serve(descriptor: descriptor, wake: wake.read, state: state)
        }
    }

    /// Every request so far, oldest first.
    var requests: [ForceFeedbackRequest] { state.withLock { $0.requests.requests } }

    /// Takes the events the kernel handed the device since the last call.
    func takeReceived() -> [InputEvent] {
        state.withLock { state in
            defer { state.received.removeAll() }
            return state.received
        }
    }

    /// Ends the thread and waits for it (before the uinput descriptor is closed).
    func stop() {
        state.withLock { $0.ending = true }
        var byte: UInt8 = 1
        if wake.write >= 0 { _ = Glibc.write(wake.write, &byte, 1) }
        thread.join()
        for end in [wake.read, wake.write] where end >= 0 { close(end) }
    }

    private static func serve(descriptor: Int32, wake: Int32, state: ThreadLock<State>) {
        var buffer = [UInt8](repeating: 0, count: 64 * InputEvent.size)
        while !state.withLock({ $0.ending }) {
            var ready = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let readyCount = poll(&ready, 2, wake >= 0 ? -1 : 100)
            if readyCount < 0 {
                if errno == EINTR { continue }
                return
            }
            if readyCount == 0 || ready[1].revents != 0 { continue }
            if ready[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            if count == 0 { return }
            let events = buffer.withUnsafeBytes { raw in
                (0..<(count / InputEvent.size)).map { InputEvent(bytes: raw.baseAddress! + $0 * InputEvent.size) }
            }
            for event in events {
                if event.type == ringloop_ev_uinput() {
                    if let request = answer(event, descriptor: descriptor) { keep(request, in: state) }
                    continue
                }
                if event.type == Evdev.EV_FF, let request = ForceFeedbackRequest(forceFeedbackCode: event.code, value: event.value) {
                    keep(request, in: state)
                }
                state.withLock { state in
                    if state.received.count >= logLimit { state.received.removeFirst(state.received.count / 2) }
                    state.received.append(event)
                }
            }
        }
    }

    private static func keep(_ request: ForceFeedbackRequest, in state: ThreadLock<State>) {
        state.withLock { $0.requests.record(request) }
    }

    /// Fetches and answers one upload or erase request; what was asked, when it was
    /// accepted.
    private static func answer(_ event: InputEvent, descriptor: Int32) -> ForceFeedbackRequest? {
        let requestID = UInt32(bitPattern: event.value)
        if event.code == ringloop_ui_ff_upload() {
            var upload = uinput_ff_upload()
            upload.request_id = requestID
            guard control(descriptor, ringloop_ui_begin_ff_upload(), &upload) else { return nil }
            let effect = upload.effect
            var accepted: ForceFeedbackRequest?
            if effect.type == Evdev.FF_RUMBLE {
                let rumble = RumbleEffect(
                    strong: effect.u.rumble.strong_magnitude, weak: effect.u.rumble.weak_magnitude,
                    milliseconds: effect.replay.length, delayMilliseconds: effect.replay.delay)
                accepted = .upload(id: effect.id, rumble)
                upload.retval = 0
            } else {
                upload.retval = -EINVAL
            }
            return control(descriptor, ringloop_ui_end_ff_upload(), &upload) ? accepted : nil
        }
        if event.code == ringloop_ui_ff_erase() {
            var erase = uinput_ff_erase()
            erase.request_id = requestID
            guard control(descriptor, ringloop_ui_begin_ff_erase(), &erase) else { return nil }
            erase.retval = 0
            return control(descriptor, ringloop_ui_end_ff_erase(), &erase) ? .erase(id: Int16(truncatingIfNeeded: erase.effect_id)) : nil
        }
        return nil
    }

    /// One `ioctl` on the uinput descriptor; whether it succeeded (a request the kernel
    /// gave up on answers `EINVAL`: nothing more to do).
    private static func control<T>(_ descriptor: Int32, _ command: UInt, _ argument: inout T) -> Bool {
        while true {
            let result = withUnsafeMutablePointer(to: &argument) { ioctl(descriptor, command, UnsafeMutableRawPointer($0)) }
            if result >= 0 { return true }
            if errno != EINTR { return false }
        }
    }
}
