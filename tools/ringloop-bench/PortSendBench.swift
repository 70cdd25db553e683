import Glibc
import RingLoop

/// One-way sends to a port of another process, one packet each, timed on the sending
/// thread's CPU clock: what a single send costs its caller, from the message's bytes to
/// the ring's completion. The messages go in bursts that fit the socket's buffer (16 of at
/// most 4 KiB each), each followed by a request whose reply says the port has read them
/// all, so no send waits for room (a burst that did, counted by the ring's submissions,
/// is left out and reported): the figure is the send's own work, a packet of 512 bytes
/// (copied into one buffer by every limit the ports have had) or 4 KiB (between the
/// single send's old 1 KiB limit and the batch's 8 KiB, where the two differed).
enum PortSendBench {
    static let sizes = [512, 4096]
    static let burst = 16

    static func results(quick: Bool, rounds: Int) throws -> [BenchResult] {
        let bursts = BenchSize.of(quick ? 200 : 2_000)
        var perSize: [Int: [Double]] = [:]
        var waited: [Int: Int] = [:]
        for round in 0..<rounds {
            // The sizes in turn, their order rotated each round.
            for offset in sizes.indices {
                let size = sizes[(offset + round) % sizes.count]
                let name = "ringloop.bench.\(getpid()).send.\(round).\(size)"
                let (figure, waits) = try onFreshThread {
                    Result { try sendCPU(name: name, size: size, bursts: bursts) }
                }.get()
                perSize[size, default: []].append(figure)
                waited[size, default: 0] += waits
            }
        }
        return sizes.flatMap { size in
            let label = "ports.named.send.process.\(size >= 1024 ? "\(size / 1024)kib" : "\(size)b")"
            return [
                BenchResult(label + ".sender_cpu_ns", "ns", ours: median(perSize[size] ?? [])),
                BenchResult(label + ".bursts_waited", "count", ours: Double(waited[size] ?? 0)),
            ]
        }
    }

    /// The sending thread's CPU time a message, in ns, over the bursts that did not wait
    /// for room, and how many did.
    private static func sendCPU(name: String, size: Int, bursts: Int) throws -> (Double, Int) {
        let server = try IOBench.ServerProcess(IOBench.benchExecutable, ["bench-server", "port", name])
        defer { server.stop() }
        let loop = RingRunLoop.current
        let remote = try RemoteMessagePort(name: name)
        let message = [UInt8](repeating: 0x3C, count: size)
        // The port's hello read, the connection warm.
        for _ in 0..<10 { _ = try remote.sendRequest(msgid: 2, data: [], replyTimeout: .seconds(10)) }
        var nanoseconds: UInt64 = 0
        var counted = 0
        var waits = 0
        for _ in 0..<bursts {
            let submitted = loop.submittedEntryCount
            let start = LoopBench.threadCPUNanoseconds()
            for _ in 0..<burst { try remote.send(msgid: 1, data: message) }
            let spent = LoopBench.threadCPUNanoseconds() - start
            if loop.submittedEntryCount - submitted == UInt64(burst) {
                nanoseconds += spent
                counted += burst
            } else {
                waits += 1
            }
            // Every message of the burst is read once the port answers this.
            _ = try remote.sendRequest(msgid: 2, data: [], replyTimeout: .seconds(10))
        }
        return (counted == 0 ? .nan : Double(nanoseconds) / Double(counted), waits)
    }
}
