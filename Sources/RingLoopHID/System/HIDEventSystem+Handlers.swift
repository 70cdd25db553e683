import RingLoop
import RingLoopEvdev
import Synchronization

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
        return pipeline.handlers.add(
            HandlerStage.Filter(kinds: kinds, classes: deviceClasses, device: device, usage: usage), body)
    }

    /// Removes a handler; it is not called again, even for the event being dispatched.
    public func removeHandler(_ token: HIDHandlerToken) {
        loop.preconditionOnLoopThread("HIDEventSystem.removeHandler")
        pipeline.handlers.remove(token)
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
}
