import RingLoop
import RingLoopEvdev
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Records an evdev node's events on a loop, as `evemu-record` does: the device's
/// description when it is opened, then every event, timed on `CLOCK_MONOTONIC` and made
/// relative to the first.
///
/// ```swift
/// let loop = RingRunLoop.current
/// let recorder = try Recorder(nodePath: "/dev/input/event3", loop: loop)
/// recorder.start { _ in loop.stop() }
/// loop.run(mode: .default, until: .now + .seconds(10))
/// recorder.stop()
/// try recorder.recording.write(to: "keyboard.evemu")
/// ```
///
/// Threading: every member is used on the loop's thread (the one that created it).
public final class Recorder {
    /// How a recording ended.
    public enum End: Sendable, Hashable {
        /// ``Recorder/stop()`` was called.
        case stopped
        /// The device went away (its reads answer `ENODEV`, or `ENOTCONN` when the FUSE
        /// folder serving it went, or its node hung up), as evtest reports "No such device".
        case removed
        /// A read failed otherwise.
        case failed(Errno)
    }

    /// The node recorded.
    public let nodePath: String
    /// What the device said about itself when it was opened.
    public let description: InputDeviceDescription
    /// How it ended, once it has.
    public var end: End? { capture.value.end }
    /// The events so far, timed from the first.
    public var events: [InputEvent] { capture.value.events }

    private let fd: Int32
    private let loop: RingRunLoop
    private let capture: LoopBound<Capture>
    private var source: LoopPortSource?

    struct Capture {
        var events: [InputEvent] = []
        var first: Int64?
        var end: End?
        var buffer = [UInt8](repeating: 0, count: InputEvent.size * 256)
    }

    /// Opens `nodePath` and reads its description.
    /// - Throws: ``RecorderError``: the node cannot be opened, or is not an evdev device.
    public init(nodePath: String, loop: RingRunLoop) throws(RecorderError) {
        let fd = open(nodePath, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .open(path: nodePath, errno: Errno(rawValue: errno)) }
        // Kernel times on CLOCK_MONOTONIC, as the chain reads them; set first, since
        // switching the clock once events are queued drops them (the kernel flushes the
        // reader's buffer and queues SYN_DROPPED).
        _ = try? EvdevDevice(fileDescriptor: fd).setClock(CLOCK_MONOTONIC)
        do throws(EvdevError) {
            description = try InputDeviceDescription(fileDescriptor: fd)
        } catch {
            close(fd)
            throw .notEvdev(path: nodePath, reason: "\(RecordingError.unreadable(file: "fd \(fd)", errno: error.errno))")
        }
        self.nodePath = nodePath
        self.fd = fd
        self.loop = loop
        capture = LoopBound(Capture(), loop: loop)
    }

    deinit {
        source?.invalidate()
        // The source is off the loop once invalidated on the loop's thread; then close.
        close(fd)
    }

    /// Starts reading the node on the loop (in its common modes).
    /// - Parameter ended: Called on the loop's thread when the device goes or a read fails
    ///   (not on ``stop()``).
    public func start(ended: @escaping @Sendable (End) -> Void = { _ in }) {
        guard source == nil else { return }
        let fd = fd
        let capture = capture
        let source = LoopPortSource(fileDescriptor: FileDescriptor(rawValue: fd)) { events in
            guard capture.value.end == nil else { return }
            if let end = Self.drain(fd, into: &capture.value, hungUp: !events.isDisjoint(with: [.hangUp, .error, .invalid])) {
                capture.value.end = end
                ended(end)
            }
        }
        self.source = source
        loop.add(source, to: .common)
    }

    /// Stops reading, once the events the kernel already queued for this reader are read
    /// (what was read stays in ``events``).
    public func stop() {
        guard source != nil else { return }
        source?.invalidate()
        source = nil
        if capture.value.end == nil {
            capture.value.end = Self.drain(fd, into: &capture.value, hungUp: false) ?? .stopped
        }
    }

    /// What was recorded, with a note naming the node.
    public var recording: Recording {
        Recording(description: description, events: events, notes: ["Recorded by ringloop record from \(nodePath)"])
    }

    /// Reads every event waiting; how the recording ended, if it did.
    private static func drain(_ fd: Int32, into capture: inout Capture, hungUp: Bool) -> End? {
        while true {
            let count = capture.buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN: return hungUp ? .removed : nil
                // A FUSE node's folder unmounted under its reader answers ENOTCONN.
                case ENODEV, ENOTCONN, ECONNABORTED: return .removed
                case let error: return .failed(Errno(rawValue: error))
                }
            }
            if count == 0 { return .removed }
            capture.buffer.withUnsafeBytes { raw in
                for index in 0..<(count / InputEvent.size) {
                    var event = InputEvent(bytes: raw.baseAddress! + index * InputEvent.size)
                    let start = capture.first ?? event.timeMicroseconds
                    capture.first = start
                    let relative = event.timeMicroseconds - start
                    (event.seconds, event.microseconds) = (relative / 1_000_000, Int32(relative % 1_000_000))
                    capture.events.append(event)
                }
            }
        }
    }
}

/// Why a ``Recorder`` could not record a node.
public enum RecorderError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The node could not be opened.
    case open(path: String, errno: Errno)
    /// The node answers, but not as an evdev device.
    case notEvdev(path: String, reason: String)

    public var description: String {
        switch self {
        case .open(let path, let errno):
            let fix = errno == .permissionDenied || errno == .notPermitted ? " (add the user to group 'input', or run as root)" : ""
            return "\(path): cannot open: \(String(cString: strerror(errno.rawValue)))\(fix)"
        case .notEvdev(let path, let reason): return "\(path): not an evdev device (\(reason))"
        }
    }
}
