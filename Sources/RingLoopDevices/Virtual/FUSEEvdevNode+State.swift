import CFuse
import RingLoopEvdev

#if canImport(Glibc)
import Glibc
#endif

extension FUSEEvdevNode {
    /// Everything about a node that its readers and its sender change, reached only
    /// inside ``FUSEEvdevNode/guarded``'s lock. Readers are looked up by index, never
    /// force-unwrapped: a request for a reader that is gone is answered as such.
    struct NodeState {
        /// The device's own state (keys, LEDs, axes, slots, repeat) and its input filter.
        var device: EvdevDeviceState
        /// The open files, by the id given at open.
        var clients: [UInt64: Client] = [:]
        var nextClient: UInt64 = 1
        /// The reader holding `EVIOCGRAB`.
        var grabbedBy: UInt64?
        var removed = false
        var served = ServedRequests()
        /// Set once the kernel has taken the entry out of the folder (libfuse threads).
        var unlinked = false
        /// Set once the kernel has created the entry (the folder's mknod).
        var published = false
        /// Force feedback: the uploaded rumbles by id, those playing, what was asked.
        var effects: [Int16: RumbleEffect] = [:]
        var playing: Set<Int16> = []
        var forceFeedback = ForceFeedbackLog()

        /// Calls `body` with each reader's index; `body` may change the reader, not add
        /// or remove one. (Walking the indices by hand keeps no second reference to the
        /// table, which would make each change copy it.)
        mutating func forEachClient(_ body: (inout NodeState, Dictionary<UInt64, Client>.Index) -> Void) {
            var index = clients.startIndex
            while index != clients.endIndex {
                body(&self, index)
                clients.formIndex(after: &index)
            }
        }

        /// Stamps a frame with the three clocks and hands it to the readers it is for.
        mutating func deliver(_ frame: [(UInt16, UInt16, Int32)], replies: inout [Reply]) {
            var realtime = timespec()
            var monotonic = timespec()
            var boottime = timespec()
            clock_gettime(CLOCK_REALTIME, &realtime)
            clock_gettime(CLOCK_MONOTONIC, &monotonic)
            clock_gettime(CLOCK_BOOTTIME, &boottime)
            let frameEnd = device.frameEndValue
            forEachClient { node, index in
                if let grabbedBy = node.grabbedBy, grabbedBy != node.clients.keys[index] { return }
                guard !node.clients.values[index].revoked else { return }
                let time: timespec
                switch node.clients.values[index].clock {
                case CLOCK_MONOTONIC: time = monotonic
                case CLOCK_BOOTTIME: time = boottime
                default: time = realtime
                }
                let seconds = Int64(time.tv_sec)
                let micro = Int32(truncatingIfNeeded: time.tv_nsec / 1000)
                for (type, code, value) in frame {
                    _ = node.clients.values[index].buffer.push(
                        InputEvent(seconds: seconds, microseconds: micro, type: type, code: code, value: value))
                }
                let woke = node.clients.values[index].buffer.push(
                    InputEvent(seconds: seconds, microseconds: micro, type: Evdev.EV_SYN, code: Evdev.SYN_REPORT, value: frameEnd))
                if woke { node.wake(at: index, replies: &replies) }
            }
        }

        /// Answers the parked reads and the poll waiter of the reader at `index`, which
        /// has data (or is gone).
        mutating func wake(at index: Dictionary<UInt64, Client>.Index, replies: inout [Reply]) {
            let hungUp = removed || clients.values[index].revoked
            while !clients.values[index].pendingReads.isEmpty, clients.values[index].buffer.hasReadableEvents || hungUp {
                let read = clients.values[index].pendingReads.removeFirst()
                if hungUp {
                    replies.append(.error(read.request, ENODEV))
                } else {
                    served.readsAnsweredAtSending += 1
                    replies.append(.data(read.request, clients.values[index].takeEvents(maximumBytes: read.size)))
                }
            }
            if let handle = clients.values[index].pollHandle {
                clients.values[index].pollHandle = nil
                served.pollNotifications += 1
                replies.append(.notifyPoll(handle))
            }
        }
    }

    /// One open file of the node: its buffer and clock, and what waits on it.
    struct Client {
        var buffer: EvdevClientBuffer
        var clock: Int32 = CLOCK_REALTIME
        var pollHandle: OpaquePointer?
        var pendingReads: [(request: fuse_req_t, size: Int)] = []
        var revoked = false
        /// Whether the reader has read or polled the node: it is set up (its clock, its
        /// description read) and waits for events (``FUSEEvdevNode/readerCount``).
        var hasAskedForEvents = false
        /// Events this file's reads have taken so far.
        var eventsTaken = 0

        /// Takes up to `maximumBytes` of complete events, as `read(2)` returns them.
        mutating func takeEvents(maximumBytes: Int) -> [UInt8] {
            var records: [InputEvent] = []
            eventsTaken += buffer.pop(into: &records, maximum: maximumBytes / InputEvent.size)
            var bytes = [UInt8](repeating: 0, count: records.count * InputEvent.size)
            bytes.withUnsafeMutableBytes { raw in
                for (index, record) in records.enumerated() {
                    record.store(to: raw.baseAddress! + index * InputEvent.size)
                }
            }
            return bytes
        }
    }
}

/// What a program asked a virtual device's force feedback to do, in order: what a test
/// rig asserts of an app's rumble (``FUSEEvdevNode/forceFeedbackRequests``).
public enum ForceFeedbackRequest: Sendable, Hashable, CustomStringConvertible {
    /// `EVIOCSFF`: a rumble stored under `id`.
    case upload(id: Int16, RumbleEffect)
    /// An `EV_FF` write: play effect `id` `count` times.
    case play(id: Int16, count: Int32)
    /// An `EV_FF` write of 0, or the erasure of a playing effect: stop `id`.
    case stop(id: Int16)
    /// `EVIOCRMFF`: effect `id` erased.
    case erase(id: Int16)
    /// `FF_GAIN`: the overall strength (0…65535).
    case gain(UInt16)

    public var description: String {
        switch self {
        case .upload(let id, let effect):
            "upload \(id): rumble strong \(effect.strong) weak \(effect.weak) for \(effect.milliseconds) ms"
                + (effect.delayMilliseconds > 0 ? " after \(effect.delayMilliseconds) ms" : "")
        case .play(let id, let count): "play \(id)" + (count > 1 ? " \(count) times" : "")
        case .stop(let id): "stop \(id)"
        case .erase(let id): "erase \(id)"
        case .gain(let gain): "gain \(gain)"
        }
    }
}

/// What a virtual device's force feedback was asked, in order; past ``limit`` the oldest
/// half goes first (a FUSE node's log and a uinput device's are the same).
struct ForceFeedbackLog: Sendable {
    /// The most requests kept.
    static let limit = 4096

    private(set) var requests: [ForceFeedbackRequest] = []

    mutating func record(_ request: ForceFeedbackRequest) {
        if requests.count >= Self.limit { requests.removeFirst(requests.count / 2) }
        requests.append(request)
    }
}

extension ForceFeedbackRequest {
    /// What an `EV_FF` event asks, as the kernel takes it: code `FF_GAIN` sets the gain;
    /// any other code is an effect id, played (`value` times) or stopped (0). `nil` for
    /// autocentering (not kept) and for what the kernel drops. A negative value, whatever
    /// the code, reaches no driver: the input core passes `EV_FF` on to the device only
    /// for a value of 0 or more (`input_get_disposition` in `drivers/input/input.c`), so
    /// it neither stops an effect nor sets a gain of 0. A gain above 65535 is ignored, as
    /// the force-feedback core's `input_ff_event` ignores it (a uinput device is handed it,
    /// and keeps it among its received events only).
    init?(forceFeedbackCode code: UInt16, value: Int32) {
        guard value >= 0 else { return nil }
        if code == Evdev.FF_GAIN {
            guard let gain = UInt16(exactly: value) else { return nil }
            self = .gain(gain)
            return
        }
        guard code != Evdev.FF_AUTOCENTER else { return nil }
        let id = Int16(bitPattern: code)
        self = value > 0 ? .play(id: id, count: value) : .stop(id: id)
    }
}

extension FUSEEvdevNode.NodeState {
    mutating func record(_ request: ForceFeedbackRequest) { forceFeedback.record(request) }

    /// An `EV_FF` event written to the node (``ForceFeedbackRequest/init(forceFeedbackCode:value:)``).
    /// Unknown ids are ignored, as the kernel ignores them.
    mutating func forceFeedbackWrite(code: UInt16, value: Int32, hasRumble: Bool) {
        guard hasRumble, let request = ForceFeedbackRequest(forceFeedbackCode: code, value: value) else { return }
        switch request {
        case .play(let id, _):
            guard effects[id] != nil else { return }
            playing.insert(id)
        case .stop(let id):
            guard effects[id] != nil else { return }
            playing.remove(id)
        default:
            break
        }
        record(request)
    }
}
