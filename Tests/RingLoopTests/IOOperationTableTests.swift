import Glibc
import SystemPackage
import Testing

@testable import RingLoop

/// The loop finds an operation in flight by its wait-core id's slot. The wait core reuses
/// a slot as soon as it harvests the last completion of the operation holding it, before
/// the loop routes that completion: an operation started in between (by a callout routed
/// first) must not hide the earlier one, nor be hidden by it.
@Suite("I/O operations in flight by slot")
struct IOOperationTableTests {
    static func record(_ channel: LoopIOChannel, _ number: UInt64, _ id: PortID) -> IORecord {
        let record = IORecord(
            channel: channel, operation: IOOperation(kind: .send, number: number), requested: 0, buffer: nil,
            provided: nil, completion: nil)
        record.port = id
        return record
    }

    @Test("Two operations on one slot, of two generations, are both found, and either may end first")
    func sharedSlot() {
        onFreshLoopThread {
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: 0), loop: .current, ownsDescriptor: false)
            var table = IOOperationTable()
            let olderID = PortID(slot: 4, generation: 7)
            let newerID = PortID(slot: 4, generation: 8)
            let otherID = PortID(slot: 9, generation: 1)
            let older = Self.record(channel, 1, olderID)
            let newer = Self.record(channel, 2, newerID)
            let other = Self.record(channel, 3, otherID)
            table.insert(older)
            table.insert(newer)
            table.insert(other)
            #expect(table.count == 3)
            #expect(table[olderID] === older)
            #expect(table[newerID] === newer)
            #expect(table[otherID] === other)
            #expect(table[PortID(slot: 4, generation: 6)] == nil)
            #expect(table[PortID(slot: 100, generation: 1)] == nil)
            #expect(Set(table.records.map(ObjectIdentifier.init)) == Set([older, newer, other].map(ObjectIdentifier.init)))

            // The older ends first: the newer keeps being found (it takes the slot).
            table.remove(olderID)
            #expect(table[olderID] == nil)
            #expect(table[newerID] === newer)
            #expect(table.count == 2)
            // An id already removed changes nothing.
            table.remove(olderID)
            #expect(table.count == 2)
            table.remove(newerID)
            #expect(table[newerID] == nil)

            // The newer ends first.
            table.insert(older)
            table.insert(newer)
            table.remove(newerID)
            #expect(table[newerID] == nil)
            #expect(table[olderID] === older)
            table.remove(olderID)
            table.remove(otherID)
            #expect(table.isEmpty)
            #expect(table.records.isEmpty)
        }
    }

    static let chainedWrites = 2_000

    /// Sends 64 bytes whose completion sends twice more, up to ``chainedWrites`` sends.
    static func sendChained(
        on channel: LoopIOChannel, _ counts: ThreadLock<(started: Int, completed: Int, transferred: Int)>
    ) {
        let number = counts.withLock { counts -> Int? in
            guard counts.started < chainedWrites else { return nil }
            counts.started += 1
            return counts.started
        }
        guard let number else { return }
        _ = try? channel.send(Array(repeating: UInt8(truncatingIfNeeded: number), count: 64)) { channel, completion in
            counts.withLock {
                $0.completed += 1
                if case .transferred(let count) = completion.outcome { $0.transferred += count }
            }
            sendChained(on: channel, counts)
            sendChained(on: channel, counts)
        }
    }

    @Test("Sends started while other channels' completions wait to be routed take their slots; every write completes once")
    func sendsFromCallouts() {
        onFreshLoopThread {
            let loop = RingRunLoop.current
            // Several channels' sends complete in one harvest. Routing the first starts the
            // send its channel had queued, which takes the slot the wait core freed last:
            // that of a completion routed after it.
            let pairs = (0..<4).map { _ -> (Int32, Int32) in
                var ends: [Int32] = [0, 0]
                #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
                return (ends[0], ends[1])
            }
            let senders = pairs.map { pair in
                let sender = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair.0), loop: loop) { _, _ in }
                loop.add(sender.source, to: .default)
                return sender
            }
            let counts = ThreadLock<(started: Int, completed: Int, transferred: Int)>((0, 0, 0))
            for sender in senders {
                for _ in 0..<4 { Self.sendChained(on: sender, counts) }
            }
            let readers = pairs.map { $0.1 }
            let drain = PosixThread.start(name: "drain") {
                var entries = readers.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
                var buffer = [UInt8](repeating: 0, count: 65_536)
                var read = 0
                while read < Self.chainedWrites * 64, poll(&entries, nfds_t(entries.count), 20_000) > 0 {
                    for entry in entries where entry.revents != 0 {
                        let count = buffer.withUnsafeMutableBytes { recv(entry.fd, $0.baseAddress, $0.count, 0) }
                        if count > 0 { read += count }
                    }
                }
            }
            let deadline = MonotonicInstant.now.advanced(by: .seconds(20))
            while counts.withLock({ $0.completed }) < Self.chainedWrites, MonotonicInstant.now < deadline {
                _ = loop.run(mode: .default, for: .milliseconds(100), returnAfterSourceHandled: true)
            }
            drain.join()
            let (started, completed, transferred) = counts.withLock { $0 }
            #expect(started == Self.chainedWrites)
            #expect(completed == Self.chainedWrites)
            #expect(transferred == Self.chainedWrites * 64)
            #expect(loop.io.operations.isEmpty)
            for sender in senders { sender.close() }
            for reader in readers { close(reader) }
        }
    }
}
