import Glibc
import RingLoopTestSupport
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
            let limit = MonotonicInstant.now + TestWait.bound
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
        let calls = Atomic<Int>(0)
        let released = Atomic<Bool>(false)
        let served = try PortOnItsOwnThread(name: name, threadName: "slow") { msgid, _ in
            calls.add(1, ordering: .relaxed)
            // The first reply waits until its request has failed: the timeout fires while
            // the reply is still owed, however slow the machine.
            if msgid == 1 { _ = waitUntil { released.load(ordering: .acquiring) } }
            return [UInt8(msgid)]
        }
        defer { served.close() }
        let remote = try RemoteMessagePort(name: name)
        #expect(throws: MessagePortError.replyTimeout(name)) {
            try remote.sendRequest(msgid: 1, data: [], replyTimeout: .milliseconds(50))
        }
        released.store(true, ordering: .releasing)
        #expect(try remote.sendRequest(msgid: 2, data: [], replyTimeout: .seconds(10)) == [2])
        #expect(calls.load(ordering: .relaxed) == 2)
    }

    // CFMessagePort.h: kCFMessagePortIsInvalid, kCFMessagePortBecameInvalidError — a port
    // invalid before the send, and one that became invalid while the request waited.
    @Test("A request waiting when the port is invalidated fails as 'became invalid'; one sent after, as 'invalid'")
    func invalidationFailsWaiting() throws {
        let name = Self.uniqueName("gone")
        let port = ThreadLock<LocalMessagePort?>(nil)
        // A port whose loop never runs: the request waits in its mailbox.
        let owner = PosixThread.start(name: "idle") {
            port.withLock { $0 = try? LocalMessagePort(name: name, loop: RingRunLoop.current) { _, _ in [1] } }
        }
        owner.join()
        let local = try #require(port.withLock { $0 })
        let remote = try RemoteMessagePort(name: name)
        let outcome = ThreadLock<MessagePortError?>(nil)
        let requester = PosixThread.start(name: "requester") {
            do throws(MessagePortError) {
                _ = try remote.sendRequest(msgid: 1, data: [], replyTimeout: .seconds(20))
            } catch {
                outcome.withLock { $0 = error }
            }
        }
        // Invalidated only once the request is in the port's mailbox, waiting.
        #expect(waitUntil { local.core.queuedCount == 1 })
        local.invalidate()
        requester.join()
        #expect(outcome.withLock { $0 } == .becameInvalid(name))
        #expect(throws: MessagePortError.invalidated(name)) {
            try remote.sendRequest(msgid: 1, data: [], replyTimeout: .seconds(1))
        }
    }

    // CFMessagePortSendRequest, on replyMode: the run loop mode in which the request waits
    // for its reply — the port's source answers only when it is in that mode.
    @Test("A request to a port on the caller's own loop is answered when the port's source is in the reply mode")
    func requestOnOwnThread() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("own")
            let loop = RingRunLoop.current
            let port = try LocalMessagePort(name: name, loop: loop) { msgid, data in data + [UInt8(msgid)] }
            defer { port.invalidate() }
            let remote = try RemoteMessagePort(name: name)
            // In no mode: nothing can answer.
            #expect(throws: MessagePortError.replyTimeout(name)) {
                try remote.sendRequest(msgid: 1, data: [], replyTimeout: .milliseconds(50), replyMode: .default)
            }
            loop.add(port.source, to: "other")
            #expect(throws: MessagePortError.replyTimeout(name)) {
                try remote.sendRequest(msgid: 2, data: [], replyTimeout: .milliseconds(50), replyMode: .default)
            }
            // Without a reply mode the thread blocks, and its loop cannot answer.
            #expect(throws: MessagePortError.replyTimeout(name)) {
                try remote.sendRequest(msgid: 3, data: [], replyTimeout: .milliseconds(50))
            }
            // The requests that timed out were still delivered when the port's mode ran
            // (their late replies dropped); this one is answered in its reply mode.
            loop.add(port.source, to: .default)
            #expect(try remote.sendRequest(msgid: 7, data: [1], replyTimeout: .seconds(10), replyMode: .default) == [1, 7])
        }
    }

    // CFMessagePortSendRequest runs the caller's run loop in replyMode while it waits.
    @Test("While a request waits, the caller's loop runs in the reply mode: its timers fire, other modes' do not")
    func replyModeRunsTheCallersLoop() throws {
        let name = Self.uniqueName("replymode")
        let fired = ThreadLock<[String]>([])
        // The reply waits until the caller's reply-mode timer has fired (5 s at most, then
        // the list below says it never did): a fixed pause let a caller descheduled for
        // that long find the reply before the timer.
        let served = try PortOnItsOwnThread(name: name, threadName: "slow-port") { _, data in
            _ = waitUntil(timeout: .seconds(5)) { fired.withLock { !$0.isEmpty } }
            return data
        }
        defer { served.close() }
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            loop.add(LoopTimer(after: .milliseconds(20)) { _ in fired.withLock { $0.append("reply mode") } }, to: "waiting")
            loop.add(LoopTimer(after: .milliseconds(20)) { _ in fired.withLock { $0.append("default") } }, to: .default)
            let remote = try RemoteMessagePort(name: name)
            let reply = try remote.sendRequest(msgid: 1, data: [4], replyTimeout: .seconds(10), replyMode: "waiting")
            #expect(reply == [4])
            #expect(fired.withLock { $0 } == ["reply mode"])
        }
    }

    // CFMessagePortCallBack: "Return NULL if you want an empty reply returned to the sender."
    @Test("A callback returning nil to a request is an empty reply")
    func nilIsAnEmptyReply() throws {
        let name = Self.uniqueName("empty")
        let served = try PortOnItsOwnThread(name: name, threadName: "empty-port") { _, _ in nil }
        defer { served.close() }
        #expect(try RemoteMessagePort(name: name).sendRequest(msgid: 1, data: [1], replyTimeout: .seconds(10)) == [])
    }

    // CFMessagePortSetInvalidationCallBack: a local port has one too; "If the message port
    // is already invalid, callout is called immediately."
    @Test("A local port's invalidation callback runs once, on the invalidating thread, or at once when already invalid")
    func localInvalidationCallback() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("local-gone")
            let port = try LocalMessagePort(name: name, loop: .current) { _, _ in nil }
            let calls = ThreadLock<[String]>([])
            port.setInvalidationCallback { gone in calls.withLock { $0.append(gone.name) } }
            let invalidator = PosixThread.start(name: "invalidator") { port.invalidate() }
            invalidator.join()
            port.invalidate()
            #expect(calls.withLock { $0 } == [name])
            port.setInvalidationCallback { _ in calls.withLock { $0.append("late") } }
            #expect(calls.withLock { $0 } == [name, "late"])
        }
    }

    @Test("A full mailbox holds senders back until their send timeout, then fails them; it takes more once drained")
    func mailboxBound() throws {
        try onFreshLoopThreadThrowing {
            let name = Self.uniqueName("full")
            var limits = LocalMessagePort.Limits()
            limits.maximumQueuedMessages = 4
            let received = ThreadLock<[Int32]>([])
            let loop = RingRunLoop.current
            let port = try LocalMessagePort(name: name, loop: loop, limits: limits) { msgid, _ in
                received.withLock { $0.append(msgid) }
                return nil
            }
            defer { port.invalidate() }
            let remote = try RemoteMessagePort(name: name)
            for msgid in Int32(1)...4 { try remote.send(msgid: msgid, data: [], timeout: .zero) }
            let started = MonotonicInstant.now
            #expect(throws: MessagePortError.sendTimeout(name)) { try remote.send(msgid: 5, data: [], timeout: .milliseconds(50)) }
            #expect(MonotonicInstant.now - started >= .milliseconds(50))
            loop.add(port.source, to: .default)
            loop.run(mode: .default, for: .zero)
            #expect(received.withLock { $0 } == [1, 2, 3, 4])
            try remote.send(msgid: 6, data: [], timeout: .zero)
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

/// A port named `name` of this process answering with `callback` on a loop thread of its own
/// (named `threadName`): the server a test's requests go to. ``close()`` invalidates the port,
/// then stops and joins the thread.
final class PortOnItsOwnThread: Sendable {
    let worker: LoopThread
    let port: LocalMessagePort

    init(name: String, threadName: String, callback: @escaping LocalMessagePort.Callback) throws {
        worker = LoopThread(name: threadName)
        do {
            port = try LocalMessagePort(name: name, loop: worker.loop, callback: callback)
        } catch {
            worker.stopAndJoin()
            throw error
        }
        worker.loop.add(port.source, to: .default)
    }

    func close() {
        port.invalidate()
        worker.stopAndJoin()
    }
}
