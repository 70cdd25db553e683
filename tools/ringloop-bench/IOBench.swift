import Foundation
import Glibc
import RingLoop
import SystemPackage

/// I/O on the ring: a loopback TCP echo (one connection's ping-pong latency, 64
/// connections' throughput) against Foundation's `FileHandle` on a `RunLoop` and swift-nio,
/// and named message port round trips against a socket with `poll`.
enum IOBench {
    // MARK: Server processes

    /// A server in a process of its own: started, read until it prints `ready PORT`,
    /// stopped by closing its standard input.
    final class ServerProcess {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        let port: UInt16

        enum Failure: Error, CustomStringConvertible {
            case notReady(String)
            var description: String {
                switch self {
                case .notReady(let what): "the benchmark server \(what) did not start"
                }
            }
        }

        init(_ executable: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            var line: [UInt8] = []
            var byte: UInt8 = 0
            let reader = output.fileHandleForReading.fileDescriptor
            while read(reader, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
            let words = String(decoding: line, as: UTF8.self).split(separator: " ")
            guard words.first == "ready", words.count == 2, let port = UInt16(words[1]) else {
                process.terminate()
                throw Failure.notReady("\(executable) \(arguments.joined(separator: " "))")
            }
            self.port = port
        }

        /// Whether the server has written more (a line, byte by byte) since the last read.
        var hasLine: Bool {
            var entry = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            return poll(&entry, 1, 0) == 1
        }

        /// The server's next line of output; `nil` if none comes within `timeout`.
        func nextLine(timeout: Duration) -> String? {
            let reader = output.fileHandleForReading.fileDescriptor
            let limit = MonotonicInstant.now + timeout
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while MonotonicInstant.now < limit {
                var entry = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 100) == 1 else { continue }
                guard read(reader, &byte, 1) == 1 else { return nil }
                if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
                line.append(byte)
            }
            return nil
        }

        /// Writes `request` as a line to the server and returns the line it answers
        /// (`nil` if none comes within five seconds).
        func ask(_ request: String) -> String? {
            input.fileHandleForWriting.write(Data((request + "\n").utf8))
            return nextLine(timeout: .seconds(5))
        }

        /// The RingLoop echo's counters so far: calls into the kernel, submission entries
        /// handed over, buffers received (one per receive completion) and their bytes (`stats`).
        func echoStats() -> (enters: Double, entries: Double, chunks: Double, bytes: Double)? {
            guard let words = ask("stats")?.split(separator: " "), words.count == 5, words[0] == "stats",
                let enters = Double(words[1]), let entries = Double(words[2]), let chunks = Double(words[3]),
                let bytes = Double(words[4])
            else { return nil }
            return (enters, entries, chunks, bytes)
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline { usleep(1000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    static let benchExecutable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path

    /// The swift-nio peer, built with `swift build -c release --package-path tools/io-peers`
    /// (`RINGLOOP_IO_PEERS` names another binary); `nil` when it is not built.
    static let nioPeer: String? = {
        if let path = ProcessInfo.processInfo.environment["RINGLOOP_IO_PEERS"] { return path }
        var repository = #filePath
        for _ in 0..<3 { repository = String(repository[..<repository.lastIndex(of: "/")!]) }
        let path = repository + "/tools/io-peers/.build/release/io-peers"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    // MARK: Clients

    static func connectedSocket(port: UInt16) throws -> Int32 {
        let address = SocketAddress.loopback(port: port)
        let socket = try address.makeSocket().rawValue
        let result = address.withSockaddr { connect(socket, $0, $1) }
        guard result == 0 else {
            let failure = IOFailure(errno: errno)
            close(socket)
            throw failure
        }
        return socket
    }

    /// Round trips of a 64-byte message on one connection, in µs.
    static func pingPong(port: UInt16, count: Int) throws -> [Double] {
        let socket = try connectedSocket(port: port)
        defer { close(socket) }
        let message = [UInt8](repeating: 0x5A, count: 64)
        var reply = [UInt8](repeating: 0, count: 64)
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for index in 0..<(count + count / 10) {
            let start = MonotonicInstant.now
            guard message.withUnsafeBytes({ send(socket, $0.baseAddress, 64, Int32(MSG_NOSIGNAL)) }) == 64 else {
                throw IOFailure(errno: errno)
            }
            var received = 0
            while received < 64 {
                let count = reply.withUnsafeMutableBytes { recv(socket, $0.baseAddress! + received, 64 - received, 0) }
                guard count > 0 else { throw IOFailure.connectionReset }
                received += count
            }
            // The first tenth warms up.
            if index >= count / 10 { samples.append(Double((MonotonicInstant.now - start).nanosecondsValue) / 1000) }
        }
        return samples
    }

    /// The CPU time the process `pid` has used, all its threads, in nanoseconds
    /// (`/proc/PID/task/*/schedstat`).
    static func cpuTime(of pid: Int32) -> UInt64 {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { total, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? ""
            return total + (text.split(separator: " ").first.flatMap { UInt64($0) } ?? 0)
        }
    }

    /// Bytes echoed per second over `connections` connections, each keeping 16 KiB in
    /// flight in 4 KiB writes, driven by one `poll` thread; and the server's CPU time per
    /// KiB echoed meanwhile (what the machine's load does not change).
    static func throughput(
        port: UInt16, connections: Int, seconds: Double, server: Int32, atStartAndEnd: () -> Void = {}
    ) throws -> (bytesPerSecond: Double, cpuPerKiB: Double) {
        let sockets = try (0..<connections).map { _ in try connectedSocket(port: port) }
        defer { for socket in sockets { close(socket) } }
        for socket in sockets { _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK) }
        let chunk = [UInt8](repeating: 0xA5, count: 4096)
        var scratch = [UInt8](repeating: 0, count: 65_536)
        var outstanding = [Int](repeating: 0, count: connections)
        var entries = sockets.map { pollfd(fd: $0, events: 0, revents: 0) }
        var received = 0
        let warmUp = MonotonicInstant.now.advanced(by: .milliseconds(100))
        var measuredFrom: MonotonicInstant?
        var cpuFrom: UInt64 = 0
        var end = warmUp
        while true {
            let now = MonotonicInstant.now
            if measuredFrom == nil, now >= warmUp {
                atStartAndEnd()
                measuredFrom = now
                cpuFrom = cpuTime(of: server)
                received = 0
                end = now.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
            }
            if let measuredFrom, now >= end {
                let cpu = Double(cpuTime(of: server) - cpuFrom)
                atStartAndEnd()
                return (Double(received) / Double((now - measuredFrom).nanosecondsValue) * 1e9, cpu / (Double(received) / 1024))
            }
            for index in entries.indices {
                entries[index].events = Int16(POLLIN) | (outstanding[index] < 16_384 ? Int16(POLLOUT) : 0)
            }
            guard poll(&entries, nfds_t(entries.count), 1000) >= 0 || errno == EINTR else { throw IOFailure(errno: errno) }
            for index in entries.indices where entries[index].revents != 0 {
                let socket = entries[index].fd
                if entries[index].revents & Int16(POLLIN) != 0 {
                    let count = scratch.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                    if count == 0 { throw IOFailure.connectionReset }
                    if count > 0 {
                        received += count
                        outstanding[index] -= count
                    }
                }
                if entries[index].revents & Int16(POLLOUT) != 0, outstanding[index] < 16_384 {
                    let count = chunk.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if count > 0 { outstanding[index] += count }
                }
                if entries[index].revents & Int16(POLLERR | POLLHUP) != 0 { throw IOFailure.connectionReset }
            }
        }
    }

    // MARK: Echo

    /// Where the echo's throughput client and server run: as the scheduler likes, or the
    /// server process on one CPU and the client on another (the rows' `.two_cpus`).
    enum EchoPlacement: String {
        case free = ""
        case twoCPUs = ".two_cpus"
    }

    static func echo(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let count = BenchSize.of(quick ? 2_000 : 20_000)
        let seconds = quick ? 0.3 : 1.5
        var sides: [(name: String, executable: String, arguments: [String])] = [
            ("ours", benchExecutable, ["bench-server", "echo-ringloop"]),
            ("foundation", benchExecutable, ["bench-server", "echo-foundation"]),
        ]
        if let nioPeer { sides.append(("swift-nio", nioPeer, ["echo-server"])) }
        let cpus = CPUAffinity.allowedCPUs()
        let placements: [EchoPlacement] = cpus.count > 1 ? [.free, .twoCPUs] : [.free]
        var p50: [String: [Double]] = [:]
        var p99: [String: [Double]] = [:]
        var bytes: [EchoPlacement: [String: [Double]]] = [:]
        var cpuPerKiB: [EchoPlacement: [String: [Double]]] = [:]
        var entersPerChunk: [EchoPlacement: [Double]] = [:]
        var entriesPerChunk: [EchoPlacement: [Double]] = [:]
        var bytesPerChunk: [EchoPlacement: [Double]] = [:]
        for _ in 0..<rounds {
            for placement in placements {
                for side in sides {
                    // On a thread of its own: the server process inherits the CPUs this
                    // thread may use when it starts, the client keeps the other.
                    let measured = onFreshThread {
                        Result { () throws -> (samples: [Double]?, rate: Double, cpu: Double, perChunk: (Double, Double, Double)?) in
                            if placement == .twoCPUs { try? CPUAffinity.restrictCurrentThread(to: [cpus[1]]) }
                            let server = try ServerProcess(side.executable, side.arguments)
                            defer { server.stop() }
                            if placement == .twoCPUs { try? CPUAffinity.restrictCurrentThread(to: [cpus[0]]) }
                            let samples = placement == .free ? try pingPong(port: server.port, count: count) : nil
                            // Ours also counts its calls into the kernel and submissions per
                            // buffer echoed, over the measured time.
                            var stats: [(enters: Double, entries: Double, chunks: Double, bytes: Double)] = []
                            let (rate, cpu) = try throughput(
                                port: server.port, connections: 64, seconds: BenchSize.scale < 1 ? 0.05 : seconds,
                                server: server.process.processIdentifier
                            ) {
                                if side.name == "ours", let now = server.echoStats() { stats.append(now) }
                            }
                            var perChunk: (Double, Double, Double)?
                            if stats.count == 2, stats[1].chunks > stats[0].chunks {
                                let chunks = stats[1].chunks - stats[0].chunks
                                perChunk = (
                                    (stats[1].enters - stats[0].enters) / chunks, (stats[1].entries - stats[0].entries) / chunks,
                                    (stats[1].bytes - stats[0].bytes) / chunks
                                )
                            }
                            return (samples, rate, cpu, perChunk)
                        }
                    }
                    let (samples, rate, cpu, perChunk) = try measured.get()
                    if let perChunk {
                        entersPerChunk[placement, default: []].append(perChunk.0)
                        entriesPerChunk[placement, default: []].append(perChunk.1)
                        bytesPerChunk[placement, default: []].append(perChunk.2)
                    }
                    if let samples {
                        p50[side.name, default: []].append(percentile(samples, 0.5))
                        p99[side.name, default: []].append(percentile(samples, 0.99))
                    }
                    bytes[placement, default: [:]][side.name, default: []].append(rate)
                    cpuPerKiB[placement, default: [:]][side.name, default: []].append(cpu)
                }
            }
        }
        func result(_ name: String, _ unit: String, _ figures: [String: [Double]]) -> BenchResult {
            var peers: [String: Double] = [:]
            if let nio = figures["swift-nio"] { peers["swift-nio"] = median(nio) }
            return BenchResult(
                name, unit, ours: median(figures["ours"] ?? []), foundation: median(figures["foundation"] ?? []),
                peers: nioPeer == nil ? ["swift-nio": nil] : peers)
        }
        var results = [
            result("io.echo.pingpong.p50_us", "µs", p50),
            result("io.echo.pingpong.p99_us", "µs", p99),
        ]
        for placement in placements {
            results.append(result("io.echo.throughput\(placement.rawValue).bytes_per_s", "B/s", bytes[placement] ?? [:]))
            results.append(
                result("io.echo.throughput\(placement.rawValue).server_cpu_ns_per_kib", "ns", cpuPerKiB[placement] ?? [:]))
            if let enters = entersPerChunk[placement], let entries = entriesPerChunk[placement] {
                results.append(BenchResult("io.echo.throughput\(placement.rawValue).enters_per_chunk", "calls", ours: median(enters)))
                results.append(
                    BenchResult("io.echo.throughput\(placement.rawValue).submissions_per_chunk", "entries", ours: median(entries)))
            }
            if let received = bytesPerChunk[placement] {
                results.append(BenchResult("io.echo.throughput\(placement.rawValue).bytes_per_chunk", "B", ours: median(received)))
            }
        }
        return results
    }

    // MARK: Named ports

    /// Where the two sides of a port round trip run: as the scheduler likes, both on the
    /// lowest allowed CPU, or the caller there and the port (its thread, its process) on
    /// the next.
    enum PortPlacement: String, CaseIterable {
        case free = ""
        case oneCPU = ".one_cpu"
        case twoCPUs = ".two_cpus"
    }

    static func ports(quick: Bool, rounds: Int) throws -> [BenchResult] {
        var results: [BenchResult] = []
        let cpus = CPUAffinity.allowedCPUs()
        for placement in PortPlacement.allCases {
            if placement == .twoCPUs, cpus.count < 2 { continue }
            let (thread, process) = try onFreshThread {
                Result { try portRoundTrips(quick: quick, rounds: rounds, placement: placement) }
            }.get()
            results.append(
                BenchResult(
                    "ports.named.roundtrip.thread\(placement.rawValue).p50_us", "µs", ours: thread.ours,
                    peers: ["socketpair+poll": thread.poll, "socketpair+io_uring": thread.ring]))
            results.append(
                BenchResult(
                    "ports.named.roundtrip.process\(placement.rawValue).p50_us", "µs", ours: process.ours,
                    peers: ["socketpair+poll": process.poll, "socketpair+io_uring": process.ring]))
        }
        return results
    }

    /// One side of a placement's medians: ours, the `poll` peer and the ring's floor
    /// (``RingEchoPeer``), in µs.
    struct PortRoundTrips {
        var ours: [Double] = []
        var poll: [Double] = []
        var ring: [Double] = []

        var medians: (ours: Double, poll: Double, ring: Double) { (median(ours), median(poll), median(ring)) }

        mutating func addPeer(_ figure: Double, onRing: Bool) {
            if onRing { ring.append(figure) } else { poll.append(figure) }
        }
    }

    /// The median round trip of a peer's client on `socket`: `send`, `poll` and `recv`, or
    /// (`onRing`) one call into a bare ring (``RingEchoPeer``).
    private static func peerRoundTrips(_ socket: Int32, onRing: Bool, count: Int, request: [UInt8]) throws -> Double {
        if onRing {
            let client = try RingEchoPeer(socket: socket)
            return median(try roundTrips(count) { guard client.roundTrip(request) else { throw IOFailure.connectionReset } })
        }
        var reply = [UInt8](repeating: 0, count: request.count)
        return median(
            try roundTrips(count) { guard SeqpacketEcho.roundTrip(socket, request, &reply) else { throw IOFailure.connectionReset } })
    }

    /// One placement's medians: between threads and between processes. Runs on a thread
    /// of its own, whose CPUs it sets.
    private static func portRoundTrips(
        quick: Bool, rounds: Int, placement: PortPlacement
    ) throws -> (thread: (ours: Double, poll: Double, ring: Double), process: (ours: Double, poll: Double, ring: Double)) {
        let count = BenchSize.of(quick ? 2_000 : 20_000)
        let request = [UInt8](repeating: 7, count: 16)
        let cpus = CPUAffinity.allowedCPUs()
        let callerCPU = cpus.first ?? 0
        let portCPU = cpus.count > 1 ? cpus[1] : callerCPU
        // Threads and processes started from here inherit the CPUs this thread may use.
        func placePort() {
            switch placement {
            case .free: break
            case .oneCPU: try? CPUAffinity.restrictCurrentThread(to: [callerCPU])
            case .twoCPUs: try? CPUAffinity.restrictCurrentThread(to: [portCPU])
            }
        }
        func placeCaller() {
            if placement != .free { try? CPUAffinity.restrictCurrentThread(to: [callerCPU]) }
        }
        defer { if placement != .free, !cpus.isEmpty { try? CPUAffinity.restrictCurrentThread(to: cpus) } }
        var thread = PortRoundTrips()
        var process = PortRoundTrips()
        for round in 0..<rounds {
            let name = "ringloop.bench.\(getpid()).\(round)\(placement.rawValue)"
            // Between two threads: a port on a loop thread; the peer a socket pair and poll.
            placePort()
            let worker = LoopThread(name: "bench-port")
            placeCaller()
            let port = try LocalMessagePort(name: name + ".thread", loop: worker.loop) { _, data in data }
            worker.loop.add(port.source, to: .default)
            let remote = try RemoteMessagePort(name: name + ".thread")
            thread.ours.append(
                median(try roundTrips(count) { _ = try remote.sendRequest(msgid: 1, data: request, replyTimeout: .seconds(10)) }))
            port.invalidate()
            worker.stopAndJoin()
            for onRing in [false, true] {
                var pair: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &pair) == 0 else { throw IOFailure(errno: errno) }
                let served = pair[1]
                placePort()
                let echo = PosixThread.start(name: "bench-echo") {
                    if onRing { try? RingEchoPeer(socket: served).serve() } else { SeqpacketEcho.serve(served) }
                    close(served)
                }
                placeCaller()
                let figure = Result { try peerRoundTrips(pair[0], onRing: onRing, count: count, request: request) }
                close(pair[0])
                // Joined before the next ring is made: a ring's memory is mapped and unmapped
                // by liburing's own system calls, which ThreadSanitizer does not see, so a
                // new ring at a gone one's address reads to it as a race unless the threads'
                // order is one it sees.
                echo.join()
                thread.addPeer(try figure.get(), onRing: onRing)
            }
            // Between two processes.
            placePort()
            let server = try ServerProcess(benchExecutable, ["bench-server", "port", name + ".process"])
            placeCaller()
            let processRemote = try RemoteMessagePort(name: name + ".process")
            process.ours.append(
                median(try roundTrips(count) { _ = try processRemote.sendRequest(msgid: 1, data: request, replyTimeout: .seconds(10)) }))
            server.stop()
            for onRing in [false, true] {
                let kind = onRing ? "seqpacket-ring" : "seqpacket"
                placePort()
                let peer = try ServerProcess(benchExecutable, ["bench-server", kind, name + "." + kind])
                placeCaller()
                let address = try SocketAddress.abstract(name + "." + kind)
                let socket = try address.makeSocket(type: .sequencedPacket).rawValue
                guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else { throw IOFailure(errno: errno) }
                process.addPeer(try peerRoundTrips(socket, onRing: onRing, count: count, request: request), onRing: onRing)
                close(socket)
                peer.stop()
            }
        }
        return (thread.medians, process.medians)
    }

    /// Times `count` calls of `body` (after a tenth more to warm up), in µs.
    static func roundTrips(_ count: Int, _ body: () throws -> Void) throws -> [Double] {
        for _ in 0..<(count / 10) { try body() }
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = MonotonicInstant.now
            try body()
            samples.append(Double((MonotonicInstant.now - start).nanosecondsValue) / 1000)
        }
        return samples
    }
}
