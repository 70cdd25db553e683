import Foundation
import Glibc
import RingLoop

/// Closing many connections at once: 10,000 TCP connections to an echo server on one loop
/// thread (a process of its own) close together; the server reports the loop time it took
/// to close them all — its thread's CPU time from the first end of stream to the last
/// close, so time the machine gave to other processes is not counted — and meanwhile the
/// benchmark times round trips on one more connection that stays open (wall time).
enum IOCloseBench {
    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let count = quick ? 2_000 : 10_000
        guard raiseDescriptorLimit(to: count + 256) else {
            print("io.close: the descriptor limit's hard ceiling is under \(count + 256); skipped")
            return []
        }
        var loopTimes: [Double] = []
        var otherWaits: [Double] = []
        for _ in 0..<rounds {
            let (loopTime, otherWait) = try storm(count)
            loopTimes.append(loopTime)
            otherWaits.append(otherWait)
        }
        let name = quick ? "io.close.2k" : "io.close.10k"
        return [
            BenchResult("\(name).loop_ms", "ms", ours: median(loopTimes)),
            BenchResult("\(name).other_echo_max_ms", "ms", ours: median(otherWaits)),
        ]
    }

    /// Raises this process's soft descriptor limit to at least `needed`, up to its hard
    /// limit; returns whether it reached `needed`.
    static func raiseDescriptorLimit(to needed: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return false }
        if limit.rlim_cur >= rlim_t(needed) { return true }
        guard limit.rlim_max >= rlim_t(needed) else { return false }
        limit.rlim_cur = limit.rlim_max
        return setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0
    }

    /// One round: returns the server's loop time in ms and the longest round trip on the
    /// connection that stayed open while the others closed, in ms.
    static func storm(_ count: Int) throws -> (Double, Double) {
        let server = try IOBench.ServerProcess(IOBench.benchExecutable, ["bench-server", "close-ringloop", String(count)])
        defer { server.stop() }
        let other = try IOBench.connectedSocket(port: server.port)
        defer { close(other) }
        var sockets: [Int32] = []
        sockets.reserveCapacity(count)
        defer { for socket in sockets { close(socket) } }
        for _ in 0..<count { sockets.append(try IOBench.connectedSocket(port: server.port)) }
        guard server.nextLine(timeout: .seconds(60)) == "accepted \(count + 1)" else {
            throw IOBench.ServerProcess.Failure.notReady("close-ringloop (accepting)")
        }
        _ = try roundTrip(other)
        for socket in sockets { close(socket) }
        sockets = []
        var longest = 0.0
        while !server.hasLine {
            longest = max(longest, try roundTrip(other))
        }
        let words = (server.nextLine(timeout: .seconds(60)) ?? "").split(separator: " ")
        guard words.count == 3, words[0] == "closed", let loopTime = Double(words[2]) else {
            throw IOBench.ServerProcess.Failure.notReady("close-ringloop (closing)")
        }
        return (loopTime, longest)
    }

    /// One 64-byte round trip, in ms.
    static func roundTrip(_ socket: Int32) throws -> Double {
        let start = MonotonicInstant.now
        var message = [UInt8](repeating: 0x42, count: 64)
        guard message.withUnsafeBytes({ send(socket, $0.baseAddress, 64, Int32(MSG_NOSIGNAL)) }) == 64 else {
            throw IOFailure(errno: errno)
        }
        var received = 0
        while received < 64 {
            let count = message.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + received, 64 - received, 0) }
            guard count > 0 else { throw IOFailure.connectionReset }
            received += count
        }
        return Double((MonotonicInstant.now - start).nanosecondsValue) / 1e6
    }

    // MARK: The server

    /// The echo server of `bench-server close-ringloop COUNT`: prints `accepted COUNT+1`
    /// once it holds that many connections, then, when COUNT of them have ended and been
    /// closed, `closed COUNT MS`: the loop thread's CPU time from the first end of stream
    /// to the last close.
    static func serve(_ count: Int) throws {
        guard raiseDescriptorLimit(to: count + 256) else { throw IOFailure.system(.tooManyOpenFiles) }
        let loop = RingRunLoop.current
        let listener = try SocketAddress.loopback(port: 0).makeListeningSocket(backlog: 4096)
        struct Storm {
            var accepted = 0
            var closed = 0
            var started: UInt64?
        }
        let storm = LoopBound(Storm(), loop: loop)
        let server = LoopIOChannel(fileDescriptor: listener, loop: loop) { server, completion in
            guard case .accepted(let socket) = completion.outcome else { return }
            let connection = LoopIOChannel(fileDescriptor: socket, loop: server.loop) { connection, completion in
                switch completion.outcome {
                case .endOfFile, .failed: break
                default: return
                }
                if storm.value.started == nil { storm.value.started = threadCPUTime() }
                connection.close()
                storm.value.closed += 1
                if storm.value.closed == count, let started = storm.value.started {
                    BenchServer.say("closed \(count) \(Double(threadCPUTime() - started) / 1e6)")
                }
            }
            server.loop.add(connection.source, to: .default)
            _ = try? connection.receive(bufferCount: 4, bufferSize: 4096) { connection, bytes in
                _ = try? connection.send(bytes)
            }
            storm.value.accepted += 1
            if storm.value.accepted == count + 1 { BenchServer.say("accepted \(count + 1)") }
        }
        loop.add(server.source, to: .default)
        try server.accept()
        BenchServer.ready(try SocketAddress.local(of: listener).port ?? 0)
        loop.run()
    }

    /// The calling thread's CPU time, in nanoseconds.
    static func threadCPUTime() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
