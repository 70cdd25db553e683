import Glibc
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoop

/// One record of the kernel log as `/dev/kmsg` hands it out: "prio,seq,usec,flags;text\n".
struct KernelLogRecord: Equatable {
    var sequence: UInt64
    var bytes: [UInt8]

    init?(_ bytes: [UInt8]) {
        guard let firstComma = bytes.firstIndex(of: UInt8(ascii: ",")) else { return nil }
        let rest = bytes[(firstComma + 1)...]
        guard let secondComma = rest.firstIndex(of: UInt8(ascii: ",")),
            let sequence = UInt64(String(decoding: rest[..<secondComma], as: UTF8.self))
        else { return nil }
        self.sequence = sequence
        self.bytes = bytes
    }
}

/// Evdev nodes are character devices whose driver has `read` but no `read_iter`, so
/// io_uring reads them through its `loop_rw_iter` path, and wakes on their own wait
/// queue. There is no evdev device on the machines this is tested on; `/dev/kmsg` is a
/// character device of the same build (`read`, `poll`, `O_NONBLOCK` honoured, one record
/// per read, blocking until the next), so the multishot read the input chain uses on
/// evdev nodes is tried on it.
@Suite(
    "Multishot reads of a character device without read_iter (/dev/kmsg, as evdev)",
    .enabled(if: access("/dev/kmsg", R_OK | W_OK) == 0, "needs /dev/kmsg readable and writable (root)"))
struct CharacterDeviceReadTests {
    @Test("every record arrives in order, one per completion; after it waits, a new record wakes it")
    func kernelLog() throws {
        // What read(2) sees from the start of the log, for comparison.
        let reference = Self.readAll()
        try #require(!reference.isEmpty, "the kernel log is empty")
        let marker = "ringloop multishot read test \(getpid()) \(UInt32.random(in: 0...UInt32.max))"
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            try #require(fd >= 0)
            let log = CompletionLog()
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: fd), loop: loop) { log.append($1) }
            var records: [KernelLogRecord] {
                log.all.compactMap { completion in
                    guard case .bytes(let bytes) = completion.outcome else { return nil }
                    return KernelLogRecord(bytes)
                }
            }
            var final: IOCompletion? { log.all.first(where: \.isFinal) }
            loop.add(channel.source, to: .default)
            try channel.readStream(bufferCount: 8, bufferSize: 8192)
            let last = reference.last!.sequence
            #expect(run(loop) { records.last.map { $0.sequence >= last } ?? false || final != nil })
            #expect(final == nil, "the read ended: \(String(describing: final))")
            // Caught up: the read now waits on the device. A new record must wake it.
            let writer = open("/dev/kmsg", O_WRONLY | O_CLOEXEC)
            try #require(writer >= 0)
            let line = Array("\(marker)\n".utf8)
            #expect(write(writer, line, line.count) == line.count)
            close(writer)
            #expect(run(loop) { records.contains { String(decoding: $0.bytes, as: UTF8.self).contains(marker) } })
            #expect(final == nil)
            // Nothing lost: consecutive sequence numbers; each record read(2) also saw is the same.
            let sequences = records.map(\.sequence)
            #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 + 1 }, "a gap in \(sequences)")
            // The log is a ring: records logged meanwhile (by any process: the suite's own
            // crashing children log a line each) push the oldest out, so the read may
            // start after read(2)'s first record, never later than its last; from there on
            // every record read(2) saw is read again, the same.
            let byNumber = Dictionary(reference.map { ($0.sequence, $0.bytes) }, uniquingKeysWith: { first, _ in first })
            let compared = records.filter { byNumber[$0.sequence] != nil }
            let first = try #require(records.first?.sequence)
            #expect(first <= last, "the read started at \(first), after read(2)'s last record \(last)")
            #expect(compared.count == reference.filter { $0.sequence >= first }.count)
            #expect(compared.allSatisfy { byNumber[$0.sequence] == $0.bytes })
            channel.close()
        }
    }

    /// Every record in the log now, by read(2) on a non-blocking descriptor.
    static func readAll() -> [KernelLogRecord] {
        let fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var records: [KernelLogRecord] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EPIPE { continue }  // overwritten while reading: go on
            guard count > 0 else { break }
            if let record = KernelLogRecord(Array(buffer[..<count])) { records.append(record) }
        }
        return records
    }
}
