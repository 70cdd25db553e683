import CDispatchHooks
import CLibURing
import DequeModule
import Glibc
import Logging

// Port sources on the ring: registering readiness and message ports, and their removal.
extension RingRunLoop {
    // MARK: Ports

    func register(_ source: LoopPortSource) -> Bool {
        switch source.port {
        case .readiness(let fd, let events):
            guard let core = waitCore() else { return false }
            do {
                let id = try core.addReadinessPort(fd: fd.rawValue, events: events.rawValue)
                source.readinessPort = id
                readinessSources[id] = source
            } catch {
                // The source stays in the mode and learns it at its next perform, as for a
                // descriptor that fails later: `POLLNVAL`, with the error in `failure`.
                Self.logger.error("cannot watch descriptor \(fd.rawValue): \(error)")
                source.armingFailure = error
                if source.pendingReadiness == 0 { pendingPortEvents.append(.readiness(source)) }
                source.pendingReadiness |= Int16(POLLNVAL)
            }
        case .doorbell(let port):
            guard port.inbox === inbox else {
                Self.logger.error("message port belongs to another loop")
                return false
            }
            guard doorbellSources[port] == nil else {
                Self.logger.error("message port already has a source in this loop")
                return false
            }
            doorbellSources[port] = source
            if let waiting = orphanDoorbellMessages.removeValue(forKey: port) {
                for message in waiting { pendingPortEvents.append(.message(source, message)) }
            }
        case .operations:
            break
        }
        return true
    }

    /// Notes that a callout ran a user's callback (loop thread): the pass handled a
    /// source, for `returnAfterSourceHandled`, even when the port source performing the
    /// callout does not count by itself.
    func noteSourceHandled() { calloutHandledSource = true }

    /// Whether `source` is valid and in the mode the loop runs now (loop thread).
    func isInRunningMode(_ source: LoopPortSource) -> Bool {
        guard source.isValid, let state = modes.current else { return false }
        return source.membership.modeMask & state.bit != 0
    }

    func unregister(_ source: LoopPortSource) {
        switch source.port {
        case .readiness:
            if let id = source.readinessPort {
                readinessSources[id] = nil
                source.readinessPort = nil
                source.pendingReadiness = 0
                do { try core?.removePort(id) } catch {
                    Self.logger.error("cannot stop watching \(id): \(error)")
                }
            }
        case .doorbell(let port):
            if doorbellSources[port] === source { doorbellSources[port] = nil }
            // Messages not yet performed go back to the port's queue, as in a Mach port.
            var remaining: Deque<PendingPortEvent> = []
            while let event = pendingPortEvents.popFirst() {
                if case .message(let owner, let message) = event, owner === source {
                    orphanDoorbellMessages[port, default: []].append(message)
                } else {
                    remaining.append(event)
                }
            }
            pendingPortEvents = remaining
        case .operations:
            // Invalidated (not only removed from its modes): the channel's operations end.
            if !source.isValid { io.busyChannels[ObjectIdentifier(source)]?.cancelAll() }
        }
    }
}
