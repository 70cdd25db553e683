import Glibc

/// The process's local ports by key: name, or socket path (``MessagePortNamespace/key(of:)``).
final class PortRegistry: Sendable {
    static let shared = PortRegistry()
    private let ports = ThreadLock<[String: PortCore]>([:])

    func register(_ core: PortCore) throws(MessagePortError) {
        let added = ports.withLock { ports -> Bool in
            if let existing = ports[core.key], existing.isValid { return false }
            ports[core.key] = core
            return true
        }
        guard added else { throw .nameInUse(core.name) }
    }

    func unregister(_ core: PortCore) {
        ports.withLock { ports in
            if ports[core.key] === core { ports[core.key] = nil }
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
