import Dispatch
import Glibc
import RingLoop
import RingLoopHID

/// An event server that speaks the protocol by hand, for tests of what a client does with
/// what a server sends (a server of the client's own user is trusted to be there, but what
/// it sends is still another process's word): it welcomes every hello, then sends the
/// client's port exactly what the test gives it, right or wrong.
public final class FakeEventServer: Sendable {
    public let name: String
    private let thread = LoopThread(name: "fake-event-server")
    private let port = ThreadLock<LocalMessagePort?>(nil)
    private let helloPort = ThreadLock<String?>(nil)
    private let client = ThreadLock<RemoteMessagePort?>(nil)

    /// Takes the port `name` (on a loop thread of its own).
    public init(name: String) throws {
        self.name = name
        let made = ThreadLock<Result<LocalMessagePort, MessagePortError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let helloPort = helloPort
        thread.perform {
            do throws(MessagePortError) {
                let port = try LocalMessagePort(name: name, loop: .current) { message in
                    guard message.msgid == ServerWire.MessageID.hello.rawValue,
                        let hello = try? ServerWire.Hello(decoding: message.data)
                    else { return nil }
                    helloPort.withLock { $0 = hello.port }
                    return ServerWire.Welcome(focused: true, window: 256).encoded
                }
                RingRunLoop.current.add(port.source, to: .common)
                made.withLock { $0 = .success(port) }
            } catch {
                made.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        thread.loop.wakeUp()
        done.wait()
        let port = try made.withLock { $0! }.get()
        self.port.withLock { $0 = port }
    }

    /// Waits (bounded) for a client's hello, then connects to the port it named, where
    /// messages go from then on. Returns whether a hello came; throws what connecting to
    /// the client's port threw.
    public func waitForClient() throws -> Bool {
        guard waitUntil(timeout: .seconds(30), { helloPort.withLock { $0 != nil } }),
            let name = helloPort.withLock({ $0 })
        else { return false }
        let remote = try RemoteMessagePort(name: name)
        client.withLock { $0 = remote }
        return true
    }

    /// Sends the client a device's description.
    public func describe(_ device: HIDDeviceInfo) throws {
        try send(.device, ServerWire.encode(device))
    }

    /// Sends the client one batch of `events` (sequence numbers count up from 1).
    public func send(_ events: [HIDEvent]) throws {
        let sequence = sequenceNumber.withLock { number in
            number += 1
            return number
        }
        try send(.batch, ServerWire.Batch(sequence: sequence, events: events).encoded)
    }
    private let sequenceNumber = ThreadLock<UInt64>(0)

    private func send(_ message: ServerWire.MessageID, _ data: [UInt8]) throws {
        guard let client = client.withLock({ $0 }) else { throw MessagePortError.notFound("(no client yet)") }
        try client.send(msgid: message.rawValue, data: data)
    }

    /// Lets the port go (clients see the server go) and ends the thread.
    public func stop() {
        client.withLock { $0 = nil }
        let port = port.withLock { port in
            defer { port = nil }
            return port
        }
        guard let port else { return }
        let done = DispatchSemaphore(value: 0)
        thread.perform {
            port.invalidate()
            done.signal()
        }
        thread.loop.wakeUp()
        done.wait()
        thread.stopAndJoin()
    }
}
