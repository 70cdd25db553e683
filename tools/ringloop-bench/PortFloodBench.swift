import Foundation
import RingLoop

/// What peers can make a named port's process hold, measured on a port in a process of its
/// own (`bench-server port`): resident memory per connection served, under a peer that
/// never reads its replies, and after the peers have gone. The bounds are README's
/// ("Security"); these rows show where a run lands within them.
enum PortFloodBench {
    static func run(quick: Bool) throws -> [BenchResult] {
        let name = "ringloop.bench.flood.\(getpid())"
        let server = try IOBench.ServerProcess(IOBench.benchExecutable, ["bench-server", "port", name])
        defer { server.stop() }
        let pid = server.process.processIdentifier
        let baseline = try settledResident(pid)

        // As many connections as one user may have (the default limit), each served once.
        let count = LocalMessagePort.Limits().maximumConnectionsPerUser
        var ports: [RemoteMessagePort] = []
        for _ in 0..<count {
            let port = try RemoteMessagePort(name: name)
            _ = try port.sendRequest(msgid: 1, data: [1], replyTimeout: .seconds(10))
            ports.append(port)
        }
        let connected = try resident(pid)
        ports.removeAll()
        let afterConnections = try settledResident(pid)

        // A peer sending 1 KiB requests and never reading the replies, until the kernel
        // has refused its sends for half a second.
        let flood = try floodUnreadReplies(name, quick: quick)
        let duringFlood = try resident(pid)
        close(flood.socket)
        let afterFlood = try settledResident(pid)

        return [
            BenchResult("ports.flood.bytes_per_connection", "B", ours: Double(connected - baseline) * 1024 / Double(count)),
            BenchResult("ports.flood.unread_replies.requests_taken", "count", ours: Double(flood.taken)),
            BenchResult("ports.flood.unread_replies.growth_kib", "KiB", ours: Double(duringFlood - baseline)),
            BenchResult("ports.flood.resident_after_kib", "KiB", ours: Double(max(afterConnections, afterFlood) - baseline)),
        ]
    }

    /// Resident memory of process `pid` in KiB.
    static func resident(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { throw IOFailure.system(.noData) }
        return kib
    }

    /// Resident memory once it has stopped falling (the port's loop closing connections),
    /// at most two seconds from now.
    static func settledResident(_ pid: Int32) throws -> Int {
        var last = try resident(pid)
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline {
            usleep(100_000)
            let now = try resident(pid)
            if now >= last { return now }
            last = now
        }
        return last
    }

    private static func floodUnreadReplies(_ name: String, quick: Bool) throws -> (socket: Int32, taken: Int) {
        let address = try SocketAddress.abstract("rlport:" + name)
        let socket = try address.makeSocket(type: .sequencedPacket).rawValue
        guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else { throw IOFailure(errno: errno) }
        // A request packet as the wire has it: msgid 1, kind 2 (request), sequence 1, 1 KiB.
        var packet = [UInt8](repeating: 0, count: 24 + 1024)
        packet.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: Int32(1).littleEndian, toByteOffset: 0, as: Int32.self)
            raw.storeBytes(of: UInt16(2).littleEndian, toByteOffset: 4, as: UInt16.self)
            raw.storeBytes(of: UInt64(1).littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: UInt64(1024).littleEndian, toByteOffset: 16, as: UInt64.self)
        }
        var taken = 0
        var lastTaken = Date()
        while taken < (quick ? 20_000 : 100_000), Date().timeIntervalSince(lastTaken) < 0.5 {
            let sent = packet.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)) }
            if sent == packet.count {
                taken += 1
                lastTaken = Date()
            } else {
                usleep(200)
            }
        }
        return (socket, taken)
    }
}
