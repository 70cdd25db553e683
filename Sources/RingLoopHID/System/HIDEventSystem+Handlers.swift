import Dispatch
import Logging
import RingLoop
import RingLoopEvdev
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

// Handlers: registration, filters and dispatch in registration order; the async sequence.
extension HIDEventSystem {
    // MARK: Handlers

    /// Registers a handler for events matching every given filter (`nil`: any). A
    /// device matches `deviceClasses` when its class or any of its other roles is in the
    /// set (``HIDDeviceInfo/roles``). Handlers run in registration order on the client loop; one that returns
    /// ``HIDHandlerResult/consumed`` stops the event. Handlers may be added or removed
    /// from inside a handler (the change applies from the next event).
    @discardableResult
    public func addHandler(
        kinds: Set<HIDEvent.Kind>? = nil, deviceClasses: Set<HIDDeviceClass>? = nil, device: HIDDeviceID? = nil,
        usage: HIDUsage? = nil, _ body: @escaping (HIDEvent) -> HIDHandlerResult
    ) -> HIDHandlerToken {
        loop.preconditionOnLoopThread("HIDEventSystem.addHandler")
        let token = HIDHandlerToken(rawValue: nextToken)
        nextToken += 1
        handlers.append((token, Filter(kinds: kinds, classes: deviceClasses, device: device, usage: usage), body, true))
        return token
    }

    /// Removes a handler; it is not called again, even for the event being dispatched.
    public func removeHandler(_ token: HIDHandlerToken) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeHandler")
        for index in handlers.indices where handlers[index].token == token { handlers[index].active = false }
        if !dispatching { handlers.removeAll { !$0.active } }
    }

    // MARK: Async

    /// The events matching the filters, as an `AsyncSequence` for async code. Events
    /// arrive as the loop dispatches them; at most `buffer` wait for a slow consumer
    /// (the oldest are dropped). Ending the iteration removes the handler.
    public func events(
        kinds: Set<HIDEvent.Kind>? = nil, deviceClasses: Set<HIDDeviceClass>? = nil, buffer: Int = 1024
    ) -> AsyncStream<HIDEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: HIDEvent.self, bufferingPolicy: .bufferingNewest(buffer))
        let ended = StreamEnd()
        continuation.onTermination = { _ in ended.flag.store(true, ordering: .releasing) }
        streamFinishers.append { continuation.finish() }
        var token: HIDHandlerToken?
        token = addHandler(kinds: kinds, deviceClasses: deviceClasses) { [unowned self] event in
            if ended.flag.load(ordering: .acquiring) {
                if let token { self.removeHandler(token) }
                return .pass
            }
            continuation.yield(event)
            return .pass
        }
        return stream
    }

    private final class StreamEnd: Sendable {
        let flag = Atomic<Bool>(false)
    }

    func dispatch(_ event: HIDEvent) {
        guard let gestures else { return dispatchToHandlers(event) }
        if let kept = gestureTap(event, gestures) { dispatchToHandlers(kept) }
    }

    /// Hands an event to the handlers that match it, in registration order.
    func dispatchToHandlers(_ event: HIDEvent) {
        statistics.delivered += 1
        delivered.apply(event)
        let lag = MonotonicInstant.now - event.timestamp
        if lag > configuration.lateThreshold, event.kind != .eventsDropped {
            statistics.late += 1
            let now = MonotonicInstant.now
            if now - lastLateLog > .seconds(1) {
                lastLateLog = now
                Self.logger.warning("HID event dispatched \(lag) after the kernel stamped it (\(statistics.late) late so far)")
            }
        }
        // The roles are looked up (a lock) only if some handler filters by class.
        var deviceRoles: Set<HIDDeviceClass>??
        dispatching = true
        defer {
            dispatching = false
            if handlers.contains(where: { !$0.active }) { handlers.removeAll { !$0.active } }
            // The removal is the device's last event: its roles are no longer needed.
            if event.kind == .deviceRemoved { deviceTable.forget(event.device) }
        }
        let count = handlers.count
        var index = 0
        while index < count {
            defer { index += 1 }
            // One copy of the entry: each `handlers[index].field` copied the whole tuple.
            let handler = handlers[index]
            guard handler.active,
                matches(
                    handler.filter, event,
                    rolesOf: {
                        if deviceRoles == nil { deviceRoles = deviceTable.roles(event.device) }
                        return deviceRoles!
                    })
            else { continue }
            if Self.callHandler(handler.body, event) == .consumed { return }
        }
        finalStage?(event)
    }

    /// Stable name for profiles: time here is the application's.
    @inline(never)
    private static func callHandler(_ body: (HIDEvent) -> HIDHandlerResult, _ event: HIDEvent) -> HIDHandlerResult {
        body(event)
    }

    func matches(_ filter: Filter, _ event: HIDEvent, rolesOf: () -> Set<HIDDeviceClass>?) -> Bool {
        if let kinds = filter.kinds, !kinds.contains(event.kind) { return false }
        if let device = filter.device, device != event.device { return false }
        if let classes = filter.classes {
            guard let roles = rolesOf(), !roles.isDisjoint(with: classes) else { return false }
        }
        if let usage = filter.usage {
            guard case .key(let key) = event.payload, key.usage == usage else { return false }
        }
        return true
    }
}
