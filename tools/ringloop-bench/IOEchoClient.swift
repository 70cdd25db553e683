import ArgumentParser

/// The echo benchmark's throughput client on its own, against a server started by hand
/// (`bench-server echo-ringloop`, `io-peers echo-server`): 64 connections, 16 KiB in flight
/// each in 4 KiB writes, for as long as a profiler needs. Prints `bytes_per_s B/S
/// server_cpu_ns_per_kib NS` (the second 0 without a server process to read).
struct BenchEchoClient: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-echo-client", abstract: "Drive an echo server for profiling (used by hand).", shouldDisplay: false)

    @Argument(help: "The server's loopback TCP port (its `ready PORT` line).")
    var port: UInt16
    @Argument(help: "Seconds to measure, after 0.1 s of warm-up.")
    var seconds: Double = 5
    @Argument(help: "The server's process id, to read its CPU time (0: none).")
    var serverProcess: Int32 = 0

    func validate() throws {
        guard port > 0 else { throw ValidationError("port must be 1-65535, got \(port)") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("seconds must be in (0, 600], got \(seconds)") }
    }

    func run() throws {
        let (rate, cpu) = try IOBench.throughput(port: port, connections: 64, seconds: seconds, server: serverProcess)
        BenchServer.say("bytes_per_s \(Int(rate)) server_cpu_ns_per_kib \(serverProcess > 0 ? Int(cpu) : 0)")
    }
}
