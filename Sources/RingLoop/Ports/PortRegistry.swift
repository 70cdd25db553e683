import Dispatch
import Glibc

/// The process's local ports by name.
final class PortRegistry: Sendable {
    static let shared = PortRegistry()
    private let ports = ThreadLock<[String: PortCore]>([:])

    func register(_ core: PortCore) throws(MessagePortError) {
        let added = ports.withLock { ports -> Bool in
            if let existing = ports[core.name], existing.isValid { return false }
            ports[core.name] = core
            return true
        }
        guard added else { throw .nameInUse(core.name) }
    }

    func unregister(_ core: PortCore) {
        ports.withLock { ports in
            if ports[core.name] === core { ports[core.name] = nil }
        }
    }

    /// Names of invalidated ports whose socket the port's loop has not closed yet.
    private let releasing = ThreadLock<Set<String>>([])

    func releasing(_ name: String) { releasing.withLock { _ = $0.insert(name) } }
    func released(_ name: String) { releasing.withLock { _ = $0.remove(name) } }

    /// Waits (at most `timeout`) while an invalidated port of this process still holds
    /// `name`'s socket; returns whether the name is free of it.
    func waitForRelease(of name: String, timeout: Duration) -> Bool {
        let deadline = MonotonicInstant.now.advanced(by: timeout)
        while releasing.withLock({ $0.contains(name) }) {
            guard MonotonicInstant.now < deadline else { return false }
            var pause = timespec(tv_sec: 0, tv_nsec: 200_000)
            nanosleep(&pause, nil)
        }
        return true
    }

    func lookUp(_ name: String) -> PortCore? {
        ports.withLock { ports in ports[name].flatMap { $0.isValid ? $0 : nil } }
    }
}

/// Where a request's reply is handed over, once: to the waiting sender, or dropped when it
/// gave up.
final class ReplySlot: Sendable {
    private enum State {
        case waiting
        case replied([UInt8]?)
        case failed(MessagePortError)
        case abandoned
    }
    private let state = ThreadLock(State.waiting)
    private let arrived = DispatchSemaphore(value: 0)

    /// Hands over the callback's reply; dropped if the sender gave up.
    func fulfil(_ reply: [UInt8]?) { settle(.replied(reply)) }

    /// Fails the request (the port went away).
    func fail(_ error: MessagePortError) { settle(.failed(error)) }

    private func settle(_ outcome: State) {
        let delivered = state.withLock { state -> Bool in
            guard case .waiting = state else { return false }
            state = outcome
            return true
        }
        if delivered { arrived.signal() }
    }

    func wait(timeout: Duration, name: String) throws(MessagePortError) -> [UInt8] {
        let nanoseconds = max(0, timeout.nanosecondsClamped)
        let result = arrived.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds)))
        let outcome = state.withLock { state -> State in
            if result == .timedOut, case .waiting = state { state = .abandoned }
            return state
        }
        switch outcome {
        case .replied(let reply?): return reply
        case .replied(nil): throw .noReply(name)
        case .failed(let error): throw error
        case .waiting, .abandoned: throw .replyTimeout(name)
        }
    }
}
