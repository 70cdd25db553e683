import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// What the test process saw while a ``PortHost`` child served, checked once the child
/// has ended.
final class PortHostRecord: Sendable {
    let notes = ThreadLock<[String]>([])
    let errors = ThreadLock<[MessagePortError]>([])
    let values = ThreadLock<[String: Int]>([:])

    func note(_ text: String) { notes.withLock { $0.append(text) } }
    func fail(_ error: MessagePortError) { errors.withLock { $0.append(error) } }
    func set(_ key: String, _ value: Int?) { values.withLock { $0[key] = value ?? -1 } }
    func value(_ key: String) -> Int { values.withLock { $0[key] ?? -1 } }
}

/// Runs `body` on a thread of this process while a child process hosts `scenario` under
/// `name`; `body` ends the child (``stopPortHost(_:)``) when it is done, or the child ends
/// itself after a minute. Returns after both.
func withPortHost(
    _ scenario: PortHost.Scenario, name: String, expecting status: ExitTest.Condition = .success,
    _ body: @escaping @Sendable () -> Void
) async {
    let driver = PosixThread.start(name: "port-test") {
        body()
        stopPortHost(name)
    }
    let childOutput = ChildOutput(label: name)
    let result = await #expect(processExitsWith: status) { [scenario, name = name as String, outputPath = childOutput.path as String] in
        ChildOutput.redirect(to: outputPath)
        // _exit, not exit: no at-exit handlers, so LeakSanitizer's check at exit does not
        // turn the host's status into 1 for what Foundation and the test library still
        // hold (under AddressSanitizer).
        let status = PortHost.run(scenario, name: name)
        fflush(nil)
        _exit(status)
    }
    childOutput.report(ifFailed: result == nil)
    driver.join()
}

@Suite("Named ports between processes, to the letter of CFMessagePort")
struct ProcessPortSemanticsTests {
    // CFMessagePortCreateRunLoopSource: messages are delivered in the modes the source is
    // in — from other processes too, custom modes included.
    @Test("A port whose source is only in a custom mode hears from another process when that mode runs")
    func customMode() async throws {
        let name = NamedPortTests.uniqueName("Custom")
        let record = PortHostRecord()
        await withPortHost(.customMode, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            do throws(MessagePortError) {
                let reply = try port.sendRequest(msgid: PortHost.echo, data: [1, 2, 3], replyTimeout: .seconds(20))
                record.note("reply \(reply)")
            } catch {
                record.fail(error)
            }
        }
        #expect(record.errors.withLock { $0 }.isEmpty)
        #expect(record.notes.withLock { $0 } == ["reply [1, 2, 3]"])
    }

    @Test("A port whose source is in a mode that runs only nested hears from another process in the nested run")
    func nestedRun() async throws {
        let name = NamedPortTests.uniqueName("Nested")
        let record = PortHostRecord()
        await withPortHost(.nestedRun, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            do throws(MessagePortError) {
                for round in UInt8(0)..<3 {
                    record.note("reply \(try port.sendRequest(msgid: PortHost.echo, data: [round], replyTimeout: .seconds(20)))")
                }
            } catch {
                record.fail(error)
            }
        }
        #expect(record.errors.withLock { $0 }.isEmpty)
        #expect(record.notes.withLock { $0 } == ["reply [0]", "reply [1]", "reply [2]"])
    }

    // A Mach message is queued by the kernel: a busy receiver delays delivery, not the send.
    @Test("Sending to a port whose loop is busy takes no help from it: a 0.1 s send timeout suffices")
    func busyReceiver() async throws {
        let name = NamedPortTests.uniqueName("Busy")
        let record = PortHostRecord()
        await withPortHost(.busyStart, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            let started = MonotonicInstant.now
            do throws(MessagePortError) {
                for msgid in Int32(10)..<20 { try port.send(msgid: msgid, data: [UInt8(msgid)], timeout: .milliseconds(100)) }
                record.set("send µs", Int((MonotonicInstant.now - started).nanosecondsClamped / 1000))
                // The loop, once it runs, serves them all: this request waits behind them.
                record.note("reply \(try port.sendRequest(msgid: PortHost.echo, data: [7], replyTimeout: .seconds(20)))")
            } catch {
                record.fail(error)
            }
        }
        #expect(record.errors.withLock { $0 }.isEmpty)
        #expect(record.notes.withLock { $0 } == ["reply [7]"])
        #expect(record.value("send µs") < 1_000_000, "the sends waited for the busy receiver")
    }

    // CFRunLoopRunInMode's kCFRunLoopRunHandledSource: "a source was processed" — the
    // transport's own completions are not one of the port's messages.
    @Test("run(returnAfterSourceHandled:) returns handledSource only after a port callback ran")
    func noSpuriousHandledSource() async throws {
        let name = NamedPortTests.uniqueName("Handled")
        let record = PortHostRecord()
        await withPortHost(.handledSource, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            do throws(MessagePortError) {
                for round in 0..<5 {
                    try port.send(msgid: 3, data: [UInt8(round)])
                    _ = try port.sendRequest(msgid: PortHost.echo, data: [1], replyTimeout: .seconds(20))
                }
                // New connections: each is an accept and a hello before any message.
                for _ in 0..<3 {
                    let other = try RemoteMessagePort(name: name)
                    _ = try other.sendRequest(msgid: PortHost.echo, data: [2], replyTimeout: .seconds(20))
                }
            } catch {
                record.fail(error)
            }
        }
        #expect(record.errors.withLock { $0 }.isEmpty)
    }

    // CFMessagePortSendRequest runs the caller's run loop in replyMode while it waits.
    @Test("A request to another process in a reply mode runs the caller's loop in that mode while it waits")
    func replyModeBetweenProcesses() async throws {
        let name = NamedPortTests.uniqueName("ReplyMode")
        let record = PortHostRecord()
        await withPortHost(.busyStart, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            onFreshLoopThread {
                let loop = RingRunLoop.current
                let fired = ThreadLock<[String]>([])
                let tick = LoopTimer(after: .milliseconds(10), repeating: .milliseconds(10)) { _ in
                    fired.withLock { $0.append("waiting") }
                }
                loop.add(tick, to: "waiting")
                loop.add(LoopTimer(after: .milliseconds(10)) { _ in fired.withLock { $0.append("default") } }, to: .default)
                do throws(MessagePortError) {
                    // The port's loop is busy for its first second: the reply waits for it.
                    let reply = try port.sendRequest(
                        msgid: PortHost.echo, data: [9], replyTimeout: .seconds(20), replyMode: "waiting")
                    record.note("reply \(reply)")
                } catch {
                    record.fail(error)
                }
                tick.invalidate()
                let seen = fired.withLock { $0 }
                record.set("waiting", seen.filter { $0 == "waiting" }.count)
                record.set("default", seen.filter { $0 == "default" }.count)
            }
        }
        #expect(record.errors.withLock { $0 }.isEmpty)
        #expect(record.notes.withLock { $0 } == ["reply [9]"])
        #expect(record.value("waiting") > 0)
        #expect(record.value("default") == 0)
    }

    @Test("Replies and messages larger than 64 KiB cross processes whole")
    func largeReplies() async throws {
        let name = NamedPortTests.uniqueName("Big")
        let record = PortHostRecord()
        await withPortHost(.bigReply, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            do throws(MessagePortError) {
                let reply = try port.sendRequest(msgid: 1, data: [UInt8](repeating: 1, count: 16_384), replyTimeout: .seconds(20))
                record.set("reply", reply.count)
                record.set("intact", reply.allSatisfy { $0 == 0xA5 } ? 1 : 0)
                // A message of 1.5 MiB to the port's 2 MiB limit, and its answer.
                let big = try port.sendRequest(msgid: 1, data: [UInt8](repeating: 2, count: 1_536 * 1024), replyTimeout: .seconds(20))
                record.set("big", big.count)
                let small = try RemoteMessagePort(name: name, maximumReplySize: 1000)
                _ = try small.sendRequest(msgid: 1, data: [UInt8](repeating: 1, count: 100), replyTimeout: .seconds(20))
            } catch {
                record.fail(error)
            }
        }
        #expect(record.value("reply") == PortHost.bigReplySize)
        #expect(record.value("intact") == 1)
        #expect(record.value("big") == PortHost.bigReplySize)
        // A client's own limit on replies holds: 6,400 bytes against its 1,000.
        #expect(record.errors.withLock { $0 } == [.tooLarge(size: 6_400, limit: 1000)])
    }

    @Test("Between processes, a callback's nil is an empty reply, and a too-large request fails with the port's limit")
    func emptyReplyAndLimits() async throws {
        let name = NamedPortTests.uniqueName("Empty")
        let record = PortHostRecord()
        await withPortHost(.echo, name: name) {
            guard let port = remotePort(named: name) else { return record.fail(.notFound(name)) }
            do throws(MessagePortError) {
                record.set("empty", try port.sendRequest(msgid: 77, data: [1], replyTimeout: .seconds(20)).count)
            } catch {
                record.fail(error)
            }
            do throws(MessagePortError) {
                _ = try port.sendRequest(
                    msgid: 1, data: [UInt8](repeating: 0, count: LocalMessagePort.defaultMaximumMessageSize + 1),
                    replyTimeout: .seconds(20))
            } catch {
                record.fail(error)
            }
        }
        #expect(record.value("empty") == 0)
        #expect(
            record.errors.withLock { $0 } == [
                .tooLarge(size: LocalMessagePort.defaultMaximumMessageSize + 1, limit: LocalMessagePort.defaultMaximumMessageSize)
            ])
    }
}
