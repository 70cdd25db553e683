/// An event server's last stage: what its own handlers did not consume goes to the
/// clients (``HIDEventServer``'s routing), and each client's batch goes out when the queue
/// has been drained and when the loop is about to wait.
final class RoutingStage: HIDEventStage {
    private let handle: HIDEventServer.ServerHandle

    init(handle: HIDEventServer.ServerHandle) { self.handle = handle }

    func process(_ event: HIDEvent, emit: (HIDEvent) -> Void) { handle.server?.route(event) }

    func beforeWaiting(emit: (HIDEvent) -> Void) { handle.server?.flushAll() }

    func drained(emit: (HIDEvent) -> Void) { handle.server?.flushAll() }

    func remove(emit: (HIDEvent) -> Void) { handle.server?.flushAll() }
}

extension HIDEventSystem {
    /// Makes `stage` the last stage, after the handlers (an event server's routing to
    /// its clients); set before ``start()``, cleared by ``stop()``.
    func setRouting(_ stage: any HIDEventStage) {
        pipeline.routing = stage
        pipeline.stagesChanged()
    }
}
