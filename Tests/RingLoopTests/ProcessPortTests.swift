import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A message that ends the worker's run loop.
let stopMessage: Int32 = 102

/// Finds a port another process is about to create (bounded).
func remotePort(
    named name: String, trusting: PeerPolicy = .sameUserOrRoot, within timeout: Duration = .seconds(20)
) -> RemoteMessagePort? {
    let deadline = MonotonicInstant.now.advanced(by: timeout)
    while MonotonicInstant.now < deadline {
        if let port = try? RemoteMessagePort(name: name, trusting: trusting) { return port }
        var pause = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        nanosleep(&pause, nil)
    }
    return nil
}

/// What the main side of a cross-process test saw, for the test to check after the
/// worker process has ended.
final class MainSideRecord: Sendable {
    let replies = ThreadLock<[String]>([])
    let errors = ThreadLock<[MessagePortError]>([])
    let wentAway = Atomic<Bool>(false)
    let done = Atomic<Bool>(false)
}

@Suite("Named message ports between processes")
struct ProcessPortTests {
    /// The check-in example again, with the worker in a process of its own: the worker
    /// reaches the main port by name through its abstract socket, checks in with its own
    /// port's name, answers a request, and ends when told to; its end reaches the main
    /// side's remote port as an invalidation.
    @Test("The check-in example between a main process and a worker process")
    func checkInBetweenProcesses() async throws {
        let mainPortName = NamedPortTests.uniqueName("MainProcess")
        let record = MainSideRecord()
        let workers = CheckedInWorkers()
        let mainThread = LoopThread(name: "main-port")
        // The thread the callback starts (not kept in `record`, which that thread uses).
        let spawned = ThreadLock<PosixThread?>(nil)
        defer { mainThread.stopAndJoin() }
        // MySpawnThread: a local port for receiving responses, its source in the loop.
        let myPort = try LocalMessagePort(name: mainPortName, loop: mainThread.loop) { msgid, data in
            // MainThreadResponseHandler
            guard msgid == checkinMessage else { return nil }
            let threadPortName = String(decoding: data, as: UTF8.self)
            guard let messagePort = try? RemoteMessagePort(name: threadPortName) else { return nil }
            workers.ports.withLock { $0.append(messagePort) }
            // The main side talks to the worker through the port it checked in with.
            let thread = PosixThread.start(name: "main-side") {
                do throws(MessagePortError) {
                    let reply = try messagePort.sendRequest(
                        msgid: workMessage, data: Array("job 1".utf8), replyTimeout: .seconds(20))
                    record.replies.withLock { $0.append(String(decoding: reply, as: UTF8.self)) }
                    messagePort.setInvalidationCallback { _ in record.wentAway.store(true, ordering: .releasing) }
                    try messagePort.send(msgid: stopMessage, data: [])
                } catch {
                    record.errors.withLock { $0.append(error) }
                }
                record.done.store(true, ordering: .releasing)
            }
            spawned.withLock { $0 = thread }
            return nil
        }
        defer { myPort.invalidate() }
        mainThread.loop.add(myPort.source, to: .default)
        mainThread.loop.wakeUp()

        let output1 = ChildOutput(label: "ProcessPortTests-1")
        let result1 = await #expect(processExitsWith: .success) {
            [mainPortName = mainPortName as String, outputPath = output1.path as String] in
            ChildOutput.redirect(to: outputPath)
            // ServerThreadEntryPoint: the remote port to the main process.
            let mainThreadPort = try RemoteMessagePort(name: mainPortName)
            // A port for the worker.
            let myPortName = mainPortName + ".worker"
            let loop = RingRunLoop.current
            let myPort = try LocalMessagePort(name: myPortName, loop: loop) { msgid, data in
                // ProcessClientRequest
                if msgid == stopMessage { loop.stop() }
                return msgid == workMessage ? Array("done: ".utf8) + data : nil
            }
            loop.add(myPort.source, to: .default)
            // Package up the port name and send the check-in message.
            try mainThreadPort.send(msgid: checkinMessage, data: Array(myPortName.utf8))
            // Enter the run loop (bounded: a test never waits for ever).
            let result = loop.run(mode: .default, for: .seconds(30))
            myPort.invalidate()
            if result != .stopped { exit(2) }
        }
        output1.report(ifFailed: result1 == nil)
        #expect(waitUntil { record.done.load(ordering: .acquiring) })
        spawned.withLock { $0 }?.join()
        #expect(record.errors.withLock { $0 }.isEmpty)
        #expect(record.replies.withLock { $0 } == ["done: job 1"])
        let workerPort = try #require(workers.ports.withLock { $0.first })
        // The worker process's end reaches the remote port on the watcher thread.
        #expect(waitUntil { record.wentAway.load(ordering: .acquiring) })
        #expect(!workerPort.isValid)
        #expect(throws: MessagePortError.invalidated(workerPort.name)) {
            try workerPort.send(msgid: workMessage, data: [])
        }
    }

    @Test("A port process killed mid-request: the request fails as 'became invalid' and the invalidation callback runs")
    func peerKilledMidRequest() async throws {
        let name = NamedPortTests.uniqueName("Doomed")
        let record = MainSideRecord()
        let requester = PosixThread.start(name: "requester") {
            guard let port = remotePort(named: name) else {
                record.errors.withLock { $0.append(.notFound(name)) }
                return
            }
            // The name is taken by the other process.
            do throws(MessagePortError) {
                _ = try LocalMessagePort(name: name, loop: RingRunLoop.current) { _, _ in nil }
                record.replies.withLock { $0.append("created a second port of the same name") }
            } catch {
                record.errors.withLock { $0.append(error) }
            }
            port.setInvalidationCallback { _ in record.wentAway.store(true, ordering: .releasing) }
            do throws(MessagePortError) {
                _ = try port.sendRequest(msgid: 1, data: Array("hello".utf8), replyTimeout: .seconds(20))
                record.replies.withLock { $0.append("a reply from a killed process") }
            } catch {
                record.errors.withLock { $0.append(error) }
            }
        }
        let output2 = ChildOutput(label: "ProcessPortTests-2")
        let result2 = await #expect(processExitsWith: .signal(SIGKILL)) { [name = name as String, outputPath = output2.path as String] in
            ChildOutput.redirect(to: outputPath)
            let loop = RingRunLoop.current
            let port = try LocalMessagePort(name: name, loop: loop) { msgid, _ in
                // Killed while the request waits for its reply.
                kill(getpid(), SIGKILL)
                return nil
            }
            loop.add(port.source, to: .default)
            _ = loop.run(mode: .default, for: .seconds(30))
            exit(3)
        }
        output2.report(ifFailed: result2 == nil)
        requester.join()
        #expect(record.replies.withLock { $0 }.isEmpty)
        #expect(record.errors.withLock { $0 } == [.nameInUse(name), .becameInvalid(name)])
        #expect(waitUntil { record.wentAway.load(ordering: .acquiring) })
    }

    @Test("Between processes: the size limit comes from the port, a late reply is dropped, the next request works")
    func limitsAndLateReplies() async throws {
        let name = NamedPortTests.uniqueName("Slow")
        let record = MainSideRecord()
        let requester = PosixThread.start(name: "requester") {
            guard let port = remotePort(named: name) else {
                record.errors.withLock { $0.append(.notFound(name)) }
                return
            }
            do throws(MessagePortError) {
                // The first reply comes after the port's hello: its limit is known then.
                let reply = try port.sendRequest(msgid: 3, data: Array("fast".utf8), replyTimeout: .seconds(20))
                record.replies.withLock { $0.append(String(decoding: reply, as: UTF8.self)) }
                try port.send(msgid: 1, data: [UInt8](repeating: 1, count: 65))
            } catch {
                record.errors.withLock { $0.append(error) }
            }
            do throws(MessagePortError) {
                _ = try port.sendRequest(msgid: 2, data: Array("slow".utf8), replyTimeout: .milliseconds(50))
            } catch {
                record.errors.withLock { $0.append(error) }
            }
            do throws(MessagePortError) {
                let reply = try port.sendRequest(msgid: 3, data: Array("fast".utf8), replyTimeout: .seconds(20))
                record.replies.withLock { $0.append(String(decoding: reply, as: UTF8.self)) }
                try port.send(msgid: stopMessage, data: [])
            } catch {
                record.errors.withLock { $0.append(error) }
            }
        }
        let output3 = ChildOutput(label: "ProcessPortTests-3")
        let result3 = await #expect(processExitsWith: .success) { [name = name as String, outputPath = output3.path as String] in
            ChildOutput.redirect(to: outputPath)
            let loop = RingRunLoop.current
            let port = try LocalMessagePort(name: name, loop: loop, maximumMessageSize: 64) { msgid, data in
                switch msgid {
                case 2:
                    // Far past the request's 50 ms: a client descheduled that long under
                    // a sanitizer must still see its timeout before this reply.
                    var pause = timespec(tv_sec: 2, tv_nsec: 0)
                    nanosleep(&pause, nil)
                    return Array("late: ".utf8) + data
                case 3: return Array("on time: ".utf8) + data
                case stopMessage: loop.stop()
                default: break
                }
                return nil
            }
            loop.add(port.source, to: .default)
            let result = loop.run(mode: .default, for: .seconds(30))
            port.invalidate()
            if result != .stopped { exit(2) }
        }
        output3.report(ifFailed: result3 == nil)
        requester.join()
        #expect(record.errors.withLock { $0 } == [.tooLarge(size: 65, limit: 64), .replyTimeout(name)])
        #expect(record.replies.withLock { $0 } == ["on time: fast", "on time: fast"])
    }
}
