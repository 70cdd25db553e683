import Glibc
import RingLoopTestSupport
import Synchronization
import SystemPackage
import Testing

@testable import RingLoop

/// Byte `index` of the streams the peers write: a change of every 256-byte block, so a
/// block out of place shows.
func streamByte(_ index: Int) -> UInt8 {
    UInt8(truncatingIfNeeded: index ^ (index >> 8) ^ (index >> 16) ^ (index >> 24))
}

/// How the in-process echo servers answer.
enum EchoStyle: String, CustomStringConvertible, CaseIterable {
    /// The issue's pattern: each received array sent back (before the write queue, bytes
    /// came back reordered and the server buffered without bound).
    case copying
    /// The same, its receive paused while the channel is not writable.
    case copyingPaused
    /// Each received buffer sent back from where it arrived, with no copy.
    case inPlace

    var description: String { rawValue }
}

/// A TCP echo server on the calling thread's loop; records the most bytes any connection
/// had queued after a send (loop thread).
final class EchoServer: Sendable {
    final class Counters: Sendable {
        let mostQueued = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
    }

    let listener: LoopIOChannel
    let address: SocketAddress
    let connections = ThreadLock<[LoopIOChannel]>([])
    let counters = Counters()
    var mostQueued: Int { counters.mostQueued.load(ordering: .relaxed) }
    var closed: Int { counters.closed.load(ordering: .relaxed) }
    static let receiveBuffers = (count: 16, size: 16_384)

    init(_ style: EchoStyle, loop: RingRunLoop) throws {
        let socket = try SocketAddress.loopback(port: 0).makeListeningSocket()
        address = try SocketAddress.local(of: socket)
        let counters = self.counters
        let connections = self.connections
        let buffers = Self.receiveBuffers
        listener = LoopIOChannel(fileDescriptor: socket, loop: loop) { server, completion in
            guard case .accepted(let socket) = completion.outcome else { return }
            let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                switch completion.outcome {
                case .bytes(let bytes):
                    _ = try? connection.send(bytes)
                    counters.mostQueued.max(connection.queuedWriteBytes)
                case .endOfFile: connection.closeAfterWrites()
                case .failed(let failure) where completion.isFinal && failure != .cancelled: connection.close()
                default: break
                }
            }
            connection.descriptorClosed = { counters.closed.add(1, ordering: .relaxed) }
            connection.pausesReceivingWhileUnwritable = style == .copyingPaused
            server.loop.add(connection.source, to: .default)
            connections.withLock { $0.append(connection) }
            if style == .inPlace {
                _ = try? connection.receive(bufferCount: buffers.count, bufferSize: buffers.size) { connection, bytes in
                    _ = try? connection.send(bytes)
                    counters.mostQueued.max(connection.queuedWriteBytes)
                }
            } else {
                _ = try? connection.receive(bufferCount: buffers.count, bufferSize: buffers.size)
            }
        }
        loop.add(listener.source, to: .default)
        try listener.accept()
    }

    func close() {
        listener.close()
        for connection in connections.withLock({ $0 }) { connection.close() }
    }
}

extension Atomic where Value == Int {
    func max(_ value: Int) {
        var current = load(ordering: .relaxed)
        while value > current {
            let (exchanged, original) = compareExchange(expected: current, desired: value, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}

/// A blocking TCP peer: one thread writes `total` bytes of ``streamByte(_:)``, another
/// starts reading them back once `startReading` says so, and compares.
final class StreamPeer: Sendable {
    let socket: Int32
    let total: Int
    let written = Atomic<Int>(0)
    let read = Atomic<Int>(0)
    /// Where the bytes read back first differed from those written (-1: nowhere yet).
    let firstDifference = Atomic<Int>(-1)
    let startReading = Atomic<Bool>(false)
    let failure = ThreadLock<String?>(nil)
    private let threads = ThreadLock<[PosixThread]>([])

    init(connectingTo address: SocketAddress, total: Int) throws {
        let socket = try address.makeSocket().rawValue
        guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else {
            close(socket)
            throw IOFailure(errno: errno)
        }
        // A peer that stops answering fails the test within a minute instead of hanging it.
        var limit = timeval(tv_sec: 60, tv_usec: 0)
        for option in [SO_SNDTIMEO, SO_RCVTIMEO] {
            setsockopt(socket, SOL_SOCKET, option, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        self.socket = socket
        self.total = total
    }

    func start() {
        let writer = PosixThread.start(name: "peer-writer") { [self] in
            var chunk = [UInt8](repeating: 0, count: 65_536)
            var offset = 0
            while offset < total {
                let count = min(chunk.count, total - offset)
                for index in 0..<count { chunk[index] = streamByte(offset + index) }
                var sent = 0
                while sent < count {
                    let result = chunk.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                    guard result > 0 else {
                        failure.withLock { $0 = "send failed: errno \(errno)" }
                        return
                    }
                    sent += result
                    written.add(result, ordering: .relaxed)
                }
                offset += count
            }
        }
        let reader = PosixThread.start(name: "peer-reader") { [self] in
            let limit = MonotonicInstant.now + .seconds(120)
            while !startReading.load(ordering: .acquiring), MonotonicInstant.now < limit { usleep(1000) }
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var offset = 0
            while offset < total {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, min($0.count, total - offset), 0) }
                guard count > 0 else {
                    failure.withLock { $0 = "receive ended after \(offset) bytes: \(count == 0 ? "end of stream" : "errno \(errno)")" }
                    return
                }
                if firstDifference.load(ordering: .relaxed) < 0 {
                    for index in 0..<count where buffer[index] != streamByte(offset + index) {
                        firstDifference.store(offset + index, ordering: .relaxed)
                        break
                    }
                }
                offset += count
                read.add(count, ordering: .relaxed)
            }
        }
        threads.withLock { $0 = [writer, reader] }
    }

    var done: Bool { read.load(ordering: .relaxed) == total || failure.withLock({ $0 }) != nil }

    func finish() {
        for thread in threads.withLock({ $0 }) { thread.join() }
        close(socket)
    }
}

@Suite("Ordered, bounded writes on stream channels")
struct StreamWriteTests {
    @Test("The issue's echo (each received array sent back): a peer writing 8 MB before it reads gets them back in order")
    func eightMegabytesInOrder() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let server = try EchoServer(.copying, loop: loop)
            let peer = try StreamPeer(connectingTo: server.address, total: 8 << 20)
            peer.start()
            // Every byte is written before any is read back: the server holds what the
            // kernel's buffers do not.
            #expect(run(loop, timeout: .seconds(60)) { peer.written.load(ordering: .relaxed) == peer.total })
            peer.startReading.store(true, ordering: .releasing)
            #expect(run(loop, timeout: .seconds(60)) { peer.done })
            peer.finish()
            #expect(peer.failure.withLock { $0 } == nil)
            #expect(peer.read.load(ordering: .relaxed) == peer.total)
            #expect(peer.firstDifference.load(ordering: .relaxed) == -1, "bytes came back out of order")
            #expect(run(loop) { server.closed == 1 })
            server.close()
        }
    }

    @Test(
        "64 MB from one thread, read back only after two seconds: identical, and the server's queue stays under the mark",
        arguments: [EchoStyle.copyingPaused, .inPlace])
    func delayedReaderSixtyFourMegabytes(style: EchoStyle) throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let server = try EchoServer(style, loop: loop)
            let peer = try StreamPeer(connectingTo: server.address, total: 64 << 20)
            peer.start()
            let reading = MonotonicInstant.now + .seconds(2)
            _ = run(loop, timeout: .seconds(3)) { MonotonicInstant.now >= reading }
            let writtenBeforeReading = peer.written.load(ordering: .relaxed)
            peer.startReading.store(true, ordering: .releasing)
            #expect(run(loop, timeout: .seconds(120)) { peer.done })
            peer.finish()
            #expect(peer.failure.withLock { $0 } == nil)
            #expect(peer.read.load(ordering: .relaxed) == peer.total)
            #expect(peer.firstDifference.load(ordering: .relaxed) == -1, "bytes came back out of order")
            // Held back, the writer got no further than the kernel's buffers and the
            // server's bounded queue.
            #expect(writtenBeforeReading < 48 << 20, "the writer was never held back (\(writtenBeforeReading) bytes)")
            // The high mark, the buffer that crossed it, and what the receive's buffers
            // already held when the channel stopped giving them back.
            let bound = WriteBufferWaterMark.standard.high + (EchoServer.receiveBuffers.count + 1) * EchoServer.receiveBuffers.size
            #expect(server.mostQueued <= bound)
            #expect(run(loop) { server.closed == 1 })
            server.close()
        }
    }

    @Test("Writability: unwritable above the high mark, writable again below the low one, each change a callout; bytes in order")
    func writabilityChanges() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            defer { close(pair[1]) }
            let log = CompletionLog()
            let changes = ThreadLock<[Bool]>([])
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: loop) { log.append($1) }
            channel.writabilityHandler = { channel, writable in
                #expect(channel.isWritable == writable)
                changes.withLock { $0.append(writable) }
            }
            channel.writeBufferWaterMark = WriteBufferWaterMark(low: 4096, high: 16_384)
            loop.add(channel.source, to: .default)
            // Far more than the socket pair's buffers take, in writes of 10,000 bytes.
            var sent: [UInt8] = []
            for round in 0..<60 {
                let bytes = (0..<10_000).map { streamByte(round * 10_000 + $0) }
                sent += bytes
                try channel.send(bytes)
            }
            #expect(!channel.isWritable && channel.queuedWriteBytes > 16_384)
            #expect(run(loop) { changes.withLock { $0 } == [false] })
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 8192)
            #expect(
                run(loop) {
                    let count = chunk.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if count > 0 { received += chunk[..<count] }
                    return received.count == sent.count
                })
            #expect(received == sent)
            #expect(run(loop) { log.count == 60 && changes.withLock { $0 } == [false, true] })
            #expect(log.all.map(\.operation.number) == Array(1...60), "completions in the order of the sends")
            #expect(log.all.allSatisfy { $0.outcome == .transferred(10_000) && $0.isFinal })
            #expect(channel.isWritable && channel.queuedWriteBytes == 0)
            channel.close()
        }
    }

    @Test("The async send waits while the channel is unwritable, then goes out behind the bytes before it")
    func asyncSendWaitsForWritability() async throws {
        try await onDriverLoop { driver in
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            let peer = pair[1]
            defer { close(peer) }
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: driver)
            driver.add(channel.source, to: .common)
            let first = (0..<1_000_000).map { streamByte($0) }
            let queued = try await Task(executorPreference: driver) {
                try channel.send(first)
                return channel.queuedWriteBytes
            }.value
            #expect(queued > WriteBufferWaterMark.standard.high)
            let second = Array("and then this".utf8)
            let sending = Task(executorPreference: driver) { try await channel.sendBytes(second) }
            try await driver.clock.sleep(for: .milliseconds(50))
            let stillQueued = await Task(executorPreference: driver) { channel.queuedWriteBytes }.value
            #expect(stillQueued <= queued, "the waiting send queued nothing")
            let total = first.count + second.count
            let received = await Task.detached {
                var received: [UInt8] = []
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while received.count < total {
                    let count = chunk.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
                    guard count > 0 else { break }
                    received += chunk[..<count]
                }
                return received
            }.value
            try await sending.value
            #expect(received == first + second)
            channel.close()
        }
    }

    @Test("A queued write not yet started can be cancelled; its bytes never go out, those around it do")
    func cancelQueuedWrite() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            defer { close(pair[1]) }
            let log = CompletionLog()
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: loop) { log.append($1) }
            loop.add(channel.source, to: .default)
            let big = [UInt8](repeating: 1, count: 1 << 20)
            try channel.send(big)
            let cancelled = try channel.send([2, 2, 2])
            try channel.send([3, 3, 3])
            channel.cancel(cancelled)
            #expect(run(loop) { log.count == 1 })
            #expect(log.all.first?.operation == cancelled && log.all.first?.outcome == .failed(.cancelled))
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            #expect(
                run(loop) {
                    let count = chunk.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if count > 0 { received += chunk[..<count] }
                    return received.count == big.count + 3
                })
            #expect(received == big + [3, 3, 3])
            #expect(run(loop) { log.count == 3 })
            channel.close()
        }
    }

    @Test("closeAfterWrites: the queued bytes are all written, then the descriptor closes and the peer sees the end")
    func closeAfterWrites() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            defer { close(pair[1]) }
            let identity = DescriptorIdentity(pair[0])
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: loop) { _, _ in }
            loop.add(channel.source, to: .default)
            let bytes = (0..<3_000_000).map { streamByte($0) }
            try channel.send(bytes)
            try channel.receive()
            channel.closeAfterWrites()
            #expect(throws: IOFailure.closed) { try channel.send([1]) }
            #expect(!identity.isClosed, "still writing")
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65_536)
            var ended = false
            #expect(
                run(loop) {
                    let count = chunk.withUnsafeMutableBytes { recv(pair[1], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    if count > 0 { received += chunk[..<count] }
                    ended = count == 0
                    return ended
                })
            #expect(received == bytes)
            #expect(identity.isClosed)
        }
    }
}

/// README's echo, verbatim inside a function (its port 0 here), so README cannot rot.
@Suite("README's echo")
struct ReadmeEchoTests {
    /// Starts README's echo server on the calling thread's loop; returns the listener.
    static func readmeEcho(_ loop: RingRunLoop) throws -> (LoopIOChannel, SocketAddress) {
        let listener = try SocketAddress.loopback(port: 0).makeListeningSocket()
        let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { server, completion in
            guard case .accepted(let socket) = completion.outcome else { return }
            let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                switch completion.outcome {
                case .endOfFile: connection.closeAfterWrites()  // what is owed still goes out
                case .failed: connection.close()
                default: break
                }
            }
            connection.pausesReceivingWhileUnwritable = true  // a peer that does not read is held back
            server.loop.add(connection.source, to: .common)
            _ = try? connection.receive { connection, bytes in  // multishot; the bytes lent in place
                _ = try? connection.send(bytes)  // from the same buffer, behind earlier sends
            }
        }
        loop.add(server.source, to: .common)
        try server.accept()  // multishot; backs off when descriptors run out
        return (server, try SocketAddress.local(of: listener))
    }

    @Test("README's echo: 64 MB written from one thread and read back after two seconds come back identical, the writer held back")
    func delayedReader() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let (server, address) = try Self.readmeEcho(loop)
            let peer = try StreamPeer(connectingTo: address, total: 64 << 20)
            peer.start()
            let reading = MonotonicInstant.now + .seconds(2)
            _ = run(loop, timeout: .seconds(3)) { MonotonicInstant.now >= reading }
            let writtenBeforeReading = peer.written.load(ordering: .relaxed)
            peer.startReading.store(true, ordering: .releasing)
            #expect(run(loop, timeout: .seconds(120)) { peer.done })
            peer.finish()
            #expect(peer.failure.withLock { $0 } == nil)
            #expect(peer.read.load(ordering: .relaxed) == peer.total)
            #expect(peer.firstDifference.load(ordering: .relaxed) == -1, "bytes came back out of order")
            #expect(writtenBeforeReading < 48 << 20, "the writer was never held back (\(writtenBeforeReading) bytes)")
            server.close()
        }
    }

    @Test("README's echo is the one this file runs")
    func readmeMatches() throws {
        let lines = try #require(ReadmeExample.lines(after: "## Files, sockets and ports between processes"))
        let ran = ReadmeExample.sourceLines(#filePath)
        // The example's lines, except the listener's, whose port differs here.
        let checked = lines.filter { !$0.isEmpty && !$0.hasPrefix("let listener") }
        #expect(checked.count >= 15)
        for line in checked {
            let tested = ran.contains(line)
            #expect(tested, "README line not in the tested example: \(line)")
        }
    }
}
