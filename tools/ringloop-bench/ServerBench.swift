import Foundation
import RingLoop
import RingLoopBenchmarks
import RingLoopEvdev
import RingLoopHID
import Synchronization
import SystemPackage

/// The event server (`HIDEventServer`) in a process of its own (`bench-server hid NAME`),
/// fed through a FIFO that carries `input_event` records as a device does, and clients
/// (`HIDEventSystem(configuration: .init(server:))`) on one loop of this process: device →
/// server → client handler latency beside the in-process event-thread shape and the
/// futex floor of the same run; the server's CPU per event per client for 1, 16 and 64
/// clients; the clients' p99 while one more client never acknowledges. The fan-out rows
/// (`--only server.fanout`) run the clients on one loop and, as apps run, on a loop thread
/// each.
enum ServerBench {
    /// The bench mouse every measurement moves.
    static let mouse = HIDDeviceInfo.describing(
        name: "Bench Mouse", codes: [Evdev.EV_KEY: [Evdev.BTN_LEFT, Evdev.BTN_RIGHT], Evdev.EV_REL: [Evdev.REL_X, Evdev.REL_Y]],
        axes: [:], properties: [])

    /// The server process: started, told to report its CPU time, stopped by closing its
    /// standard input.
    final class ServerProcess {
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        let fifo: String
        let name: String

        init(name: String) throws {
            self.name = name
            process.executableURL = URL(fileURLWithPath: IOBench.benchExecutable)
            process.arguments = ["bench-server", "hid", name]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let words = Self.readLine(output).split(separator: " ")
            guard words.count == 3, words[0] == "ready" else { throw IOBench.ServerProcess.Failure.notReady("hid") }
            fifo = String(words[2])
        }

        private static func readLine(_ output: Pipe) -> String {
            var line: [UInt8] = []
            var byte: UInt8 = 0
            let reader = output.fileHandleForReading.fileDescriptor
            while read(reader, &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
            return String(decoding: line, as: UTF8.self)
        }

        /// The server process's CPU time so far, in nanoseconds.
        func cpuNanoseconds() -> Double {
            input.fileHandleForWriting.write(Data("cpu\n".utf8))
            return Self.readLine(output).split(separator: " ").last.flatMap { Double($0) } ?? .nan
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// What one run measured: every client handler's latency, and the server's CPU per
    /// event per client.
    struct Run {
        var latencies: [Double]
        var nanosecondsPerEventPerClient: Double
        /// For each frame every client took, the time from the first client's handler to
        /// the last's (µs): what the fan-out adds to the frame, with the path every client
        /// shares (the device's read, the server's wake-up and chain) taken out.
        var spreads: [Double] = []
        /// For each frame every client took, the first client's latency (µs): the path every
        /// client shares (the device's read, the server's turn, one client's wake-up), which
        /// the spread follows.
        var firsts: [Double] = []
        /// The clients' own CPU time a frame and client (µs): the client loops' threads'
        /// CPU time (`CLOCK_THREAD_CPUTIME_ID`) while the frames came, over the samples.
        var clientMicrosecondsPerFrame = Double.nan
        /// Each client's median latency, by the order the clients attached (µs).
        var medianByClient: [Double] = []

        init(latencies: [Double], nanosecondsPerEventPerClient: Double) {
            self.latencies = latencies
            self.nanosecondsPerEventPerClient = nanosecondsPerEventPerClient
        }

        /// Gathers the samples `(client, frame's timestamp, latency)`.
        init(samples: [(client: Int, frame: UInt64, latency: Double)], clients: Int, nanosecondsPerEventPerClient: Double) {
            latencies = samples.map(\.latency)
            self.nanosecondsPerEventPerClient = nanosecondsPerEventPerClient
            var frames: [UInt64: (count: Int, first: Double, last: Double)] = [:]
            var byClient = [[Double]](repeating: [], count: clients)
            for sample in samples {
                byClient[sample.client].append(sample.latency)
                let seen = frames[sample.frame] ?? (0, .infinity, -.infinity)
                frames[sample.frame] = (seen.count + 1, min(seen.first, sample.latency), max(seen.last, sample.latency))
            }
            let complete = frames.values.filter { $0.count == clients }
            spreads = complete.map { $0.last - $0.first }
            firsts = complete.map(\.first)
            medianByClient = byClient.map { median($0) }
        }
    }

    /// Where the bench's clients run.
    enum Placement: String {
        /// Every client on one loop, of one thread of the bench's process: a frame's 16th
        /// client's handler runs after the 15 others' (the `server.fanout.N` rows).
        case oneLoop
        /// Every client on a loop thread of its own, as apps are (each its own process and
        /// loop): the clients wake together and share the machine's CPUs, not one thread
        /// (the `server.fanout.own_loops.N` rows).
        case ownLoops
    }

    /// `clients` clients (all observing the mouse), and `silent` more that say hello and
    /// never acknowledge; `frames` frames 1 ms apart.
    static func run(clients: Int, silent: Int = 0, frames: Int, placement: Placement = .oneLoop) throws -> Run {
        if placement == .ownLoops { return try runOnOwnLoops(clients: clients, frames: frames) }
        let name = "bench.hid.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let server = try ServerProcess(name: name)
        defer { server.stop() }
        let writeEnd = open(server.fifo, O_WRONLY | O_CLOEXEC)
        guard writeEnd >= 0 else { throw IOBench.ServerProcess.Failure.notReady("hid (its FIFO)") }
        defer { close(writeEnd) }
        return onFreshThread { () -> Run in
            let loop = RingRunLoop.current
            var samples: [(client: Int, frame: UInt64, latency: Double)] = []
            samples.reserveCapacity(frames * clients)
            var systems: [HIDEventSystem] = []
            var attached = 0
            for index in 0..<clients {
                let system = HIDEventSystem(
                    configuration: .init(server: name, clientName: "bench \(index)", subscribedDeviceClasses: [.pointer]),
                    loop: loop)
                system.addHandler { event in
                    switch event.kind {
                    case .deviceAdded: attached += 1
                    case .pointerMotion:
                        let latency = Double((MonotonicInstant.now - event.timestamp).nanosecondsValue) / 1000
                        samples.append((index, event.timestamp.nanoseconds, latency))
                    default: break
                    }
                    return .pass
                }
                guard (try? system.start()) != nil else { return Run(latencies: [], nanosecondsPerEventPerClient: .nan) }
                systems.append(system)
            }
            var silentPorts: [(LocalMessagePort, RemoteMessagePort)] = []
            for index in 0..<silent {
                guard let pair = try? silentClient(server: name, port: "\(name).silent.\(index)", loop: loop) else { continue }
                silentPorts.append(pair)
            }
            let limit = MonotonicInstant.now + .seconds(20)
            while attached < clients, MonotonicInstant.now < limit { loop.run(mode: .default, for: .milliseconds(10)) }
            let cpuBefore = server.cpuNanoseconds()
            let clientCPUBefore = threadCPUNanoseconds()
            let sender = Thread {
                let frame = UnsafeMutableRawPointer.allocate(byteCount: 2 * InputEvent.size, alignment: 8)
                defer { frame.deallocate() }
                for index in 0..<frames {
                    ScaleBench.writeMotion(to: writeEnd, value: index % 2 == 0 ? 1 : -1, through: frame)
                    usleep(1000)
                }
            }
            sender.start()
            let end = MonotonicInstant.now + .seconds(60)
            while samples.count < frames * clients, MonotonicInstant.now < end {
                loop.run(mode: .default, for: .milliseconds(50))
            }
            let clientCPU = threadCPUNanoseconds() - clientCPUBefore
            let cpu = server.cpuNanoseconds() - cpuBefore
            for system in systems { system.stop() }
            for (port, _) in silentPorts { port.invalidate() }
            var measured = Run(
                samples: samples, clients: clients, nanosecondsPerEventPerClient: cpu / Double(max(1, samples.count)))
            measured.clientMicrosecondsPerFrame = clientCPU / 1000 / Double(max(1, samples.count))
            return measured
        }
    }

    /// What the clients on loops of their own share with the thread that starts them.
    private final class OwnLoopsShared: Sendable {
        /// Clients that saw the mouse added.
        let attached = Atomic<Int>(0)
        /// Clients that failed to start.
        let failed = Atomic<Int>(0)
        /// Set when the frames are written and the stragglers' grace is over.
        let stop = Atomic<Bool>(false)
        /// The clients' threads' CPU time from their attachment to their end (ns).
        let clientCPU = Atomic<Int>(0)
        /// Every client's samples `(client, frame's timestamp, latency)`, handed in at its end.
        let samples = Mutex<[(client: Int, frame: UInt64, latency: Double)]>([])
    }

    /// `clients` clients, each on a loop thread of its own (``Placement/ownLoops``); each
    /// handler's latency is taken on its own thread, from the frame's timestamp (the
    /// device write) as in ``run(clients:silent:frames:placement:)``. Threads, not
    /// processes: each client's path is an app's (its own port, its own loop's ring and
    /// wait, woken by the server's send), and the samples stay in one address space to
    /// gather the spread across clients without a transport of their own.
    private static func runOnOwnLoops(clients: Int, frames: Int) throws -> Run {
        let name = "bench.hid.\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        let server = try ServerProcess(name: name)
        defer { server.stop() }
        let writeEnd = open(server.fifo, O_WRONLY | O_CLOEXEC)
        guard writeEnd >= 0 else { throw IOBench.ServerProcess.Failure.notReady("hid (its FIFO)") }
        defer { close(writeEnd) }
        let shared = OwnLoopsShared()
        let group = DispatchGroup()
        for index in 0..<clients {
            group.enter()
            let client = Thread {
                defer { group.leave() }
                let loop = RingRunLoop.current
                var samples: [(client: Int, frame: UInt64, latency: Double)] = []
                samples.reserveCapacity(frames)
                var cpuAtAttach = 0.0
                let system = HIDEventSystem(
                    configuration: .init(server: name, clientName: "bench \(index)", subscribedDeviceClasses: [.pointer]),
                    loop: loop)
                system.addHandler { event in
                    switch event.kind {
                    case .deviceAdded:
                        cpuAtAttach = threadCPUNanoseconds()
                        shared.attached.add(1, ordering: .relaxed)
                    case .pointerMotion:
                        let latency = Double((MonotonicInstant.now - event.timestamp).nanosecondsValue) / 1000
                        samples.append((index, event.timestamp.nanoseconds, latency))
                    default: break
                    }
                    return .pass
                }
                guard (try? system.start()) != nil else {
                    shared.failed.add(1, ordering: .relaxed)
                    return
                }
                let end = MonotonicInstant.now + .seconds(80)
                while samples.count < frames, !shared.stop.load(ordering: .relaxed), MonotonicInstant.now < end {
                    loop.run(mode: .default, for: .milliseconds(50))
                }
                shared.clientCPU.add(Int(threadCPUNanoseconds() - cpuAtAttach), ordering: .relaxed)
                system.stop()
                shared.samples.withLock { $0 += samples }
            }
            client.stackSize = 8 << 20
            client.start()
        }
        let limit = MonotonicInstant.now + .seconds(20)
        while shared.attached.load(ordering: .relaxed) + shared.failed.load(ordering: .relaxed) < clients,
            MonotonicInstant.now < limit
        {
            usleep(2000)
        }
        guard shared.failed.load(ordering: .relaxed) == 0, shared.attached.load(ordering: .relaxed) == clients else {
            shared.stop.store(true, ordering: .relaxed)
            group.wait()
            return Run(latencies: [], nanosecondsPerEventPerClient: .nan)
        }
        let cpuBefore = server.cpuNanoseconds()
        let frame = UnsafeMutableRawPointer.allocate(byteCount: 2 * InputEvent.size, alignment: 8)
        defer { frame.deallocate() }
        for index in 0..<frames {
            ScaleBench.writeMotion(to: writeEnd, value: index % 2 == 0 ? 1 : -1, through: frame)
            usleep(1000)
        }
        // Every client has its frames, or a second more has passed.
        _ = group.wait(timeout: .now() + .seconds(1))
        let cpu = server.cpuNanoseconds() - cpuBefore
        shared.stop.store(true, ordering: .relaxed)
        group.wait()
        let samples = shared.samples.withLock { $0 }
        var measured = Run(
            samples: samples, clients: clients, nanosecondsPerEventPerClient: cpu / Double(max(1, samples.count)))
        measured.clientMicrosecondsPerFrame =
            Double(shared.clientCPU.load(ordering: .relaxed)) / 1000 / Double(max(1, samples.count))
        return measured
    }

    /// This thread's CPU time so far (ns).
    static func threadCPUNanoseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
    }

    /// A client that says hello and never acknowledges (nor reads: its port's source is in
    /// no mode), so its socket fills.
    static func silentClient(server name: String, port: String, loop: RingRunLoop) throws -> (LocalMessagePort, RemoteMessagePort) {
        let own = try LocalMessagePort(name: port, loop: loop) { _, _ in nil }
        let remote = try RemoteMessagePort(name: name)
        let hello = ServerWire.Hello(
            token: UInt64.random(in: 1...UInt64.max), port: port, name: "silent", kinds: [], deviceClasses: [.pointer], wantsFocus: false)
        _ = try remote.sendRequest(msgid: ServerWire.MessageID.hello.rawValue, data: hello.encoded, replyTimeout: .seconds(10))
        return (own, remote)
    }

    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let frames = BenchSize.of(quick ? 300 : 2000)
        var e2e: [(p50: Double, p99: Double)] = []
        // Each round's server p50 less the in-process p50 measured right after it: the
        // machine's drift between rounds (a VM's neighbours) falls out of the difference.
        var overInProcess: [Double] = []
        var inProcess: [(p50: Double, p99: Double)] = []
        var floor: [(p50: Double, p99: Double)] = []
        var fanout: [Int: [(ns: Double, p99: Double)]] = [1: [], 16: [], 64: []]
        var slow: [Double] = []
        for _ in 0..<(quick ? 1 : rounds) {
            let one = try run(clients: 1, frames: frames)
            if !one.latencies.isEmpty { e2e.append((percentile(one.latencies, 0.5), percentile(one.latencies, 0.99))) }
            let local = HIDBench.endToEndPipe(quick: quick, shape: .dedicatedThread).latencies
            if !local.isEmpty { inProcess.append((percentile(local, 0.5), percentile(local, 0.99))) }
            if !one.latencies.isEmpty, !local.isEmpty, let server = e2e.last, let here = inProcess.last {
                overInProcess.append(server.p50 - here.p50)
            }
            let futex = try WakeUpBenchmark.run(.futex, samples: frames, gap: .milliseconds(1))
            floor.append((percentile(futex.latencies, 0.5), percentile(futex.latencies, 0.99)))
            for count in [1, 16, 64] {
                let measured = count == 1 ? one : try run(clients: count, frames: frames / (count == 64 ? 2 : 1))
                guard !measured.latencies.isEmpty else { continue }
                fanout[count]!.append((measured.nanosecondsPerEventPerClient, percentile(measured.latencies, 0.99)))
            }
            let withSilent = try run(clients: 16, silent: 1, frames: frames)
            if !withSilent.latencies.isEmpty { slow.append(percentile(withSilent.latencies, 0.99)) }
        }
        var results: [BenchResult] = []
        if !e2e.isEmpty {
            for (label, value) in [("p50", \(p50: Double, p99: Double).p50), ("p99", \.p99)] {
                results.append(
                    BenchResult(
                        "server.e2e.\(label)_us", "µs", ours: median(e2e.map { $0[keyPath: value] }),
                        peers: [
                            "in_process_thread": inProcess.isEmpty ? nil : median(inProcess.map { $0[keyPath: value] }),
                            "futex_floor": median(floor.map { $0[keyPath: value] }),
                        ]))
            }
        }
        if !overInProcess.isEmpty {
            results.append(BenchResult("server.e2e.p50_over_in_process_us", "µs", ours: median(overInProcess)))
        }
        for count in [1, 16, 64] where !(fanout[count]!.isEmpty) {
            results.append(
                BenchResult("server.fanout.\(count).ns_per_event_per_client", "ns", ours: median(fanout[count]!.map(\.ns))))
            results.append(BenchResult("server.fanout.\(count).p99_us", "µs", ours: median(fanout[count]!.map(\.p99))))
        }
        if let one = fanout[1], let many = fanout[64], !one.isEmpty, !many.isEmpty {
            // What each client adds to the server's CPU per frame, the fixed cost (the
            // device's read, the server's wake-ups) taken out: 64 clients against 1.
            let added = (median(many.map(\.ns)) * 64 - median(one.map(\.ns))) / 63
            results.append(BenchResult("server.fanout.per_added_client_ns", "ns", ours: added))
        }
        if !slow.isEmpty {
            let without = fanout[16]!.isEmpty ? nil : median(fanout[16]!.map(\.p99))
            results.append(BenchResult("server.slow_client.p99_us", "µs", ours: median(slow), peers: ["without": without]))
        }
        return results
    }

    /// One shape of the fan-out: how many clients, and where they run.
    struct FanoutShape: Hashable {
        var clients: Int
        var placement: Placement
        /// The rows' name: `server.fanout.16` for one loop (the rows' old name, kept),
        /// `server.fanout.own_loops.16` for loops of their own.
        var name: String { prefix + "\(clients)" }
        /// The name of its ratio to one client's: `server.fanout.16_over_1`.
        var ratioName: String { prefix + "\(clients)_over_1" }
        private var prefix: String { placement == .oneLoop ? "server.fanout." : "server.fanout.own_loops." }
    }

    /// The fan-out alone (`--only server.fanout`): 1, 16 and 64 clients on one loop, and
    /// 16 clients on loops of their own (`--only server.fanout.own_loops`: 1 and those 16
    /// only), each round in another order (1 16 64, 16 64 1, 64 1 16…), so that what the
    /// machine's neighbours do falls on every shape alike; a round's 16-client p99 is set
    /// against the 1-client p99 of the same round (the runs next to each other in time).
    /// One client is the same shape either way (one client on a loop thread of its own):
    /// its run is the baseline of both ratios. Each p99 is the median over rounds, with the
    /// lowest and highest; beside them the futex floor of the same rounds (one thread
    /// waking another, a frame a millisecond: what the machine's own wake-ups cost at p99
    /// while the rounds ran) and the machine's load average at the start and at the end.
    static func fanoutResults(quick: Bool, rounds: Int, ownLoopsOnly: Bool = false) throws -> [BenchResult] {
        let frames = BenchSize.of(quick ? 300 : 2000)
        let one = FanoutShape(clients: 1, placement: .oneLoop)
        let ownSixteen = FanoutShape(clients: 16, placement: .ownLoops)
        let shapes =
            ownLoopsOnly
            ? [one, ownSixteen]
            : [one, FanoutShape(clients: 16, placement: .oneLoop), ownSixteen, FanoutShape(clients: 64, placement: .oneLoop)]
        var loadBefore = [0.0, 0.0, 0.0]
        _ = getloadavg(&loadBefore, 3)
        var runs: [FanoutShape: [Run]] = [:]
        // Each round's runs, to set a 16-client run against the 1-client run of its round.
        var rounded: [[FanoutShape: Run]] = []
        var floor: [Double] = []
        for round in 0..<(quick ? 1 : rounds) {
            let futex = try WakeUpBenchmark.run(.futex, samples: frames, gap: .milliseconds(1))
            floor.append(percentile(futex.latencies, 0.99))
            var thisRound: [FanoutShape: Run] = [:]
            for step in 0..<shapes.count {
                let shape = shapes[(round + step) % shapes.count]
                let measured = try run(
                    clients: shape.clients, frames: frames / (shape.clients == 64 ? 2 : 1), placement: shape.placement)
                guard !measured.latencies.isEmpty else { continue }
                runs[shape, default: []].append(measured)
                thisRound[shape] = measured
            }
            rounded.append(thisRound)
        }
        var loadAfter = [0.0, 0.0, 0.0]
        _ = getloadavg(&loadAfter, 3)
        var results: [BenchResult] = []
        for shape in shapes {
            guard let measured = runs[shape], !measured.isEmpty else { continue }
            let p99s = measured.map { percentile($0.latencies, 0.99) }
            results.append(
                BenchResult(
                    "\(shape.name).p99_us", "µs", ours: median(p99s),
                    peers: [
                        "lowest": p99s.min(), "highest": p99s.max(), "p50": median(measured.map { percentile($0.latencies, 0.5) }),
                        "p95": median(measured.map { percentile($0.latencies, 0.95) }), "futex_floor": median(floor),
                        // Samples past a millisecond (a neighbour's time slice, or a frame late
                        // by one): past 1 % of them, the p99 is that wait, not the fan-out.
                        "over_1ms_percent": median(
                            measured.map { run in 100 * Double(run.latencies.count { $0 > 1000 }) / Double(run.latencies.count) }),
                    ]))
            results.append(
                BenchResult(
                    "\(shape.name).ns_per_event_per_client", "ns", ours: median(measured.map(\.nanosecondsPerEventPerClient)),
                    // The clients' side of the same frames: their loops' CPU time a frame
                    // and client.
                    peers: ["client_us": median(measured.map(\.clientMicrosecondsPerFrame))]))
            if shape.clients > 1 {
                let spreads = measured.map { (p50: percentile($0.spreads, 0.5), p99: percentile($0.spreads, 0.99)) }
                results.append(
                    BenchResult(
                        "\(shape.name).spread_p99_us", "µs", ours: median(spreads.map(\.p99)),
                        peers: [
                            "p50": median(spreads.map(\.p50)),
                            // The frame's first client: the shared path's p99, which the spread follows.
                            "first_of_frame_p99": median(measured.map { percentile($0.firsts, 0.99) }),
                        ]))
                let first = median(measured.map { $0.medianByClient.first ?? .nan })
                let last = median(measured.map { $0.medianByClient.last ?? .nan })
                results.append(
                    BenchResult("\(shape.name).last_client_p50_us", "µs", ours: last, peers: ["first_client": first]))
            }
        }
        for many in shapes where many.clients == 16 {
            let ratios = rounded.compactMap { round -> Double? in
                guard let single = round[one], let sixteen = round[many] else { return nil }
                return percentile(sixteen.latencies, 0.99) / percentile(single.latencies, 0.99)
            }
            guard !ratios.isEmpty else { continue }
            results.append(
                BenchResult(
                    "\(many.ratioName).p99_ratio", "×", ours: median(ratios),
                    peers: [
                        "lowest": ratios.min(), "highest": ratios.max(),
                        "at_most_2x_rounds": Double(ratios.count { $0 <= 2 }), "rounds": Double(ratios.count),
                        "load_1min_before": loadBefore[0], "load_1min_after": loadAfter[0],
                    ]))
        }
        return results
    }

    /// The server side (`bench-server hid NAME`): a FIFO as the mouse's stream, the server
    /// on this process's loop; `cpu` on standard input prints the process's CPU time.
    static func serve(_ name: String) throws {
        let fifo = "/tmp/ringloop-bench-hid-\(getpid()).fifo"
        unlink(fifo)
        guard mkfifo(fifo, 0o600) == 0 else { throw IOBench.ServerProcess.Failure.notReady("hid (mkfifo)") }
        // Read and write: the FIFO never ends while the bench opens and closes its end.
        let fd = open(fifo, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        let loop = RingRunLoop.current
        let server = HIDEventServer(
            configuration: .init(
                name: name, devices: .init(deviceDirectory: "/tmp", shape: .clientLoop, nodeNames: []), focusOnAttach: .first),
            loop: loop)
        try server.start()
        try server.system.attachStream(fileDescriptor: FileDescriptor(rawValue: fd), description: mouse)
        Thread.detachNewThread {
            while let line = Swift.readLine() {
                guard line == "cpu" else { continue }
                var time = timespec()
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
                let text = Array("cpu \(Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))\n".utf8)
                _ = text.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            }
            unlink(fifo)
            Glibc.exit(0)
        }
        let line = Array("ready 0 \(fifo)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        loop.run()
    }
}
