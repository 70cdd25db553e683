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

        /// Takes up to `maximumBytes` of complete events, as `read(2)` returns them.
        mutating func takeEvents(maximumBytes: Int) -> [UInt8] {
            var records: [InputEvent] = []
            _ = buffer.pop(into: &records, maximum: maximumBytes / InputEvent.size)
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
