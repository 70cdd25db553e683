import CThreads
import Glibc
import Synchronization

@testable import RingLoop

/// The child-process side of the tests of ports between processes: hosts a scenario's
/// port and a control port (`NAME.control`) through which the test process measures the
/// child and ends it. Runs in an exit test (`#expect(processExitsWith:)`), which passes
/// only Codable values, hence the scenario by name.
///
/// Control messages: ``rss`` answers the child's resident memory in KiB, ``connections``
/// the scenario port's connections from other processes, ``stop`` ends the child (exit 0,
/// or 3 when the scenario found something wrong).
enum PortHost {
    static let echo: Int32 = 1
    static let rss: Int32 = 900
    static let connections: Int32 = 901
    static let stop: Int32 = 902
    static let unreadByPeers: Int32 = 903
    /// The largest reply the `bigReply` scenario sends.
    static let bigReplySize = 1 << 20

    enum Scenario: String, Codable, Sendable {
        /// An echo port in the default mode.
        case echo
        /// Two ports: `NAME.strict` with the default access (the port's own user) and
        /// `NAME.open`, which also serves uid 65534 (nobody).
        case strictAndOpen
        /// An echo port whose source is in the common modes while the child runs only the
        /// mode `idle`, which is not common: nothing reaches the callback.
        case idleCommon
        /// An echo port whose source is only in the custom mode `custom`, which the child
        /// runs.
        case customMode
        /// An echo port whose loop is busy for a second before it first runs.
        case busyStart
        /// An echo port on a loop run with `returnAfterSourceHandled`: a run that returns
        /// `handledSource` before any callback ran fails the child (exit 3).
        case handledSource
        /// A port answering a request of N bytes with N × 64 bytes (at most 1 MiB), and a
        /// 2 MiB message limit.
        case bigReply
        /// An echo port allowing 4 connections per user.
        case fewConnections
        /// An echo port serving uid 65534 too, allowing 6 connections, 4 per user.
        case sharedConnections
        /// A process of uid 65534 (nobody) holding the name, serving anyone.
        case squatter
        /// An echo port whose source is only in the mode `inner`, which runs only nested,
        /// inside a timer's callout of the default mode.
        case nestedRun
    }

    /// Resident memory of this process in KiB (`VmRSS`).
    static func residentKiB() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0 {
            let text = String(cString: line!)
            if text.hasPrefix("VmRSS:") {
                return Int(text.dropFirst(6).trimmingPrefix(while: { $0 == " " || $0 == "\t" }).prefix { $0.isNumber }) ?? -1
            }
        }
        return -1
    }

    /// Hosts `scenario` under `name`; returns the child's exit status.
    static func run(_ scenario: Scenario, name: String) -> Int32 {
        if scenario == .squatter {
            guard setgid(65534) == 0, setuid(65534) == 0 else { return 5 }
        }
        let loop = RingRunLoop.current
        let failed = Atomic<Bool>(false)
        let stopped = Atomic<Bool>(false)
        // Every callback, the control port's included: a run that returns handledSource
        // with none counted returned for the transport's own completions.
        let callbacks = Atomic<Int>(0)
        var limits = LocalMessagePort.Limits()
        if scenario == .fewConnections || scenario == .sharedConnections { limits.maximumConnectionsPerUser = 4 }
        if scenario == .sharedConnections { limits.maximumConnections = 6 }
        let size = scenario == .bigReply ? 2 << 20 : LocalMessagePort.defaultMaximumMessageSize
        let serve: LocalMessagePort.Callback = { msgid, data in
            callbacks.add(1, ordering: .relaxed)
            if scenario == .bigReply {
                return [UInt8](repeating: 0xA5, count: min(bigReplySize, data.count * 64))
            }
            return msgid == echo ? data : nil
        }
        do {
            var ports: [LocalMessagePort] = []
            switch scenario {
            case .strictAndOpen:
                ports.append(try LocalMessagePort(name: name + ".strict", loop: loop, callback: serve))
                ports.append(try LocalMessagePort(name: name + ".open", loop: loop, access: .users([0, 65534]), callback: serve))
            case .squatter:
                ports.append(try LocalMessagePort(name: name, loop: loop, access: .anyone, callback: serve))
            case .sharedConnections:
                ports.append(try LocalMessagePort(name: name, loop: loop, access: .users([0, 65534]), limits: limits, callback: serve))
            default:
                ports.append(
                    try LocalMessagePort(name: name, loop: loop, maximumMessageSize: size, limits: limits, callback: serve))
            }
            let scenarioPort = ports[0]
            let control = try LocalMessagePort(name: name + ".control", loop: loop, access: .anyone) { msgid, _ in
                callbacks.add(1, ordering: .relaxed)
                switch msgid {
                case rss: return Array(String(residentKiB()).utf8)
                case connections: return Array(String(scenarioPort.core.listener.connectionCount).utf8)
                case unreadByPeers: return Array(String(scenarioPort.core.listener.bytesUnreadByPeers).utf8)
                case stop:
                    stopped.store(true, ordering: .relaxed)
                    loop.stop()
                default: break
                }
                return nil
            }
            let mode: RingRunLoop.Mode
            switch scenario {
            case .idleCommon:
                mode = "idle"
                loop.add(scenarioPort.source, to: .common)
            case .customMode:
                mode = "custom"
                loop.add(scenarioPort.source, to: "custom")
            case .nestedRun:
                mode = .default
                loop.add(scenarioPort.source, to: "inner")
                let nested = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _ in
                    loop.run(mode: "inner", for: .milliseconds(20))
                }
                loop.add(nested, to: .default)
            default:
                mode = .default
                for port in ports { loop.add(port.source, to: .default) }
            }
            loop.add(control.source, to: mode)
            if scenario == .busyStart { sleep(1) }
            let limit = MonotonicInstant.now + .seconds(60)
            while !stopped.load(ordering: .relaxed), MonotonicInstant.now < limit {
                let before = callbacks.load(ordering: .relaxed)
                let result = loop.run(mode: mode, until: limit, returnAfterSourceHandled: scenario == .handledSource)
                if result == .handledSource, callbacks.load(ordering: .relaxed) == before {
                    failed.store(true, ordering: .relaxed)
                }
                if result == .finished || result == .failed || result == .timedOut { break }
            }
            for port in ports { port.invalidate() }
            control.invalidate()
            guard stopped.load(ordering: .relaxed) else { return 2 }
        } catch {
            print("port host: \(error)")
            return 4
        }
        return failed.load(ordering: .relaxed) ? 3 : 0
    }
}

/// Runs `body` as user `uid` (and group `gid`) on this thread only, through the kernel's
/// per-thread credentials (a socket this thread connects records them as its peer's); the
/// rest of the process stays root.
func asUser<T>(_ uid: UInt32, gid: UInt32? = nil, _ body: () throws -> T) rethrows -> T {
    // Threads inherit their creator's credentials: the process's port thread must not be
    // started by this one while it is someone else.
    _ = PortClientThread.loop
    let (savedUID, savedGID) = (geteuid(), getegid())
    precondition(ringloop_thread_set_effective_ids(uid, gid ?? uid) == 0, "cannot become uid \(uid): errno \(errno)")
    defer { precondition(ringloop_thread_set_effective_ids(savedUID, savedGID) == 0, "cannot become uid \(savedUID) again") }
    return try body()
}

/// A request to the control port of a ``PortHost`` child: its answer as a number.
func controlValue(_ name: String, _ msgid: Int32) -> Int? {
    guard let control = remotePort(named: name + ".control", trusting: .anyone),
        let reply = try? control.sendRequest(msgid: msgid, data: [], replyTimeout: .seconds(20))
    else { return nil }
    return Int(String(decoding: reply, as: UTF8.self))
}

/// Ends a ``PortHost`` child.
func stopPortHost(_ name: String) {
    guard let control = remotePort(named: name + ".control", trusting: .anyone) else { return }
    try? control.send(msgid: PortHost.stop, data: [])
}
