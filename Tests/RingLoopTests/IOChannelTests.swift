import Glibc
import RingLoopTestSupport
import SystemPackage
import Testing

@testable import RingLoop

/// Completions a channel delivered, in order (any thread reads them after the run).
final class CompletionLog: Sendable {
    private let entries = ThreadLock<[IOCompletion]>([])
    func append(_ completion: IOCompletion) { entries.withLock { $0.append(completion) } }
    var all: [IOCompletion] { entries.withLock { $0 } }
    var count: Int { entries.withLock { $0.count } }
    /// Every received byte, in order.
    var bytes: [UInt8] {
        all.flatMap { completion -> [UInt8] in
            if case .bytes(let bytes) = completion.outcome { return bytes }
            return []
        }
    }
    func last(_ kind: IOOperation.Kind) -> IOCompletion? { all.last { $0.operation.kind == kind } }
}

/// Runs `loop` in `mode` until `condition` holds, at most `timeout`; returns whether it did.
@discardableResult
func run(
    _ loop: RingRunLoop, mode: RingRunLoop.Mode = .default, timeout: Duration = TestWait.bound, until condition: () -> Bool
) -> Bool {
    let deadline = MonotonicInstant.now.advanced(by: timeout)
    while !condition() {
        if MonotonicInstant.now >= deadline { return false }
        _ = loop.run(mode: mode, for: .milliseconds(20), returnAfterSourceHandled: true)
    }
    return true
}

func makePipe() -> (read: Int32, write: Int32) {
    var ends: [Int32] = [0, 0]
    precondition(pipe(&ends) == 0)
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return (ends[0], ends[1])
}

@Suite("Completion I/O on the loop (LoopIOChannel)")
struct IOChannelTests {
    @Test("Pipe: a write and a short read through the ring, then end of file")
    func pipeReadWriteEndOfFile() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let (readEnd, writeEnd) = makePipe()
            let (readIdentity, writeIdentity) = (DescriptorIdentity(readEnd), DescriptorIdentity(writeEnd))
            let log = CompletionLog()
            let reader = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: readEnd), loop: loop) { log.append($1) }
            let writer = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: writeEnd), loop: loop) { log.append($1) }
            loop.add(reader.source, to: .default)
            loop.add(writer.source, to: .default)
            try writer.write(Array("hello".utf8))
            try reader.read(upTo: 100)
            #expect(run(loop) { log.count == 2 })
            let wrote = try #require(log.last(.write))
            #expect(wrote.outcome == .transferred(5) && !wrote.isShort && wrote.isFinal)
            let read = try #require(log.last(.read))
            #expect(read.outcome == .bytes(Array("hello".utf8)))
            #expect(read.isShort, "5 bytes of the 100 asked for is a short read")
            writer.close()
            try reader.read(upTo: 100)
            #expect(run(loop) { log.count == 3 })
            #expect(log.all.last?.outcome == .endOfFile)
            reader.close()
            #expect(run(loop) { readIdentity.isClosed && writeIdentity.isClosed })
        }
    }

    @Test("Pipe: writes larger than a full non-blocking pipe go out whole and in order as the reader drains it; then EPIPE")
    func pipeWritesContinueInOrderThenBrokenPipe() throws {
        signal(SIGPIPE, SIG_IGN)
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let (readEnd, writeEnd) = makePipe()
            let capacity = Int(fcntl(writeEnd, 1031 /* F_SETPIPE_SZ, _GNU_SOURCE only */, 4096))
            #expect(capacity >= 4096)
            _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
            let log = CompletionLog()
            let writer = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: writeEnd), loop: loop) { log.append($1) }
            loop.add(writer.source, to: .default)
            let first = (0..<(capacity * 3)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let second = (0..<capacity).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            try writer.write(first)
            try writer.write(second)
            // The kernel takes a pipe's worth, then answers EAGAIN: the rest waits for room.
            #expect(!run(loop, timeout: .milliseconds(100)) { log.count > 0 }, "nothing completes while the pipe is full")
            #expect(writer.queuedWriteBytes == capacity * 3, "the queue holds what the pipe did not take")
            var read: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1024)
            #expect(
                run(loop) {
                    let count = chunk.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, $0.count) }
                    if count > 0 { read += chunk[..<count] }
                    return read.count == first.count + second.count
                })
            #expect(read == first + second, "bytes in order, none lost or repeated")
            #expect(run(loop) { log.count == 2 })
            #expect(log.all.map(\.outcome) == [.transferred(first.count), .transferred(second.count)])
            #expect(log.all.allSatisfy { $0.isFinal && !$0.isShort })
            close(readEnd)
            try writer.write([1, 2, 3])
            #expect(run(loop) { log.count == 3 })
            #expect(log.all.last?.outcome == .failed(.brokenPipe))
            #expect(throws: IOFailure.brokenPipe) { try writer.write([4]) }
            writer.close()
        }
    }

    @Test("TCP: one multishot accept takes three connections; each is echoed through receive and send")
    func tcpEcho() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let listener = try SocketAddress.loopback(port: 0).makeListeningSocket()
            let address = try SocketAddress.local(of: listener)
            #expect(address.port != 0 && address.description.hasPrefix("127.0.0.1:"))
            let connections = ThreadLock<[LoopIOChannel]>([])
            let accepts = CompletionLog()
            let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { server, completion in
                accepts.append(completion)
                guard case .accepted(let socket) = completion.outcome else { return }
                let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                    switch completion.outcome {
                    case .bytes(let bytes): _ = try? connection.send(bytes)
                    case .endOfFile, .failed: connection.close()
                    default: break
                    }
                }
                server.loop.add(connection.source, to: .default)
                _ = try? connection.receive(bufferCount: 4, bufferSize: 64)
                connections.withLock { $0.append(connection) }
            }
            loop.add(server.source, to: .default)
            let accept = try server.accept()
            var clients: [(LoopIOChannel, CompletionLog)] = []
            for index in 0..<3 {
                let log = CompletionLog()
                let client = LoopIOChannel(fileDescriptor: try address.makeSocket(), loop: loop) { log.append($1) }
                loop.add(client.source, to: .default)
                try client.connect(to: address)
                #expect(run(loop) { log.last(.connect) != nil })
                #expect(log.last(.connect)?.outcome == .connected)
                try client.receive()
                try client.send(Array("ping \(index)".utf8))
                clients.append((client, log))
            }
            for (index, (_, log)) in clients.enumerated() {
                #expect(run(loop) { log.bytes == Array("ping \(index)".utf8) })
            }
            #expect(accepts.all.filter { $0.operation == accept }.count == 3)
            #expect(accepts.all.allSatisfy { !$0.isFinal }, "the multishot accept stays armed")
            // A client that closes ends its connection's receive with end of file.
            clients[0].0.close()
            #expect(run(loop) { connections.withLock { $0[0].operationsInFlight == 0 } })
            server.cancel(accept)
            #expect(run(loop) { accepts.all.last?.isFinal == true })
            #expect(accepts.all.last?.outcome == .failed(.cancelled))
            for (client, _) in clients.dropFirst() { client.close() }
            #expect(run(loop) { connections.withLock { $0.allSatisfy { $0.operationsInFlight == 0 } } })
            server.close()
        }
    }

    @Test("TCP: a reset peer is ECONNRESET, a port nobody listens on is ECONNREFUSED")
    func resetAndRefused() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let listener = try SocketAddress.loopback(port: 0).makeListeningSocket()
            let address = try SocketAddress.local(of: listener)
            let log = CompletionLog()
            let client = LoopIOChannel(fileDescriptor: try address.makeSocket(), loop: loop) { log.append($1) }
            loop.add(client.source, to: .default)
            try client.connect(to: address)
            #expect(run(loop) { log.last(.connect) != nil })
            try client.receive()
            let accepted = accept(listener.rawValue, nil, nil)
            #expect(accepted >= 0)
            // Closing with a zero linger time sends a reset instead of a FIN.
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(accepted, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            close(accepted)
            #expect(run(loop) { log.last(.receive)?.isFinal == true })
            #expect(log.last(.receive)?.outcome == .failed(.connectionReset))
            client.close()
            close(listener.rawValue)

            let refusedLog = CompletionLog()
            let refused = LoopIOChannel(fileDescriptor: try address.makeSocket(), loop: loop) { refusedLog.append($1) }
            loop.add(refused.source, to: .default)
            try refused.connect(to: address)
            #expect(run(loop) { refusedLog.count == 1 })
            #expect(refusedLog.all.first?.outcome == .failed(.connectionRefused))
            refused.close()
        }
    }

    @Test("Receive: cancelled, it ends with .cancelled and nothing stays in flight")
    func cancelReceive() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            let log = CompletionLog()
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: loop) { log.append($1) }
            loop.add(channel.source, to: .default)
            let receive = try channel.receive()
            _ = loop.run(mode: .default, for: .milliseconds(10))
            #expect(log.count == 0 && channel.operationsInFlight == 1)
            channel.cancel(receive)
            #expect(run(loop) { log.count == 1 })
            #expect(log.all.first?.outcome == .failed(.cancelled) && log.all.first?.isFinal == true)
            #expect(channel.operationsInFlight == 0 && loop.io.operations.isEmpty)
            channel.close()
            #expect(throws: IOFailure.closed) { try channel.receive() }
            close(pair[1])
        }
    }

    @Test("A loop thread that ends with a receive in flight frees the operation and closes its descriptor")
    func threadExitWithOperationInFlight() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let descriptor = pair[0]
        let identity = DescriptorIdentity(descriptor)
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: descriptor), loop: loop) { _, _ in }
            loop.add(channel.source, to: .default)
            try channel.receive()
            _ = loop.run(mode: .default, for: .milliseconds(5))
        }
        // The operation held its channel (and the channel the loop); the thread's end broke
        // the cycle, and the channel's deinit closed the descriptor it owned.
        #expect(identity.isClosed)
        close(pair[1])
    }

    @Test("A channel that sent while receiving, then let go with nothing in flight, closes its descriptor (no record kept holds it)")
    func channelLetGoAfterSendsCloses() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let (descriptor, peer) = (pair[0], pair[1])
        defer { close(peer) }
        let identity = DescriptorIdentity(descriptor)
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let log = CompletionLog()
            do {
                let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: descriptor), loop: loop) { log.append($1) }
                loop.add(channel.source, to: .default)
                let receive = try channel.receive(bufferCount: 2, bufferSize: 64)
                // Two sends while the receive is in flight: each flush's record is done with
                // when it completes, and the channel may keep one for the next.
                for round in 0..<2 {
                    try channel.send([UInt8(round), 1, 2, 3])
                    #expect(run(loop) { log.all.filter { $0.operation.kind == .send }.count == round + 1 })
                }
                channel.cancel(receive)
                #expect(run(loop) { log.last(.receive)?.isFinal == true })
                #expect(channel.operationsInFlight == 0)
                loop.remove(channel.source, from: .default)
            }
            // Let go without close(): the channel's deinit closes the descriptor it owns.
            #expect(identity.isClosed)
        }
        var bytes = [UInt8](repeating: 0, count: 8)
        #expect(recv(peer, &bytes, 8, Int32(MSG_WAITALL)) == 8)
        #expect(bytes == [0, 1, 2, 3, 1, 1, 2, 3])
    }

    @Test("Receive: completions wait for the source's mode; with every buffer out the data waits in the socket, none lost")
    func receiveWaitsForItsMode() throws {
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let other = RingRunLoop.Mode("io.other")
            var pair: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
            let log = CompletionLog()
            let identity = DescriptorIdentity(pair[0])
            let channel = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: pair[0]), loop: loop) { log.append($1) }
            loop.add(channel.source, to: other)
            // A timer keeps the default mode from finishing at once.
            let keepAlive = LoopTimer(fireDate: .now, interval: .milliseconds(1)) { _ in }
            loop.add(keepAlive, to: .default)
            try channel.receive(bufferCount: 2, bufferSize: 16)
            var sent: [UInt8] = []
            for chunk in 0..<20 {
                let bytes = (0..<13).map { UInt8(truncatingIfNeeded: chunk * 13 + $0) }
                sent += bytes
                #expect(write(pair[1], bytes, bytes.count) == bytes.count)
                _ = loop.run(mode: .default, for: .milliseconds(2))
            }
            #expect(log.count == 0, "nothing is delivered outside the source's mode")
            #expect(run(loop, mode: other) { log.bytes.count == sent.count })
            #expect(log.bytes == sent)
            #expect(log.all.allSatisfy { !$0.isFinal }, "running out of buffers does not end the receive")
            keepAlive.invalidate()
            channel.close()
            close(pair[1])
            // Closing flushes the cancellation through the ring: the descriptor is closed
            // at once, though the mode being run has nothing left to wait for.
            #expect(loop.io.operations.isEmpty && identity.isClosed)
        }
    }
}

@Suite("Completion I/O with async/await")
struct AsyncIOChannelTests {
    @Test("An echo over TCP written with await: accepted connections, received bytes, sends")
    func asyncEcho() async throws {
        try await onDriverLoop { driver in
            let listener = try SocketAddress.loopback(port: 0).makeListeningSocket()
            let address = try SocketAddress.local(of: listener)
            let server = LoopIOChannel(fileDescriptor: listener, loop: driver)
            driver.add(server.source, to: .common)
            let serving = Task(executorPreference: driver) {
                for try await socket in server.acceptedConnections() {
                    let connection = LoopIOChannel(fileDescriptor: socket, loop: driver)
                    driver.add(connection.source, to: .common)
                    Task(executorPreference: driver) {
                        for try await bytes in connection.receivedBytes() { try await connection.sendBytes(bytes) }
                        connection.close()
                    }
                }
            }
            let client = LoopIOChannel(fileDescriptor: try address.makeSocket(), loop: driver)
            driver.add(client.source, to: .common)
            try await client.connection(to: address)
            for round in 0..<5 {
                let message = Array("round \(round)".utf8)
                try await client.sendBytes(message)
                var echoed: [UInt8] = []
                while echoed.count < message.count { echoed += try await client.readBytes(upTo: 64) }
                #expect(echoed == message)
            }
            client.close()
            serving.cancel()
            await #expect(throws: Never.self) { try await serving.value }
            server.close()
        }
    }

    @Test("Cancelling the task cancels the read; a read on a closed channel fails with .closed")
    func asyncCancel() async throws {
        try await onDriverLoop { driver in
            let (readEnd, writeEnd) = makePipe()
            let reader = LoopIOChannel(fileDescriptor: FileDescriptor(rawValue: readEnd), loop: driver)
            driver.add(reader.source, to: .common)
            let reading = Task(executorPreference: driver) { try await reader.readBytes(upTo: 10) }
            try await driver.clock.sleep(for: .milliseconds(20))
            reading.cancel()
            await #expect(throws: IOFailure.cancelled) { try await reading.value }
            reader.close()
            await #expect(throws: IOFailure.closed) { try await reader.readBytes(upTo: 10) }
            close(writeEnd)
        }
    }
}
