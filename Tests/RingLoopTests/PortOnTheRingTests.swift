import Glibc
import RingLoopTestSupport
import Synchronization
import Testing

@testable import RingLoop

/// A listening socket at a port's name that never accepts, its backlog filled: a port
/// whose process is stopped, as a client sees it.
final class FullBacklog {
    let address: SocketAddress
    let listener: Int32
    let waiting: [Int32]

    init(portName: String) throws {
        address = try MessagePortNamespace.abstract.address(of: portName)
        listener = try address.makeListeningSocket(type: .sequencedPacket, backlog: 0).rawValue
        var waiting: [Int32] = []
        while waiting.count < 64 {
            let socket = Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard address.withSockaddr({ connect(socket, $0, $1) }) == 0 else {
                close(socket)
                break
            }
            waiting.append(socket)
        }
        self.waiting = waiting
    }

    var isFull: Bool { waiting.count < 64 }

    /// Takes one waiting connection in (and closes it): room for one more.
    func acceptOne() -> Bool {
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0 else { return false }
        close(accepted)
        return true
    }

    deinit {
        for socket in waiting { close(socket) }
        close(listener)
    }
}

/// Named ports to other processes on the caller's ring (issue 47): what waits, waits in the
/// calling thread's loop, never in `poll` or a sleep on its thread.
@Suite("Named ports on the caller's ring")
struct PortOnTheRingTests {
    @Test(
        "A connect to a port whose backlog is full waits in the ring until its timeout; a timer of the caller's default mode does not run meanwhile"
    )
    func connectTimesOutInTheRing() throws {
        let name = NamedPortTests.uniqueName("full")
        let backlog = try FullBacklog(portName: name)
        #expect(backlog.isFull, "the backlog never filled")
        try onFreshLoopThreadThrowing {
            let loop = RingRunLoop.current
            let fired = Atomic<Int>(0)
            loop.add(LoopTimer(after: .zero) { _ in fired.add(1, ordering: .relaxed) }, to: .default)
            let started = MonotonicInstant.now
            #expect(throws: MessagePortError.sendTimeout(name)) {
                try RemoteMessagePort(name: name, connectTimeout: .milliseconds(100))
            }
            #expect(MonotonicInstant.now - started >= .milliseconds(100))
            #expect(fired.load(ordering: .relaxed) == 0, "the wait ran the caller's default mode")
            // One try only with `.zero`.
            #expect(throws: MessagePortError.sendTimeout(name)) { try RemoteMessagePort(name: name, connectTimeout: .zero) }
        }
    }

    @Test("A connect waiting in the ring for a full backlog goes through once the port takes a connection in")
    func connectWaitsForRoom() throws {
        let name = NamedPortTests.uniqueName("room")
        let backlog = try FullBacklog(portName: name)
        #expect(backlog.isFull, "the backlog never filled")
        let connected = ThreadLock<Result<PeerCredentials, MessagePortError>?>(nil)
        let connectorLoop = ThreadLock<RingRunLoop?>(nil)
        let connector = PosixThread.start(name: "connector") {
            connectorLoop.withLock { $0 = RingRunLoop.current }
            do throws(MessagePortError) {
                let remote = try RemoteMessagePort(name: name, connectTimeout: .seconds(20))
                connected.withLock { $0 = .success(remote.owner) }
            } catch {
                connected.withLock { $0 = .failure(error) }
            }
        }
        // Once the connector's loop waits (in the ring's connect), room for one.
        #expect(waitUntil { connectorLoop.withLock { $0 }?.isWaiting == true })
        #expect(connected.withLock { $0 } == nil)
        #expect(backlog.acceptOne())
        connector.join()
        let outcome = try #require(connected.withLock { $0 })
        #expect(try outcome.get().pid == getpid())
    }
}
