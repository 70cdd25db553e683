import Glibc
import Synchronization
import Testing

@testable import RingLoop

/// The message id of a worker's check-in (the Threading Programming Guide's
/// `kCheckinMessage`).
let checkinMessage: Int32 = 100
/// A request the main thread sends to a worker once it checked in.
let workMessage: Int32 = 101

/// The main thread's side of the check-in example: the remote ports of the workers that
/// checked in (`MainThreadResponseHandler` stores them).
final class CheckedInWorkers: Sendable {
    let ports = ThreadLock<[RemoteMessagePort]>([])
}

@Suite("Named message ports (CFMessagePort)")
struct NamedPortTests {
    static func uniqueName(_ role: String) -> String {
        "com.ringloop.test.\(role)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Apple's thread check-in example (Threading Programming Guide, "Configuring a
    /// CFMessagePort"), line for line: the main thread makes a named local port and spawns
    /// a worker with the name; the worker makes a remote port to it and a local port of
    /// its own, and checks in with its port's name; the main thread's callback makes a
    /// remote port to the worker, which it then uses.
    @Test("The check-in example between a main thread and a worker thread")
    func checkInBetweenThreads() throws {
        let mainPortName = Self.uniqueName("MainThread")
        let workers = CheckedInWorkers()
        let workerLoop = ThreadLock<RingRunLoop?>(nil)
        try onFreshLoopThreadThrowing {
            // MySpawnThread: a local port for receiving responses, its source in the loop.
            let mainLoop = RingRunLoop.current
            let myPort = try LocalMessagePort(name: mainPortName, loop: mainLoop) { msgid, data in
                // MainThreadResponseHandler
                if msgid == checkinMessage {
                    let threadPortName = String(decoding: data, as: UTF8.self)
                    if let messagePort = try? RemoteMessagePort(name: threadPortName) {
                        workers.ports.withLock { $0.append(messagePort) }
                    }
                }
                return nil
            }
            mainLoop.add(myPort.source, to: .default)
            // Create the thread and continue processing.
            let worker = PosixThread.start(name: "server") {
                // ServerThreadEntryPoint: the remote port to the main thread.
                guard let mainThreadPort = try? RemoteMessagePort(name: mainPortName) else { return }
                // A port for the worker thread.
                let myPortName = Self.uniqueName("Thread")
                let loop = RingRunLoop.current
                guard
                    let myPort = try? LocalMessagePort(
                        name: myPortName, loop: loop,
                        callback: { msgid, data in
                            // ProcessClientRequest
                            msgid == workMessage ? Array("done: ".utf8) + data : nil
                        })
                else { return }
                loop.add(myPort.source, to: .default)
                workerLoop.withLock { $0 = loop }
                // Package up the port name and send the check-in message.
                try? mainThreadPort.send(msgid: checkinMessage, data: Array(myPortName.utf8))
                // Enter the run loop.
                loop.run()
                myPort.invalidate()
            }
            // The main loop runs until the worker has checked in.
            let limit = MonotonicInstant.now + .seconds(10)
            while workers.ports.withLock({ $0.isEmpty }), MonotonicInstant.now < limit {
                mainLoop.run(mode: .default, for: .milliseconds(50), returnAfterSourceHandled: true)
            }
            let workerPort = try #require(workers.ports.withLock { $0.first })
            // The main thread talks to the worker through the port it checked in with.
            let reply = try workerPort.sendRequest(msgid: workMessage, data: Array("job 1".utf8), replyTimeout: .seconds(10))
            #expect(String(decoding: reply, as: UTF8.self) == "done: job 1")
            // The worker's port going away reaches the main thread's remote port.
            let wentAway = Atomic<Bool>(false)
            workerPort.setInvalidationCallback { _ in wentAway.store(true, ordering: .releasing) }
            workerLoop.withLock { $0?.stop() }
            worker.join()
            let invalidated = wentAway.load(ordering: .acquiring)
            #expect(invalidated)
            #expect(!workerPort.isValid)
            #expect(throws: MessagePortError.invalidated(workerPort.name)) {
                try workerPort.send(msgid: workMessage, data: [])
            }
            myPort.invalidate()
        }
    }

    @Test("Names are unique while a port lives, and free again once it is invalidated")
    func names() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("names")
            let loop = RingRunLoop.current
            let first = try LocalMessagePort(name: name, loop: loop) { _, _ in nil }
            #expect(throws: MessagePortError.nameInUse(name)) { try LocalMessagePort(name: name, loop: loop) { _, _ in nil } }
            #expect(throws: MessagePortError.notFound(name + ".other")) { try RemoteMessagePort(name: name + ".other") }
            #expect(throws: MessagePortError.invalidName("")) { try LocalMessagePort(name: "", loop: loop) { _, _ in nil } }
            first.invalidate()
            #expect(throws: MessagePortError.notFound(name)) { try RemoteMessagePort(name: name) }
            let second = try LocalMessagePort(name: name, loop: loop) { _, _ in nil }
            second.invalidate()
        }
    }

    @Test("A message over the port's limit is refused with its size and the limit")
    func sizeLimit() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("limit")
            let port = try LocalMessagePort(name: name, loop: RingRunLoop.current, maximumMessageSize: 16) { _, _ in nil }
            defer { port.invalidate() }
            let remote = try RemoteMessagePort(name: name)
            #expect(throws: MessagePortError.tooLarge(size: 17, limit: 16)) {
                try remote.send(msgid: 1, data: [UInt8](repeating: 0, count: 17))
            }
            try remote.send(msgid: 1, data: [UInt8](repeating: 0, count: 16))
        }
    }

    @Test("A reply later than the timeout fails the request; the late reply is dropped and the next request works")
    func replyTimeout() throws {
        let name = Self.uniqueName("slow")
        let worker = LoopThread(name: "slow")
        defer { worker.stopAndJoin() }
        let calls = Atomic<Int>(0)
        let port = try LocalMessagePort(name: name, loop: worker.loop) { msgid, _ in
            calls.add(1, ordering: .relaxed)
            if msgid == 1 { usleep(300_000) }  // slower than the first request's timeout
            return [UInt8(msgid)]
        }
        defer { port.invalidate() }
        worker.loop.add(port.source, to: .default)
        let remote = try RemoteMessagePort(name: name)
        let started = MonotonicInstant.now
        #expect(throws: MessagePortError.replyTimeout(name)) {
            try remote.sendRequest(msgid: 1, data: [], replyTimeout: .milliseconds(50))
        }
        #expect(MonotonicInstant.now - started < .milliseconds(290))
        #expect(try remote.sendRequest(msgid: 2, data: [], replyTimeout: .seconds(10)) == [2])
        #expect(calls.load(ordering: .relaxed) == 2)
    }

    @Test("Invalidating a port fails the requests still waiting for it")
    func invalidationFailsWaiting() throws {
        let name = Self.uniqueName("gone")
        let loop = ThreadLock<RingRunLoop?>(nil)
        let port = ThreadLock<LocalMessagePort?>(nil)
        // A port whose loop never runs: the request waits until the port is invalidated.
        let owner = PosixThread.start(name: "idle") {
            let current = RingRunLoop.current
            loop.withLock { $0 = current }
            port.withLock { $0 = try? LocalMessagePort(name: name, loop: current) { _, _ in [1] } }
        }
        owner.join()
        let remote = try RemoteMessagePort(name: name)
        let invalidator = PosixThread.start(name: "invalidator") {
            usleep(50_000)
            port.withLock { $0?.invalidate() }
        }
        #expect(throws: MessagePortError.invalidated(name)) {
            try remote.sendRequest(msgid: 1, data: [], replyTimeout: .seconds(10))
        }
        invalidator.join()
    }

    @Test("A request on the port's own loop thread is answered at once")
    func requestOnOwnThread() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("own")
            let port = try LocalMessagePort(name: name, loop: .current) { msgid, data in data + [UInt8(msgid)] }
            defer { port.invalidate() }
            let remote = try RemoteMessagePort(name: name)
            #expect(try remote.sendRequest(msgid: 7, data: [1], replyTimeout: .zero) == [1, 7])
        }
    }
}

/// Runs a throwing body on a fresh loop thread and rethrows its error here.
func onFreshLoopThreadThrowing(_ body: @escaping @Sendable () throws -> Void) throws {
    let failure = ThreadLock<(any Error)?>(nil)
    onFreshLoopThread {
        do { try body() } catch { failure.withLock { $0 = error } }
    }
    if let error = failure.withLock({ $0 }) { throw error }
}
